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
from bridge.reports.campaign import CampaignResults, Outcome, outcome
from bridge.results.result import Result

AGENT_ARTIFACTS = ("vscode", "codex", "copilot", "claude", "cli")


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
        outcomes=[o.value for o in Outcome],
        targets=sorted(summary.targets.items()),
        cases=[_case(r) for r in campaign.results],
    )


def _case(result: Result) -> dict[str, Any]:
    agent = next((name for name in AGENT_ARTIFACTS if name in result.artifacts), None)
    if agent:
        transcript = [{"role": "task", "content": _agent_task(result, agent)}]
    else:
        transcript = [m.as_json() for m in api_messages(result.raw_request)]
    return {
        "result": result,
        "outcome": outcome(result).value,
        "transcript": transcript,
        "agent": agent,
        "usage": result.usage.model_dump(exclude_none=True) if result.usage else {},
        "artifacts": {k: v for k, v in result.artifacts.items() if k not in AGENT_ARTIFACTS},
        "agent_record": result.artifacts.get(agent) if agent else None,
    }


def _agent_task(result: Result, agent: str) -> str:
    record = result.artifacts.get(agent) or {}
    request = record.get("request") if isinstance(record, dict) else None
    return str(request) if request else result.raw_request.question
