"""One self-contained HTML file: no network, no assets, everything escaped by Jinja2.

The case table filters by target, outcome and status and by text, in the page; the
filter can also come from the address (`report.html#outcome=failed&target=gpt`), so a
link can point at what matters.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from jinja2 import Environment, StrictUndefined

from bridge.prompt.build import api_messages
from bridge.prompt.messages import ChatMessage
from bridge.reports.campaign import CampaignResults, Outcome, is_cached, outcome
from bridge.results.result import Result, Status

AGENT_ARTIFACTS = ("vscode", "codex", "copilot", "claude", "cli")
SHOWN_APART = ("tool_calls",)
"""Artifacts shown with the answer rather than in the artifacts' JSON."""

QUESTION_NOTE = (
    "The case's question: its input messages as one text, a single user turn as written, "
    "otherwise every message after its [Role]: marker."
)
API_NOTE = (
    "What an API target is sent for this case, system prompt first, "
    "before its vendor's wire format."
)


def html_report(campaign: CampaignResults) -> str:
    environment = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True)
    environment.filters["json"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)
    template = environment.from_string(
        resources.files("bridge.reports").joinpath("report.html.j2").read_text(encoding="utf-8")
    )
    summary = campaign.summary
    return template.render(
        campaign=campaign.campaign_id,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        summary=summary,
        statuses=sorted(summary.counts),
        # Every status, present or not: `#status=timeout` must select it and show no row.
        filter_statuses=[s.value for s in Status],
        outcomes=[o.value for o in Outcome],
        targets=sorted(summary.targets.items()),
        cases=[_case(r) for r in campaign.results],
    )


def _case(result: Result) -> dict[str, Any]:
    agent = next((name for name in AGENT_ARTIFACTS if name in result.artifacts), None)
    return {
        "result": result,
        "outcome": outcome(result).value,
        "sent": _agent_sent(result, agent) if agent else _api_sent(result),
        "agent": agent,
        "answer_tool_calls": _tool_calls(result.artifacts.get("tool_calls")),
        "cached": is_cached(result),
        "usage": result.usage.model_dump(exclude_none=True) if result.usage else {},
        "artifacts": {
            k: v
            for k, v in result.artifacts.items()
            if k not in AGENT_ARTIFACTS and k not in SHOWN_APART
        },
        "agent_record": result.artifacts.get(agent) if agent else None,
    }


def _api_sent(result: Result) -> dict[str, Any]:
    messages = [_message(m) for m in api_messages(result.raw_request)]
    return {"title": "Messages", "note": API_NOTE, "messages": messages}


def _agent_sent(result: Result, agent: str) -> dict[str, Any]:
    """The task file the agent read, as its record keeps it (`request` for VS Code, `task`
    for the command-line agents); else, for a run that failed before the record was made,
    the case's question, which the task file holds."""
    record = result.artifacts.get(agent)
    request = (record.get("request") or record.get("task")) if isinstance(record, dict) else None
    if request:
        note = f"The task file the {agent} agent was given; the case's question is inside it."
        return {"title": "Task file", "note": note, "messages": [_text("task file", request)]}
    note = (
        f"{QUESTION_NOTE} The worker writes it into the {agent} agent's task.md; this run "
        "ended before the agent's record kept that file."
    )
    question = result.raw_request.question
    return {"title": "Question", "note": note, "messages": [_text("question", question)]}


def _text(role: str, content: object) -> dict[str, Any]:
    return {"role": role, "content": str(content), "tool_calls": [], "tool_call_id": None}


def _message(message: ChatMessage) -> dict[str, Any]:
    """A turn with its text and its tool calls apart, so the template shows each alone."""
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": _tool_calls([c.model_dump(mode="json") for c in message.tool_calls or []]),
        "tool_call_id": message.tool_call_id,
    }


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    """`{name, id, arguments, output}` per call; results hold what the provider gave."""
    if not isinstance(calls, list):
        return []
    return [
        {
            "name": str(call.get("name") or "?"),
            "id": call.get("id"),
            "arguments": call.get("arguments"),
            "output": call.get("output"),
        }
        for call in calls
        if isinstance(call, dict)
    ]
