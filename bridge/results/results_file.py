"""A campaign's `<campaign>.jsonl`: one line per job, appended and fsynced, never twice.

The file itself is the record of what was written: on opening, the job ids already in it
are read back, so a collector restarted after a crash between writing a line and
acknowledging it in Redis does not write that line again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, KeysView
from pathlib import Path

from pydantic import ValidationError

from bridge.results.result import Result
from bridge.results.summary import CampaignSummary, write_atomically


def results_path(out_dir: Path, campaign_id: str) -> Path:
    return out_dir / f"{campaign_id}.jsonl"


def summary_path(out_dir: Path, campaign_id: str) -> Path:
    return out_dir / f"{campaign_id}.summary.json"


class ResultsFile:
    def __init__(self, out_dir: Path, campaign_id: str, expected: int | None = None) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.path = results_path(out_dir, campaign_id)
        self.summary_path = summary_path(out_dir, campaign_id)
        self.summary = CampaignSummary(campaign_id=campaign_id, expected=expected)
        self.statuses: dict[str, str] = {}
        """The status of each job with a line in the file."""
        _drop_torn_tail(self.path)
        for result in read_results(self.path):
            self.statuses[result.job_id] = result.status.value
            self.summary.add(result)
        self.handle = self.path.open("a", encoding="utf-8")

    def append(self, results: Iterable[Result]) -> list[Result]:
        """Write the results whose job has no line yet; durable on disk when this returns."""
        written = []
        for result in results:
            if result.job_id in self.statuses:
                continue
            self.handle.write(result.model_dump_json() + "\n")
            self.statuses[result.job_id] = result.status.value
            self.summary.add(result)
            written.append(result)
        if written:
            self.handle.flush()
            os.fsync(self.handle.fileno())
        return written

    @property
    def job_ids(self) -> KeysView[str]:
        return self.statuses.keys()

    def statuses_of(self, job_ids: Iterable[str]) -> dict[str, str]:
        return {job_id: self.statuses[job_id] for job_id in job_ids}

    def write_summary(self) -> None:
        write_atomically(self.summary_path, json.dumps(self.summary.as_json(), indent=2) + "\n")

    def close(self) -> None:
        self.handle.close()


def remove_results(out_dir: Path, campaign_id: str, job_ids: set[str]) -> list[Result]:
    """Move the lines of these jobs to `<campaign>.attempts.jsonl`; returns the results moved.

    Used by `retry` before it runs the jobs again, so the main file keeps one line per job.
    """
    path = results_path(out_dir, campaign_id)
    kept: list[Result] = []
    moved: list[Result] = []
    for result in read_results(path):
        (moved if result.job_id in job_ids else kept).append(result)
    attempts = out_dir / f"{campaign_id}.attempts.jsonl"
    with attempts.open("a", encoding="utf-8") as handle:
        handle.writelines(r.model_dump_json() + "\n" for r in moved)
        handle.flush()
        os.fsync(handle.fileno())
    write_atomically(path, "".join(r.model_dump_json() + "\n" for r in kept))
    return moved


def read_results(path: Path) -> Iterator[Result]:
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield result_of_line(line, f"{path}:{number}")


def result_of_line(line: str | bytes, where: str) -> Result:
    """One line of a results file; `where` (`path:line`) names it when it is not a result."""
    try:
        return Result.model_validate_json(line)
    except ValidationError as exc:
        raise ValueError(f"{where}: not a result line: {exc}") from None


def _drop_torn_tail(path: Path) -> None:
    """A crash mid-write can leave a last line without its newline; it was never acknowledged."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        with path.open("rb+") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
