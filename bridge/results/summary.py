"""`summary.json`: a campaign's counts by status, mean score and pass rate per target, timings."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from evalrelay.bridge.results.result import Cost, ErrorInfo, Status, Usage
from evalrelay.bridge.results.statistics import (
    Answers,
    CampaignStatistics,
    Observations,
    Observed,
    campaign_statistics,
)


class Counted(Observed, Protocol):
    """What a summary reads of a result: a whole `Result`, or the lighter reading of its
    line that reports make of 100,000 of them (`bridge.reports.lines.ResultHead`); beyond
    what the statistics read (`Observed`), its misses, times and error."""

    @property
    def misses(self) -> list[str]: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime: ...
    @property
    def duration_ms(self) -> int: ...
    @property
    def error(self) -> ErrorInfo | None: ...
    @property
    def usage(self) -> Usage | None: ...
    @property
    def cost(self) -> Cost | None: ...
    @property
    def judge_cost(self) -> Cost | None: ...


class TargetSummary(BaseModel):
    results: int = 0
    scored: int = 0
    passed: int = 0
    score_total: float = 0.0
    counts: dict[str, int] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float = 0.0
    """The target's answers only: judge calls are not in it."""
    unpriced: int = 0
    """Answers whose cost is unknown (no vendor figure, model not in the price database)."""

    def add_spend(self, usage: Usage | None, cost: Cost | None) -> None:
        if usage is not None:
            self.input_tokens += usage.input_tokens or 0
            self.output_tokens += usage.output_tokens or 0
            self.cached_input_tokens += usage.cached_input_tokens or 0
        if cost is not None:
            self.cost_usd += cost.usd
        elif usage is not None:
            self.unpriced += 1

    @property
    def passed_per_dollar(self) -> float | None:
        """Passed cases bought by each dollar: the cheaper of two equal targets wins."""
        return self.passed / self.cost_usd if self.cost_usd else None

    @property
    def mean_score(self) -> float | None:
        return self.score_total / self.scored if self.scored else None

    @property
    def pass_rate(self) -> float | None:
        """Passed cases among the graded ones."""
        return self.passed / self.scored if self.scored else None


MAX_LISTED_FAILURES = 50


class FailedCase(BaseModel):
    """One line of the failure list `run` prints: which case, and why, without the JSONL."""

    case_id: str
    target: str
    repeat: int = 0
    status: str
    reason: str


class CampaignSummary(BaseModel):
    model_config = ConfigDict(validate_assignment=False)

    campaign_id: str
    expected: int | None = None
    results: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    targets: dict[str, TargetSummary] = Field(default_factory=dict)
    first_started_at: datetime | None = None
    last_finished_at: datetime | None = None
    total_duration_ms: int = 0
    max_duration_ms: int = 0
    failed: int = 0
    """Jobs that did not end as a passed (or ungraded ok) case."""
    failures: list[FailedCase] = Field(default_factory=list)
    """The first `MAX_LISTED_FAILURES` of them."""
    judge_cost_usd: float = 0.0
    """What the LLM judges' calls cost, apart from the targets' `cost_usd`."""
    paid_again: dict[str, int] = Field(default_factory=dict)
    """Target calls past one per job, by why (`bridge.results.paid`), as Redis counted them
    when the campaign's last line was written; `status` shows any counted after."""
    _observations: Observations | None = PrivateAttr(default_factory=Observations)
    """Each graded result's score and pass, by target and case, for `statistics()`; None
    in a summary that only counts (`counting`)."""

    @classmethod
    def counting(cls, campaign_id: str, expected: int | None = None) -> CampaignSummary:
        """A summary that keeps no answers: counts, means and pass rates, no statistics.
        What a service's collector keeps of a campaign running for days: the statistics'
        answers grow with every graded result, and their libraries weigh a hundred MB."""
        summary = cls(campaign_id=campaign_id, expected=expected)
        summary._observations = None
        return summary

    @property
    def has_statistics(self) -> bool:
        return self._observations is not None

    def add(self, result: Counted) -> None:
        self._count(result)
        if self._observations is not None:
            self._observations.observe(result)
        if result.status is not Status.OK or result.passed is False:
            self.failed += 1
            if len(self.failures) < MAX_LISTED_FAILURES:
                self.failures.append(_failure(result))

    def _count(self, result: Counted) -> None:
        self.results += 1
        self.counts[result.status.value] = self.counts.get(result.status.value, 0) + 1
        target = self.targets.get(result.target)
        if target is None:
            target = self.targets[result.target] = TargetSummary()
        target.results += 1
        target.counts[result.status.value] = target.counts.get(result.status.value, 0) + 1
        target.add_spend(result.usage, result.cost)
        if result.judge_cost is not None:
            self.judge_cost_usd += result.judge_cost.usd
        if result.score is not None and Status(result.status).is_scored:
            target.scored += 1
            target.score_total += result.score
            target.passed += bool(result.passed)
        if self.first_started_at is None or result.started_at < self.first_started_at:
            self.first_started_at = result.started_at
        if self.last_finished_at is None or result.finished_at > self.last_finished_at:
            self.last_finished_at = result.finished_at
        self.total_duration_ms += result.duration_ms
        if result.duration_ms > self.max_duration_ms:
            self.max_duration_ms = result.duration_ms

    def cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.targets.values())

    def mean_score(self) -> float | None:
        scored = sum(t.scored for t in self.targets.values())
        return sum(t.score_total for t in self.targets.values()) / scored if scored else None

    def meets(self, min_score: float) -> bool:
        mean = self.mean_score()
        return mean is not None and mean >= min_score

    @property
    def scored(self) -> int:
        return sum(t.scored for t in self.targets.values())

    @property
    def unanswered(self) -> int:
        """Jobs that ended without an answer to grade (infra_error, timeout, rate limits,
        a refused request): the run failed them, not the model."""
        return sum(n for status, n in self.counts.items() if not Status(status).is_scored)

    def graded_answers(self, target: str) -> Answers:
        """`target`'s graded answers, as arrays (`statistics.Answers`)."""
        return self._kept().answers(target)

    def statistics(self) -> CampaignStatistics:
        """Each target's intervals, and each pair of targets set side by side."""
        return campaign_statistics(self._kept())

    def _kept(self) -> Observations:
        if self._observations is None:
            raise ValueError(f"the summary of campaign {self.campaign_id} keeps no answers")
        return self._observations

    def as_json(self) -> dict[str, object]:
        data = self.model_dump(mode="json")
        data["mean_duration_ms"] = self.total_duration_ms // self.results if self.results else None
        for name, target in self.targets.items():
            data["targets"][name]["mean_score"] = target.mean_score
            data["targets"][name]["pass_rate"] = target.pass_rate
            data["targets"][name]["passed_per_dollar"] = target.passed_per_dollar
        data["cost_usd"] = self.cost_usd()
        if self.has_statistics:  # a counting summary's file has none until it is completed
            data["statistics"] = self.statistics().model_dump(mode="json")
        return data


def _failure(result: Counted) -> FailedCase:
    return FailedCase(
        case_id=result.case_id,
        target=result.target,
        repeat=result.repeat,
        status=result.status.value,
        reason=failure_reason(result),
    )


class Judged(Protocol):
    """What saying why a result failed reads of it."""

    @property
    def status(self) -> Status: ...
    @property
    def score(self) -> float | None: ...
    @property
    def passed(self) -> bool | None: ...
    @property
    def misses(self) -> list[str]: ...
    @property
    def error(self) -> ErrorInfo | None: ...


REASON_CHARS = 200


def failure_reason(result: Judged) -> str:
    """One line, as `run`'s list of failed cases and `serve`'s say it: the error, else the
    score and the first misses."""
    if result.error is not None:
        reason = f"{result.error.kind}: {result.error.message}"
    elif result.passed is False:
        score = f"score {result.score:.2f}" if result.score is not None else "not passed"
        reason = f"{score}; " + ("; ".join(result.misses[:2]) or "no miss reported")
    else:
        reason = result.status.value
    first_line = reason.strip().splitlines()[0] if reason.strip() else reason
    return first_line[:REASON_CHARS]


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one. The temporary file is
    opened as any new file is (0666 less the umask, 0644 as a rule): `mkstemp`'s 0600
    would hide reports and results from the colleague or web server they are meant for."""
    write_chunks_atomically(path, (text,))


def write_chunks_atomically(path: Path, chunks: Iterable[str]) -> None:
    """`write_atomically` of a text made piece by piece, never held whole (a report of
    100,000 results)."""
    with replaced_whole(path) as handle:
        for chunk in chunks:
            handle.write(chunk.encode("utf-8"))


@contextmanager
def replaced_whole(path: Path) -> Iterator[IO[bytes]]:
    """A file that takes `path`'s place whole when the block ends, and is gone if it
    fails; made as any new file is (see `write_atomically`)."""
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
