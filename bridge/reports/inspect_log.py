"""A campaign as Inspect AI eval logs (`evalrelay export --inspect`), for `inspect view`.

An Inspect log is one task run by one model, so each target gets a log of its own. A
result becomes a sample: its id the case id (`dataset/case` when the campaign has several
datasets), its epoch the repeat + 1, its input the messages the target was sent, its
output the answer. The result's score is the score `evalrelay` (the metadata says whether
it passed); each evaluator's score is a score of its own. A job that ended without an
answer to grade (infrastructure, limits, timeouts, cancelled) is an errored sample.

The model of a log is the target's name: two targets may run one model with different
settings, and the target is what evalrelay reports compare. The model a vendor said it
ran is each output's `model`, and all of them are in the log's metadata.

Results are read one at a time, and each sample goes to the file as it is made: a `.eval`
log is a zip with a member per sample, and the summaries and the `.json` log's samples
wait in a temporary file until the header, which counts them, is known.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any
from zipfile import ZIP_DEFLATED, ZipFile

from bridge.errors import EvalrelayError
from bridge.prompt.build import PromptRequest, api_messages
from bridge.reports import inspect_models as inspect
from bridge.reports.campaign import CampaignResults
from bridge.results.result import ErrorInfo, EvaluatorResult, Result, Status, Usage
from bridge.results.results_file import summary_path
from bridge.results.summary import TargetSummary

SUFFIXES = (".eval", ".json")
SCORE = "evalrelay"
"""The name of the result's own score, beside one score per evaluator."""


def check_suffix(path: Path) -> None:
    if path.suffix not in SUFFIXES:
        raise EvalrelayError(
            f"{path}: an Inspect log is a .eval file (a zip, best for big campaigns) "
            f"or a .json file; give one of those suffixes, not {path.suffix or 'none'!r}"
        )


def write_inspect_logs(campaign: CampaignResults, path: Path, target: str | None) -> list[Path]:
    """One log per target (or `target`'s alone) at `path`, or beside it as
    `<stem>-<target><suffix>` when there are several."""
    check_suffix(path)
    targets = _chosen_targets(campaign, target)
    facts = CampaignFacts.of(campaign)
    written = []
    for name, out in _log_paths(path, targets).items():
        out.parent.mkdir(parents=True, exist_ok=True)
        tally = LogTally()
        header = partial(facts.header, name, tally, campaign)
        write = _write_eval if out.suffix == ".eval" else _write_json
        write(out, (tally.add(r, s) for r, s in _samples(campaign, name, facts)), header)
        written.append(out)
    return written


def _samples(
    campaign: CampaignResults, target: str, facts: CampaignFacts
) -> Iterator[tuple[Result, inspect.EvalSample]]:
    """Each result of the target and its sample. Two results of one case and repeat (two
    eval files of one dataset name) would be one sample: the second is told by its job."""
    previous = None
    for result in campaign.results(target):
        sample_id = facts.sample_id(result)
        key, previous = previous, (sample_id, result.repeat)
        if key == previous:
            sample_id = f"{sample_id}@{result.job_id}"
        yield result, inspect_sample(result, sample_id, target)


def _chosen_targets(campaign: CampaignResults, target: str | None) -> list[str]:
    targets = sorted(campaign.tallies)
    if not targets:
        raise EvalrelayError(f"campaign {campaign.campaign_id} has no results to export")
    if target is None:
        return targets
    if target not in campaign.tallies:
        raise EvalrelayError(
            f"campaign {campaign.campaign_id} has no target {target!r}; "
            f"its targets: {', '.join(targets)}"
        )
    return [target]


def _log_paths(path: Path, targets: list[str]) -> dict[str, Path]:
    if len(targets) == 1:
        return {targets[0]: path}
    paths: dict[str, Path] = {}
    for target in targets:
        candidate, n = path.with_name(f"{path.stem}-{slug(target)}{path.suffix}"), 1
        while candidate in paths.values():
            n += 1
            candidate = path.with_name(f"{path.stem}-{slug(target)}-{n}{path.suffix}")
        paths[target] = candidate
    return paths


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "target"


def listing_hint(path: Path) -> str | None:
    """`inspect view` shows a `.json` log only when its name starts with a timestamp, as
    Inspect names its own logs (a `.eval` log whatever its name)."""
    if path.suffix == ".json" and not re.match(
        r"\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}", path.name
    ):
        return (
            f"note: inspect view shows {path.name} only under a name that starts with a "
            "timestamp, as 2026-01-31T12-00-00_evals.json; rename it, or export to .eval"
        )
    return None


@dataclass
class CampaignFacts:
    """What every log of the campaign shares, known before its first sample is written."""

    campaign_id: str
    datasets: list[str]
    complete: bool
    """Every job has a result, as far as the campaign's summary says."""

    @classmethod
    def of(cls, campaign: CampaignResults) -> CampaignFacts:
        datasets = sorted({head.dataset for head in campaign.heads()})
        return cls(campaign.campaign_id, datasets, _complete(campaign))

    def sample_id(self, result: Result) -> str:
        return f"{result.dataset}/{result.case_id}" if len(self.datasets) > 1 else result.case_id

    @property
    def task(self) -> str:
        return self.datasets[0] if len(self.datasets) == 1 else self.campaign_id

    def header(
        self, target: str, tally: LogTally, campaign: CampaignResults
    ) -> inspect.EvalLogHeader:
        scored = [_result_score(campaign.summary.targets[target])]
        scored += [t.eval_score(name) for name, t in tally.scorers.items()]
        spec = inspect.EvalSpec(
            eval_id=stable_id("eval", self.campaign_id, target),
            run_id=stable_id("run", self.campaign_id),
            created=_iso(tally.started),
            task=self.task,
            task_id=stable_id("task", self.campaign_id, self.task),
            dataset=inspect.EvalDataset(
                name=", ".join(self.datasets),
                samples=len(tally.sample_ids),
                sample_ids=tally.sample_ids,
            ),
            model=target,
            config=inspect.EvalConfig(epochs=tally.epochs, fail_on_error=False),
            packages={"evalrelay": version("evalrelay")},
            metadata={
                "evalrelay_campaign": self.campaign_id,
                "evalrelay_target": target,
                "datasets": self.datasets,
                "reported_models": sorted(tally.models),
            },
            scorers=[_scorer(SCORE, ("accuracy", "mean"))]
            + [_scorer(name, ("mean",)) for name in tally.scorers],
        )
        return inspect.EvalLogHeader(
            status=self.status(tally),
            eval=spec,
            plan=inspect.EvalPlan(
                steps=[inspect.EvalPlanStep(solver="evalrelay", params={"target": target})]
            ),
            results=inspect.EvalResults(
                total_samples=tally.samples,
                completed_samples=tally.samples - tally.errors,
                scores=[s for s in scored if s is not None],
            ),
            stats=inspect.EvalStats(
                started_at=_iso(tally.started),
                completed_at=_iso(tally.finished),
                model_usage={target: tally.usage} if tally.usage else {},
            ),
        )

    def status(self, tally: LogTally) -> inspect.EvalStatus:
        if tally.cancelled:
            return "cancelled"
        return "success" if self.complete else "started"


def _complete(campaign: CampaignResults) -> bool:
    """A campaign whose summary expects more results than its file holds is unfinished;
    one without a summary (a file written by hand) is taken as it is."""
    try:
        summary = json.loads(summary_path(campaign.path.parent, campaign.campaign_id).read_text())
    except (OSError, ValueError):
        return True
    expected = summary.get("expected") if isinstance(summary, dict) else None
    return not isinstance(expected, int) or len(campaign) >= expected


def _scorer(name: str, metrics: tuple[str, ...]) -> inspect.EvalScorer:
    return inspect.EvalScorer(
        name=name, metrics=[inspect.EvalMetricDefinition(name=m) for m in metrics]
    )


def _result_score(summary: TargetSummary) -> inspect.EvalScore | None:
    """`accuracy` is the pass rate (a result passes at its case's threshold), `mean` the
    mean score: the two numbers evalrelay's own reports lead with, from its summary."""
    if summary.pass_rate is None or summary.mean_score is None:
        return None
    return inspect.EvalScore(
        name=SCORE,
        scorer=SCORE,
        scored_samples=summary.scored,
        unscored_samples=summary.results - summary.scored,
        metrics={
            "accuracy": inspect.EvalMetric(name="accuracy", value=summary.pass_rate),
            "mean": inspect.EvalMetric(name="mean", value=summary.mean_score),
        },
    )


@dataclass
class ScorerTally:
    scored: int = 0
    unscored: int = 0
    total: float = 0.0

    def eval_score(self, name: str) -> inspect.EvalScore | None:
        if not self.scored:
            return None
        mean = inspect.EvalMetric(name="mean", value=self.total / self.scored)
        return inspect.EvalScore(
            name=name,
            scorer=name,
            scored_samples=self.scored,
            unscored_samples=self.unscored,
            metrics={"mean": mean},
        )


@dataclass
class LogTally:
    """What a log's header says of its samples, added up as they are written."""

    samples: int = 0
    errors: int = 0
    cancelled: int = 0
    epochs: int = 1
    sample_ids: list[str] = field(default_factory=list)
    """Each once: a sample's epochs come one after the other in report order."""
    started: datetime | None = None
    finished: datetime | None = None
    usage: inspect.ModelUsage | None = None
    models: set[str] = field(default_factory=set)
    scorers: dict[str, ScorerTally] = field(default_factory=dict)

    def add(self, result: Result, sample: inspect.EvalSample) -> inspect.EvalSample:
        """Counts the sample in, and gives it back to be written."""
        self.samples += 1
        self.errors += sample.error is not None
        self.cancelled += result.status is Status.CANCELLED
        self.epochs = max(self.epochs, sample.epoch)
        if not self.sample_ids or self.sample_ids[-1] != sample.id:
            self.sample_ids.append(sample.id)
        if self.started is None or result.started_at < self.started:
            self.started = result.started_at
        if self.finished is None or result.finished_at > self.finished:
            self.finished = result.finished_at
        if sample.output.usage is not None:
            self.usage = (
                sample.output.usage if self.usage is None else self.usage.plus(sample.output.usage)
            )
        if sample.output.model:
            self.models.add(sample.output.model)
        for name, score in (sample.scores or {}).items():
            if name != SCORE:
                tally = self.scorers.setdefault(name, ScorerTally())
                if math.isnan(score.value):
                    tally.unscored += 1
                else:
                    tally.scored += 1
                    tally.total += score.value
        return sample


def inspect_sample(result: Result, sample_id: str, model: str) -> inspect.EvalSample:
    uuid = stable_id("sample", result.campaign_id, result.job_id, str(result.attempt))
    inputs = input_messages(result.raw_request, uuid)
    output = model_output(result, model, f"{uuid}-output")
    graded = scores(result)
    error = None if result.status.is_scored else inspect.EvalError.of(error_text(result))
    seconds = result.duration_ms / 1000
    return inspect.EvalSample(
        id=sample_id,
        epoch=result.repeat + 1,
        input=inputs,
        target=result.reference_answer or result.expected_outcome or "",
        messages=[*inputs, *(choice.message for choice in output.choices)],
        output=output,
        scores=graded or None,
        metadata=sample_metadata(result),
        events=events(result, uuid, inputs, output, graded, error),
        model_usage={model: output.usage} if output.usage else {},
        started_at=_iso(result.started_at),
        completed_at=_iso(result.finished_at),
        total_time=seconds,
        working_time=seconds,
        uuid=uuid,
        error=error,
        error_retries=[
            inspect.EvalError.of(_attempt_error(a.error, a.status)) for a in result.attempts
        ]
        or None,
    )


def events(
    result: Result,
    uuid: str,
    inputs: list[inspect.ChatMessage],
    output: inspect.ModelOutput,
    graded: dict[str, inspect.Score],
    error: inspect.EvalError | None,
) -> list[inspect.Event]:
    """The transcript the viewer opens a sample on: the call to the target, then each
    score, or the error that ended the job. Without them that tab is empty."""
    began, ended = _iso(result.started_at), _iso(result.finished_at)
    seconds = result.duration_ms / 1000
    messages = [*inputs, *(choice.message for choice in output.choices)]
    tools = any(isinstance(m, inspect.AssistantMessage) and m.tool_calls for m in messages)
    happened: list[inspect.Event] = [
        inspect.ModelEvent(
            timestamp=began,
            model=output.model,
            input=inputs,
            tool_choice="auto" if tools else "none",
            output=output,
            error=output.error,
            completed=ended,
            working_time=seconds,
        )
    ]
    happened += [
        inspect.ScoreEvent(timestamp=ended, working_start=seconds, score=score, scorer=name)
        for name, score in graded.items()
    ]
    if error is not None:
        happened.append(inspect.ErrorEvent(timestamp=ended, working_start=seconds, error=error))
    for n, event in enumerate(happened):
        event.uuid = f"{uuid}-event-{n}"
    return happened


def input_messages(request: PromptRequest, uuid: str) -> list[inspect.ChatMessage]:
    """The messages the target was sent; a tool message names the function whose call it
    answers, as Inspect's do."""
    functions: dict[str, str] = {}
    messages: list[inspect.ChatMessage] = []
    for n, message in enumerate(api_messages(request)):
        common: dict[str, Any] = {
            "id": f"{uuid}-{n}",
            "content": message.content,
            "source": "input",
        }
        if message.role == "system":
            messages.append(inspect.SystemMessage(**common))
        elif message.role == "user":
            messages.append(inspect.UserMessage(**common))
        elif message.role == "assistant":
            calls = [
                _tool_call(c.id, c.name, c.arguments, f"{uuid}-{n}-{k}")
                for k, c in enumerate(message.tool_calls or [])
            ]
            functions.update((c.id, c.function) for c in calls)
            messages.append(inspect.AssistantMessage(**common, tool_calls=calls or None))
        else:
            call = message.tool_call_id
            messages.append(
                inspect.ToolMessage(**common, tool_call_id=call, function=functions.get(call or ""))
            )
    return messages


def _tool_call(call_id: Any, name: Any, arguments: Any, fallback_id: str) -> inspect.ToolCall:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {"arguments": arguments}
    if not isinstance(arguments, dict):
        arguments = {"arguments": arguments}
    return inspect.ToolCall(id=str(call_id or fallback_id), function=str(name), arguments=arguments)


def model_output(result: Result, model: str, message_id: str) -> inspect.ModelOutput:
    reported = result.artifacts.get("model")
    reported = reported if isinstance(reported, str) and reported else model
    calls = [
        _tool_call(c.get("id"), c.get("name"), c.get("arguments"), f"{message_id}-{k}")
        for k, c in enumerate(result.artifacts.get("tool_calls") or [])
        if isinstance(c, dict)
    ]
    choices = []
    if result.answer is not None or calls:
        message = inspect.AssistantMessage(
            id=message_id,
            content=result.answer or "",
            source="generate",
            tool_calls=calls or None,
            model=reported,
        )
        choices = [
            inspect.ChatCompletionChoice(message=message, stop_reason=stop_reason(result, calls))
        ]
    latency = result.artifacts.get("latency_ms")
    return inspect.ModelOutput(
        model=reported,
        choices=choices,
        completion=result.answer or "",
        usage=model_usage(result.usage),
        time=latency / 1000 if isinstance(latency, int | float) else None,
        error=error_text(result) if result.status is Status.MODEL_FAILURE else None,
    )


STOP_REASONS: dict[str, inspect.StopReason] = {
    **dict.fromkeys(("stop", "end_turn", "stop_sequence", "completed", "finish"), "stop"),
    **dict.fromkeys(("length", "max_tokens", "max_output_tokens", "incomplete"), "max_tokens"),
    **dict.fromkeys(("tool_calls", "tool_use", "function_call"), "tool_calls"),
    **dict.fromkeys(("content_filter", "safety", "refusal", "recitation"), "content_filter"),
}
"""The vendors' finish reasons (OpenAI, Anthropic, Gemini) as Inspect names them."""


def stop_reason(result: Result, calls: list[inspect.ToolCall]) -> inspect.StopReason:
    given = result.artifacts.get("finish_reason")
    if isinstance(given, str) and given.lower() in STOP_REASONS:
        return STOP_REASONS[given.lower()]
    if calls:
        return "tool_calls"
    return "stop" if result.status is Status.OK else "unknown"


USAGE_NAMES = {
    "input_tokens_cache_read": (
        "input_tokens_cache_read",
        "cache_read_input_tokens",
        "cached_input_tokens",
    ),
    "input_tokens_cache_write": ("input_tokens_cache_write", "cache_creation_input_tokens"),
    "reasoning_tokens": ("reasoning_tokens", "reasoning_output_tokens"),
    "total_cost": ("total_cost", "cost_usd"),
}
"""Inspect's usage fields, and the names providers report them by in a result's usage."""


def model_usage(usage: Usage | None) -> inspect.ModelUsage | None:
    if usage is None:
        return None
    extra = usage.model_extra or {}
    found = {
        field: next((extra[n] for n in names if isinstance(extra.get(n), int | float)), None)
        for field, names in USAGE_NAMES.items()
    }
    given, taken = usage.input_tokens or 0, usage.output_tokens or 0
    total = extra.get("total_tokens")
    return inspect.ModelUsage(
        input_tokens=given,
        output_tokens=taken,
        total_tokens=total if isinstance(total, int) else given + taken,
        **found,
    )


def scores(result: Result) -> dict[str, inspect.Score]:
    """The result's score (when it was graded and is the model's doing), and each
    evaluator's; an evaluator that could not judge gives Inspect's unscored NaN."""
    found: dict[str, inspect.Score] = {}
    if result.status.is_scored and result.score is not None:
        found[SCORE] = inspect.Score(
            value=result.score,
            answer=result.answer,
            explanation=result.reasoning,
            metadata={"passed": result.passed, "hits": result.hits, "misses": result.misses},
        )
    for name, evaluator in zip(
        score_names(result.evaluator_results), result.evaluator_results, strict=True
    ):
        found[name] = evaluator_score(evaluator)
    return found


def score_names(evaluators: list[EvaluatorResult]) -> list[str]:
    """Each evaluator's name, made unique (`contains`, `contains-2`) and never `evalrelay`."""
    names: list[str] = []
    for evaluator in evaluators:
        name, n = evaluator.name, 1
        while name == SCORE or name in names:
            n += 1
            name = f"{evaluator.name}-{n}"
        names.append(name)
    return names


def evaluator_score(evaluator: EvaluatorResult) -> inspect.Score:
    metadata = {
        "type": evaluator.type,
        "weight": evaluator.weight,
        "hits": evaluator.hits,
        "misses": evaluator.misses,
        **({"details": evaluator.details} if evaluator.details else {}),
        **({"error": evaluator.error} if evaluator.error else {}),
    }
    if evaluator.score is None:
        return inspect.Score(
            value=float("nan"),
            reason="scoring_failed",
            explanation=evaluator.error or evaluator.reasoning,
            metadata=metadata,
        )
    return inspect.Score(value=evaluator.score, explanation=evaluator.reasoning, metadata=metadata)


RUN_FACTS = ("dataset", "job_id", "status", "attempt", "worker", "conversation_id", "passed")


def sample_metadata(result: Result) -> dict[str, Any]:
    """The case's metadata, as Inspect keeps a sample's, and how the job ran; a case key
    that is also one of those is kept as `case_<key>`."""
    run: dict[str, Any] = {name: getattr(result, name) for name in RUN_FACTS}
    run["status"] = result.status.value
    if result.reference_answer and result.expected_outcome:
        run["expected_outcome"] = result.expected_outcome
    if result.artifacts:
        run["artifacts"] = result.artifacts
    case = {(f"case_{k}" if k in run else k): v for k, v in result.metadata.items()}
    return {**case, **{k: v for k, v in run.items() if v is not None}}


def error_text(result: Result) -> str:
    return _attempt_error(result.error, result.status)


def _attempt_error(error: ErrorInfo | None, status: Status) -> str:
    return f"{error.kind}: {error.message}" if error is not None else status.value


def stable_id(*parts: str) -> str:
    """A 22-character id like Inspect's (shortuuid's alphabet), the same at every export."""
    digest = int.from_bytes(hashlib.blake2s("\0".join(parts).encode(), digest_size=16).digest())
    text = ""
    for _ in range(22):
        digest, digit = divmod(digest, len(ALPHABET))
        text += ALPHABET[digit]
    return text


ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else ""


Samples = Iterator[inspect.EvalSample]
Header = Callable[[], inspect.EvalLogHeader]


def _write_eval(path: Path, samples: Samples, header: Header) -> None:
    """Inspect's `.eval` zip: a member per sample, `summaries.json`, `header.json` and the
    journal's `start.json` (what a reader of an unfinished log falls back on)."""
    with _replaced(path) as handle, ZipFile(handle, "w", ZIP_DEFLATED) as archive:
        with tempfile.TemporaryFile() as summaries:
            summaries.write(b"[")
            for n, sample in enumerate(samples):
                archive.writestr(f"samples/{sample.id}_epoch_{sample.epoch}.json", sample.as_json())
                summaries.write((b"," if n else b"") + sample.summary().as_json())
            summaries.write(b"]")
            large = summaries.tell() >= 2**31
            summaries.seek(0)
            with archive.open("summaries.json", "w", force_zip64=large) as member:
                shutil.copyfileobj(summaries, member)
        done = header()
        archive.writestr(
            "_journal/start.json", inspect.LogStart(eval=done.eval, plan=done.plan).as_json()
        )
        archive.writestr("header.json", done.as_json())


def _write_json(path: Path, samples: Samples, header: Header) -> None:
    """Inspect's `.json` log: the header's fields, then `samples`, which its streaming
    header reader stops at."""
    with tempfile.TemporaryFile() as body:
        for n, sample in enumerate(samples):
            body.write((b"," if n else b"") + sample.as_json())
        head = header().as_json()
        body.seek(0)
        with _replaced(path) as handle:
            handle.write(head[:-1] + b',"samples":[')
            shutil.copyfileobj(body, handle)
            handle.write(b"]}")


@contextmanager
def _replaced(path: Path) -> Iterator[IO[bytes]]:
    """A file that replaces `path` whole when the block ends, and is gone if it fails;
    made readable as any new file is (`mkstemp` would make it 0600)."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w+b") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
