"""The cases of the HTML report, as its script reads them: JSON written a thousand results
at a time, in which a text that many results share (a system prompt, a question put to
every target, an error message) is sent once and named by its number.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from markupsafe import Markup

from bridge.prompt.build import api_messages
from bridge.prompt.messages import ChatMessage
from bridge.reports.campaign import CampaignResults, Outcome, is_cached, outcome
from bridge.results.result import EvaluatorResult, Result, Status

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

PAGE_ROWS = 100
"""Cases in the document at once; the others wait in the page's data."""

BATCH_ROWS = 1000
"""Results encoded per piece of the page written."""

SHARED_KEY_CHARS = 64
"""Longer shared texts are remembered by a digest, not whole, while the page is written."""

OUTCOMES = {o: number for number, o in enumerate(Outcome)}
STATUSES = {s: number for number, s in enumerate(Status)}
"""A row's outcome and status are numbers in these, which the page gets once."""


def page_data(campaign: CampaignResults) -> Iterator[Markup]:
    """`[meta, [texts, rows], [texts, rows], ...]`: each piece brings the shared texts its
    rows are the first to use, so the page's script has every text a row names."""
    meta = {
        "outcomes": [o.value for o in OUTCOMES],
        "statuses": [s.value for s in STATUSES],
        "page": PAGE_ROWS,
    }
    yield _json(meta, "[")
    shared = SharedTexts()
    rows = []
    for result in campaign.results():
        rows.append(_row(result, shared))
        if len(rows) == BATCH_ROWS:
            yield _json([shared.take_new(), rows], ",")
            rows = []
    if rows:
        yield _json([shared.take_new(), rows], ",")
    yield Markup("]")


def _json(value: object, before: str) -> Markup:
    """JSON that cannot end its <script> element: every `<` is written `\\u003c`."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Markup(before + text.replace("<", "\\u003c"))


class SharedTexts:
    """Numbers for texts that many results share, each text sent once."""

    def __init__(self) -> None:
        self.numbers: dict[str | bytes, int] = {}
        self.new: list[str] = []

    def __call__(self, text: str | None) -> int | None:
        if text is None:
            return None
        key: str | bytes = text
        if len(text) > SHARED_KEY_CHARS:
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        number = self.numbers.get(key)
        if number is None:
            number = self.numbers[key] = len(self.numbers)
            self.new.append(text)
        return number

    def take_new(self) -> list[str]:
        """The texts numbered since the last call, in the order of their numbers."""
        new, self.new = self.new, []
        return new


def _row(result: Result, shared: SharedTexts) -> list[Any]:
    """One case as the page's script reads it (see `R` and `D` there); shared texts are
    numbers."""
    agent = next((name for name in AGENT_ARTIFACTS if name in result.artifacts), None)
    sent = _agent_sent(result, agent) if agent else _api_sent(result)
    artifacts = {
        k: v
        for k, v in result.artifacts.items()
        if k not in AGENT_ARTIFACTS and k not in SHOWN_APART
    }
    usage = result.usage.model_dump(mode="json", exclude_none=True) if result.usage else None
    detail = [
        shared(sent.title),
        shared(sent.note),
        [[shared(m.role), shared(m.content), m.tool_calls, m.tool_call_id] for m in sent.messages],
        _tool_calls(result.artifacts.get("tool_calls")),
        shared(result.expected_outcome or None),
        shared(result.reference_answer or None),
        [_evaluator(e, shared) for e in result.evaluator_results],
        result.started_at.isoformat(),
        result.finished_at.isoformat(),
        shared(result.worker),
        result.attempt,
        usage or None,
        shared(agent),
        (result.artifacts.get(agent) or None) if agent else None,
        artifacts or None,
    ]
    return [
        result.case_id,
        result.repeat,
        shared(result.target),
        OUTCOMES[outcome(result)],
        STATUSES[result.status],
        result.score,
        result.duration_ms,
        shared(result.error.message) if result.error else None,
        [shared(m) for m in result.misses],
        int(is_cached(result)),
        result.answer,
        detail,
    ]


def _evaluator(e: EvaluatorResult, shared: SharedTexts) -> list[Any]:
    return [
        shared(e.name),
        shared(e.type),
        e.score,
        e.weight,
        [shared(h) for h in e.hits],
        [shared(m) for m in e.misses],
        e.error or e.reasoning or None,
    ]


class Shown(NamedTuple):
    """A turn as the report shows it: its text, and its tool calls apart."""

    role: str
    content: str
    tool_calls: list[list[Any]]
    tool_call_id: str | None


class Sent(NamedTuple):
    title: str
    note: str
    messages: list[Shown]


def _api_sent(result: Result) -> Sent:
    return Sent("Messages", API_NOTE, [_message(m) for m in api_messages(result.raw_request)])


def _agent_sent(result: Result, agent: str) -> Sent:
    """The task file the agent read, as its record keeps it (`request` for VS Code, `task`
    for the command-line agents); else, for a run that failed before the record was made,
    the case's question, which the task file holds."""
    record = result.artifacts.get(agent)
    request = (record.get("request") or record.get("task")) if isinstance(record, dict) else None
    if request:
        note = f"The task file the {agent} agent was given; the case's question is inside it."
        return Sent("Task file", note, [Shown("task file", str(request), [], None)])
    note = (
        f"{QUESTION_NOTE} The worker writes it into the {agent} agent's task.md; this run "
        "ended before the agent's record kept that file."
    )
    question = result.raw_request.question
    return Sent("Question", note, [Shown("question", question, [], None)])


def _message(message: ChatMessage) -> Shown:
    calls = _tool_calls([c.model_dump(mode="json") for c in message.tool_calls or []])
    return Shown(message.role, message.content, calls, message.tool_call_id)


def _tool_calls(calls: Any) -> list[list[Any]]:
    """`[name, id, arguments, output]` per call; results hold what the provider gave."""
    if not isinstance(calls, list):
        return []
    return [
        [str(call.get("name") or "?"), call.get("id"), call.get("arguments"), call.get("output")]
        for call in calls
        if isinstance(call, dict)
    ]
