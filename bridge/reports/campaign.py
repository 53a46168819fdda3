"""A campaign's results as the reports see them: one outcome per result, stats per target.

A campaign may hold 100,000 results, so none is kept: `load` reads the JSONL once, for the
summary and the report order of its lines, and `results()` reads them back in that order
(target, dataset, case id, repeat), one result at a time.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.reports.distributions import Distributions
from evalrelay.bridge.reports.lines import ReportOrder, ResultHead
from evalrelay.bridge.reports.outcomes import Outcome, outcome
from evalrelay.bridge.results.result import Result
from evalrelay.bridge.results.summary import CampaignSummary

SKIPPED_FOLDERS = frozenset({"node_modules", "venv", "__pycache__", "site-packages"})


@dataclass
class TargetTally:
    """What a report must say of a target before listing its results (JUnit's suite)."""

    outcomes: Counter[Outcome] = field(default_factory=Counter)
    duration_ms: int = 0
    first_started: datetime | None = None

    def add(self, result: ResultHead, result_outcome: Outcome) -> None:
        self.outcomes[result_outcome] += 1
        self.duration_ms += result.duration_ms
        if self.first_started is None or result.started_at < self.first_started:
            self.first_started = result.started_at


class CampaignResults:
    def __init__(self, path: Path) -> None:
        """Only `load` makes one."""
        self.campaign_id = path.name.removesuffix(".jsonl")
        self.path = path
        self.summary = CampaignSummary(campaign_id=self.campaign_id)
        self.tallies: dict[str, TargetTally] = {}
        self.cached = 0
        """Results answered from the response cache."""
        self.distributions = Distributions()
        self.order = ReportOrder.scan(path, self._add)

    @classmethod
    def load(cls, path: Path) -> CampaignResults:
        return cls(path)

    def _add(self, head: ResultHead) -> None:
        self.summary.add(head)
        tally = self.tallies.get(head.target)
        if tally is None:
            tally = self.tallies[head.target] = TargetTally()
        kind = outcome(head)
        tally.add(head, kind)
        self.distributions.add(head, kind)
        self.cached += head.cached

    def __len__(self) -> int:
        return len(self.order)

    def results(self, target: str | None = None) -> Iterator[Result]:
        """Every result (or `target`'s), by target, dataset, case id and repeat."""
        return self.order.read(target)

    def heads(self, target: str | None = None) -> Iterator[ResultHead]:
        """`results()`, of which only the fields that count and compare them."""
        return self.order.read_heads(target)


def find_results(campaign: str, results_dir: Path | None = None) -> Path:
    """CAMPAIGN as a `.jsonl` path, or a campaign id: in the project's results folder, else
    anywhere below the current folder (where `run` left it for another project)."""
    given = Path(campaign)
    if given.suffix == ".jsonl":
        if not given.is_file():
            raise EvalrelayError(f"no results file {given}")
        return given
    folder = results_dir or _default_results_dir()
    path = folder / f"{campaign}.jsonl"
    if not path.is_file() and results_dir is None:
        path = _found_below(Path.cwd(), f"{campaign}.jsonl") or path
    if not path.is_file():
        known = sorted(p.name.removesuffix(".jsonl") for p in folder.glob("*.jsonl"))
        known = [k for k in known if not k.endswith(".attempts")][-5:]
        hint = f"; recent campaigns there: {', '.join(known)}" if known else ""
        raise EvalrelayError(
            f"no results for campaign {campaign!r} in {folder}{hint}; pass the path of its "
            f".jsonl file, or --results DIR"
        )
    return path


def _found_below(top: Path, name: str) -> Path | None:
    """The first `name` under `top`, skipping hidden folders and installed packages."""
    for folder, subfolders, files in os.walk(top):
        subfolders[:] = sorted(
            d for d in subfolders if not d.startswith(".") and d not in SKIPPED_FOLDERS
        )
        if name in files:
            return Path(folder) / name
    return None


def _default_results_dir() -> Path:
    project = Project.containing(Path.cwd())
    return project.root / project.config.results_dir
