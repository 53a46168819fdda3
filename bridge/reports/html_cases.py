"""A result as the HTML report's script reads it: a row of the index, which the page holds
for every result, and the details of the row, which it reads only when the row is opened.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import api_messages
from evalrelay.bridge.reports.html_texts import SharedTexts
from evalrelay.bridge.reports.outcomes import Outcome, is_cached, outcome
from evalrelay.bridge.results.changes import WorkspaceChanges
from evalrelay.bridge.results.result import EvaluatorResult, Result, Status, TurnResult
from evalrelay.bridge.results.trajectory import Trajectory

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

CONVERSATION_NOTE = (
    "A conversation-mode case: each turn was sent with the target's earlier answers, and "
    "graded on its own (the turns among the evaluators)."
)

PAGE_ROWS = 100
"""Cases in the document at once; the others wait in the page's data."""

PREVIEW_CHARS = 60
"""The start of each answer that the page's index holds, for its text search: enough to
find an answer by its opening words, while the index stays a fraction of the page (the
whole answers would make it several times as big)."""

OUTCOMES = {o: number for number, o in enumerate(Outcome)}
STATUSES = {s: number for number, s in enumerate(Status)}
"""A row's outcome and status are numbers in these, which the page gets once."""


def index_row(result: Result, shared: SharedTexts) -> list[Any]:
    """What the table, the filters and the text search need of a result (see `R` in the
    page's script); shared texts are numbers."""
    preview = None if result.answer is None else result.answer[:PREVIEW_CHARS]
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
        preview,
        shared(result.dataset),
    ]


def detail_row(result: Result, shared: SharedTexts) -> list[Any]:
    """What an opened row shows (see `D` in the page's script), loaded only then; shared
    texts are numbers, of texts apart from the index's."""
    agent = next((name for name in AGENT_ARTIFACTS if name in result.artifacts), None)
    if agent:
        sent = _agent_sent(result, agent)
    else:
        sent = _conversation_sent(result) if result.turns is not None else _api_sent(result)
    artifacts = {
        k: v
        for k, v in result.artifacts.items()
        if k not in AGENT_ARTIFACTS and k not in SHOWN_APART
    }
    usage = result.usage.model_dump(mode="json", exclude_none=True) if result.usage else None
    agent_run = [_timeline(result.trajectory), _changes(result.workspace_changes)]
    return [
        shared(sent.title),
        shared(sent.note),
        [[shared(m.role), shared(m.content), m.tool_calls, m.tool_call_id] for m in sent.messages],
        _tool_calls(result.artifacts.get("tool_calls")),
        shared(result.expected_outcome or None),
        shared(result.reference_answer or None),
        [
            *(_turn(t, shared) for t in result.turns or []),
            *(_evaluator(e, shared) for e in result.evaluator_results),
        ],
        result.started_at.isoformat(),
        result.finished_at.isoformat(),
        shared(result.worker),
        result.attempt,
        usage or None,
        shared(agent),
        (result.artifacts.get(agent) or None) if agent else None,
        artifacts or None,
        result.answer,
        *(agent_run if any(agent_run) else []),  # other rows stay as short as they were
    ]


def _timeline(trajectory: Trajectory | None) -> list[Any] | None:
    """`[agent, steps, summary]`: each step `[kind, tool, arguments, output, ok, ms, paths]`."""
    if trajectory is None or not trajectory.steps:
        return None
    steps = [
        [s.kind, s.tool, s.arguments, s.output, s.ok, s.duration_ms, s.paths]
        for s in trajectory.steps
    ]
    figures = [f"{len(trajectory.steps)} steps"]
    if trajectory.steps_not_kept:
        figures.append(f"{trajectory.steps_not_kept} more not kept")
    if trajectory.model_calls is not None:
        figures.append(f"{trajectory.model_calls} model calls")
    if trajectory.duration_ms is not None:
        figures.append(f"{trajectory.duration_ms} ms")
    if trajectory.cost_usd is not None:
        figures.append(f"${trajectory.cost_usd:g}")
    if trajectory.usage:
        figures += [f"{count} {name.replace('_', ' ')}" for name, count in trajectory.usage.items()]
    return [trajectory.agent, steps, " · ".join(figures)]


def _changes(changes: WorkspaceChanges | None) -> list[Any] | None:
    """`[[[path, change], ...], diff]`, when the agent changed anything."""
    if changes is None or not changes.files:
        return None
    return [[[f.path, f.change] for f in changes.files], changes.diff]


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


def _turn(turn: TurnResult, shared: SharedTexts) -> list[Any]:
    """A conversation's turn among the evaluators: its verdict, by its own evaluators."""
    return [
        shared(f"turn {turn.turn}"),
        shared(f"turn, {turn.status}"),
        turn.score,
        1.0,
        [shared(h) for h in turn.hits],
        [shared(m) for m in turn.misses],
        turn.error or turn.reasoning or None,
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


def _conversation_sent(result: Result) -> Sent:
    """A conversation-mode case: what came before the turns, then each turn's message and
    the answer to it (the last one is also the answer shown below)."""
    messages = [_message(m) for m in api_messages(result.raw_request)]
    for turn in result.turns or []:
        messages.append(Shown("user", turn.input, [], None))
        if turn.answer is not None:
            messages.append(Shown("assistant", turn.answer, [], None))
    return Sent("Conversation", CONVERSATION_NOTE, messages)


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
