"""evalrelay from Python: `load` eval files, `run` them as one campaign, `compare` two runs.

These do what `evalrelay validate`, `run` and `compare` do, and return what those print:

    import evalrelay

    files = evalrelay.load("evals")                  # parsed and checked; nothing is sent
    before = evalrelay.run("evals", targets=["gpt-4o-mini"], name="before")
    after = evalrelay.run("evals", targets=["gpt-4.1-mini"], name="after")
    print(after.summary.mean_score(), after.summary.failed, "failed")
    change = evalrelay.compare(before, after)
    print(change.verdict)
    for case in change.regressed:
        print(case.case_id, case.before, "->", case.after)

With no `EVALRELAY_REDIS_URL`, `run` starts a private Redis and a worker in a child
process, as `evalrelay run` does; with one, the cluster's workers run the jobs and this
process collects their results. Each result line is in `Run.results_file` (one JSON object
per job, docs/results.md), and `Run.results()` reads them back.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalrelay.bridge.evalfile.cases import LoadedEvalFile, load_eval_files
from evalrelay.bridge.evalfile.selection import select_cases
from evalrelay.bridge.planning.run_request import RunRequest
from evalrelay.bridge.queue.campaigns import CampaignInfo, Progress
from evalrelay.bridge.queue.following import Unserved
from evalrelay.bridge.queue.steering import Paused
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.compare import SCORE_CHANGE, CaseChange, Change, case_changes
from evalrelay.bridge.reports.compare_statistics import comparison_statistics
from evalrelay.bridge.reports.verdict import ChangeCounts, verdict
from evalrelay.bridge.results.result import Result
from evalrelay.bridge.results.statistics import CampaignStatistics
from evalrelay.bridge.results.summary import CampaignSummary
from evalrelay.bridge.running import (
    plan_run,
    running,
    write_promptfoo_results,
    write_reports,
)

log = logging.getLogger("evalrelay")

PathLike = str | Path


def load(
    paths: PathLike | Sequence[PathLike],
    *,
    cases: Sequence[str] = (),
    tags: Sequence[str] = (),
) -> list[LoadedEvalFile]:
    """Load and check eval files, or folders of them, as `evalrelay validate` does.

    `cases` (globs of case ids) and `tags` keep only the cases that match, as `run`'s
    `--case` and `--tag` do. Each loaded file has its `path` and its `cases`; a file that
    is not valid raises `evalrelay.bridge.errors.InvalidFileError`, which names the file,
    line, column and case.
    """
    return select_cases(load_eval_files(_paths(paths)), list(cases), list(tags))


@dataclass(frozen=True)
class Run:
    """A campaign that `run` followed to its last line."""

    campaign_id: str
    results_file: Path
    """One JSON line per job (docs/results.md)."""
    summary: CampaignSummary
    """Counts by status and target, mean scores, the failed cases."""
    reports: list[Path]
    """The HTML report beside the results, and any promptfoo `outputPath`."""

    @property
    def statistics(self) -> CampaignStatistics:
        """Pass rates and mean scores with 95% intervals; paired tests between targets."""
        return self.summary.statistics()

    def results(self) -> Iterator[Result]:
        """Every result, by target, dataset, case id and repeat."""
        return CampaignResults.load(self.results_file).results()


def run(
    paths: PathLike | Sequence[PathLike],
    *,
    targets: Sequence[str] = (),
    cases: Sequence[str] = (),
    tags: Sequence[str] = (),
    name: str | None = None,
    repeats: int | None = None,
    out: PathLike | None = None,
    concurrency: int = 16,
    budget_usd: float | None = None,
    cache_ttl_seconds: int | None = None,
) -> Run:
    """Run eval files, or folders of them, as one campaign, and wait for every job's line.

    The arguments are `evalrelay run`'s options: `targets` runs every case on each of them
    (none: each case's own target); `cases` and `tags` select; `repeats` runs each case
    that many times; `out` is the results folder (default: the project's `results_dir`);
    `concurrency` is the in-process worker's jobs at once; `budget_usd` pauses the campaign
    once its answers cost that much; `cache_ttl_seconds` answers repeated API requests from
    Redis's response cache. Progress goes to the `evalrelay` logger.

    A KeyboardInterrupt cancels the campaign (its finished lines stay) and is raised again.
    """
    planned = plan_run(
        RunRequest(
            paths=_paths(paths),
            targets=list(targets),
            cases=list(cases),
            tags=list(tags),
            name=name,
            repeats=repeats,
            out=Path(out) if out is not None else None,
            concurrency=concurrency,
            budget_usd=budget_usd,
            cache_ttl_seconds=cache_ttl_seconds,
        )
    )
    with running(planned, lambda info: contextlib.nullcontext(LoggedProgress(info))) as finished:
        reports = write_reports(finished) + write_promptfoo_results(finished, planned.files)
    return Run(finished.info.campaign_id, finished.results_file, finished.summary, reports)


@dataclass(frozen=True)
class Comparison:
    """What changed from one run to another, as `evalrelay compare` prints it."""

    before: str
    after: str
    changes: list[CaseChange]
    """Every case on either side, unchanged ones included."""
    statistics: CampaignStatistics
    """Each target's paired difference of mean score, its 95% interval and p-values."""
    verdict: str
    """One line: the regressions and why, or that there are none."""

    @property
    def regressed(self) -> list[CaseChange]:
        """Cases that passed before and do not now, or whose score fell past the tolerance."""
        return [c for c in self.changes if c.change is Change.REGRESSED]


def compare(
    before: Run | PathLike,
    after: Run | PathLike,
    *,
    targets: tuple[str, str] | None = None,
    tolerance: float = SCORE_CHANGE,
) -> Comparison:
    """Compare two runs (a `Run`, or the path of its results file) case by case.

    Cases are matched by target, dataset, case id and repeat; `targets` (baseline,
    candidate) matches the baseline's results in `before` with the candidate's in `after`
    instead (the same run on both sides compares two of its targets). A case regressed
    when it passed before and does not after, or when its score fell by more than
    `tolerance`.
    """
    old, new = CampaignResults.load(_results(before)), CampaignResults.load(_results(after))
    changes = list(case_changes(old, new, tolerance, targets=targets))
    return Comparison(
        before=old.campaign_id,
        after=new.campaign_id,
        changes=changes,
        statistics=comparison_statistics(old, new, targets),
        verdict=verdict(ChangeCounts.of(changes), tolerance),
    )


class LoggedProgress:
    """What `run` shows of a campaign it follows: its progress on the `evalrelay` logger."""

    def __init__(self, info: CampaignInfo) -> None:
        self.info = info

    def outage(self, text: str) -> None:
        log.warning("%s: %s", self.info.campaign_id, text)

    def round(self, state: Progress, rate: float, held: Paused | None) -> None:
        log.debug("%s: %s of %s results", self.info.campaign_id, state.done, self.info.total)

    def pause_changed(self, held: Paused | None) -> None:
        log.info("%s: %s", self.info.campaign_id, "paused" if held else "goes on")

    def rebuilt(self, kept: int, sent: Sequence[object] | None) -> None:
        log.warning("%s: rebuilt after Redis lost it, %d results kept", self.info.campaign_id, kept)

    def unserved(self, missing: Unserved) -> None:
        log.warning("%s: no live worker serves %s", self.info.campaign_id, missing.queues)


def _paths(paths: PathLike | Sequence[PathLike]) -> list[Path]:
    if isinstance(paths, str | Path):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _results(side: Run | PathLike) -> Path:
    return side.results_file if isinstance(side, Run) else Path(side)
