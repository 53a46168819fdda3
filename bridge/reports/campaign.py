"""A campaign's results as the reports see them: one outcome per result, stats per target."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from bridge.errors import EvalrelayError
from bridge.evalfile.project import Project
from bridge.results.result import Result, Status
from bridge.results.results_file import read_results
from bridge.results.summary import CampaignSummary

SKIPPED_FOLDERS = frozenset({"node_modules", "venv", "__pycache__", "site-packages"})


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    """The model's answer fell short: a low score or a model failure."""
    ERROR = "error"
    """Not the model's doing: infrastructure, limits, timeouts, grading."""
    UNGRADED = "ungraded"
    CANCELLED = "cancelled"


def outcome(result: Result) -> Outcome:
    if result.status is Status.CANCELLED:
        return Outcome.CANCELLED
    if not result.status.is_scored:
        return Outcome.ERROR
    if result.passed is None:
        return Outcome.FAILED if result.status is Status.MODEL_FAILURE else Outcome.UNGRADED
    return Outcome.PASSED if result.passed else Outcome.FAILED


def is_cached(result: Result) -> bool:
    """The answer came from the response cache (`run --cache`), not from a call of its own:
    its `usage`, `request_id`, `latency_ms` and `calls` are those of the call that filled it."""
    return result.artifacts.get("cached") is True


class CampaignResults(BaseModel):
    campaign_id: str
    path: Path
    results: list[Result]
    summary: CampaignSummary

    @classmethod
    def load(cls, path: Path) -> CampaignResults:
        campaign_id = path.name.removesuffix(".jsonl")
        results = sorted(
            read_results(path), key=lambda r: (r.target, r.dataset, r.case_id, r.repeat)
        )
        summary = CampaignSummary(campaign_id=campaign_id)
        for result in results:
            summary.add(result)
        return cls(campaign_id=campaign_id, path=path, results=results, summary=summary)


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
