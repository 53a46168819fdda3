"""A campaign's `<campaign>.jsonl`: one line per job, appended and fsynced, never twice.

The file itself is the record of what was written: on opening, the job ids already in it
are read back, so a collector restarted after a crash between writing a line and
acknowledging it in Redis does not write that line again. A write or fsync that fails
(a full disk, a file-size limit, an I/O error) cuts the file back to its last durable line.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from evalrelay.bridge.results.job_ids import JobIds
from evalrelay.bridge.results.result import Result
from evalrelay.bridge.results.summary import CampaignSummary, write_atomically


def results_path(out_dir: Path, campaign_id: str) -> Path:
    return out_dir / f"{campaign_id}.jsonl"


def summary_path(out_dir: Path, campaign_id: str) -> Path:
    return out_dir / f"{campaign_id}.summary.json"


class ResultsFile:
    """The file as it is on disk: what it holds in memory (`job_ids`, `summary`) is only
    ever what an fsync has made durable, so a disk error (ENOSPC, EFBIG, EIO, a failing
    fsync) leaves nothing counted, acknowledged or trimmed that the disk does not hold."""

    def __init__(
        self, out_dir: Path, campaign_id: str, expected: int | None = None, counting: bool = False
    ) -> None:
        """`counting`: its summary keeps no answers (`CampaignSummary.counting`)."""
        out_dir.mkdir(parents=True, exist_ok=True)
        self.path = results_path(out_dir, campaign_id)
        self.summary_path = summary_path(out_dir, campaign_id)
        self.summary = _summary(campaign_id, expected, counting)
        self.job_ids = JobIds()
        """The jobs with a line in the file (16 bytes each: a campaign may have millions)."""
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            _drop_torn_tail(self.path, self.fd)
            for result in read_results(self.path):
                self.job_ids.add(result.job_id)
                self.summary.add(result)
            self.synced_size = os.fstat(self.fd).st_size
            """Bytes known to be on disk: the file is cut back to this after a failed write."""
        except BaseException:
            os.close(self.fd)
            raise

    def append(self, results: Iterable[Result]) -> list[Result]:
        """Write the results whose job has no line yet; durable on disk when this returns.

        On an OSError the file is cut back to its last durable line (no torn or unsynced
        line stays behind) and the error is raised: nothing of the batch counts as written."""
        new: dict[str, Result] = {}
        for result in results:
            if result.job_id not in self.job_ids and result.job_id not in new:
                new[result.job_id] = result
        if not new:
            return []
        data = b"".join(r.model_dump_json().encode("utf-8") + b"\n" for r in new.values())
        try:
            _write_all(self.fd, data)
            os.fsync(self.fd)
        except OSError:
            self._cut_back()
            raise
        self.synced_size += len(data)
        for result in new.values():
            self.job_ids.add(result.job_id)
            self.summary.add(result)
        return list(new.values())

    def _cut_back(self) -> None:
        """Back to the last durable line; if even that fails, the next opening cuts the
        torn tail and counts again what the disk holds."""
        try:
            os.ftruncate(self.fd, self.synced_size)
            os.fsync(self.fd)
        except OSError:
            pass

    def statuses_of(self, job_ids: set[str]) -> dict[str, str]:
        """The status of each of these jobs, read from the file's lines (kept in memory,
        they would cost every job of the campaign; this is asked only when a file is
        opened, of the few lines Redis did not record)."""
        return {
            result.job_id: result.status.value
            for result in _whole_lines(self.path, sync=False)
            if result.job_id in job_ids
        }

    def write_summary(self) -> None:
        write_atomically(self.summary_path, json.dumps(self.summary.as_json(), indent=2) + "\n")

    def close(self) -> None:
        """Never fails: what counts was fsynced already (the fd is freed even on an error)."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def summary_on_disk(
    path: Path, campaign_id: str, expected: int | None, counting: bool = False, sync: bool = True
) -> CampaignSummary:
    """The summary of the whole lines the file holds on disk, each job once: what
    `summary.json` says at the end, never what a collector believes it wrote (`sync`: the
    file is fsynced first, unless its collector did once it was complete)."""
    summary = _summary(campaign_id, expected, counting)
    seen = JobIds()
    for result in _whole_lines(path, sync=sync):
        if result.job_id not in seen:
            seen.add(result.job_id)
            summary.add(result)
    return summary


def _summary(campaign_id: str, expected: int | None, counting: bool) -> CampaignSummary:
    if counting:
        return CampaignSummary.counting(campaign_id, expected)
    return CampaignSummary(campaign_id=campaign_id, expected=expected)


def complete_summary(results: Path) -> Path:
    """The campaign's `summary.json` with its statistics: a counting summary (a service's
    collector writes no statistics) is written again from the file on disk, keeping what
    only the collector knew (`expected`, `paid_again`); one with statistics is left as is."""
    campaign_id = results.name.removesuffix(".jsonl")
    path = summary_path(results.parent, campaign_id)
    try:
        written = json.loads(path.read_text())
    except FileNotFoundError:
        written = {}
    if "statistics" in written:
        return path
    summary = summary_on_disk(results, campaign_id, written.get("expected"), sync=False)
    summary.paid_again = written.get("paid_again", {})
    write_atomically(path, json.dumps(summary.as_json(), indent=2) + "\n")
    return path


def job_ids_on_disk(path: Path) -> set[str]:
    """The jobs with a whole line in the file, read without opening it for writing (a
    collector may be appending to it): what a campaign Redis lost keeps when rebuilt."""
    return {result.job_id for result in whole_results(path)}


def whole_results(path: Path) -> Iterator[Result]:
    """The results of the file's whole lines, read while a collector may append to it."""
    return _whole_lines(path, sync=False)


def _whole_lines(path: Path, *, sync: bool) -> Iterator[Result]:
    """The results of the file's whole lines; a torn last line is not a result."""
    if not path.exists():
        return
    with path.open("rb") as handle:
        if sync:
            os.fsync(handle.fileno())
        for number, line in enumerate(handle, 1):
            if line.endswith(b"\n") and line.strip():
                yield result_of_line(line, f"{path}:{number}")


def _write_all(fd: int, data: bytes) -> None:
    """`os.write` may write part of the data (the disk fills, a file-size limit is met)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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


def _drop_torn_tail(path: Path, fd: int) -> None:
    """A crash or a full disk mid-write can leave a last line without its newline; it was
    never acknowledged: cut it off, and make what is left durable."""
    size = os.fstat(fd).st_size
    with path.open("rb") as handle:
        end = size
        while end > 0:
            start = max(0, end - TAIL_CHUNK)
            handle.seek(start)
            chunk = handle.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
    if end != size:
        os.ftruncate(fd, end)
    os.fsync(fd)


TAIL_CHUNK = 64 * 1024
