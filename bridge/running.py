"""A campaign run from this process: plan it, send it, follow it to its last line, report.

`evalrelay run` and `evalrelay.run` both come here; they differ only in what they print.
Planning sends nothing (`plan_run`), so `--estimate` and `--detach` stop after it; `running`
holds the runtime (the cluster's Redis, or a private one and an in-process worker) open
while the caller prints the summary, so the worker winds down meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evalrelay.bridge.connection import configured_url
from evalrelay.bridge.contract.campaign_state import cancel
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.cases import LoadedEvalFile, load_eval_files
from evalrelay.bridge.evalfile.env_files import load_env_files
from evalrelay.bridge.evalfile.selection import select_cases
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.planning.run_request import RunRequest
from evalrelay.bridge.queue.budget import set_budget
from evalrelay.bridge.queue.campaigns import CampaignInfo, Plan, new_campaign_id, submit
from evalrelay.bridge.queue.following import Watcher, follow_campaign
from evalrelay.bridge.queue.rebuild import rebuild, write_record
from evalrelay.bridge.queue.runtime import Runtime, open_runtime
from evalrelay.bridge.queue.starting import Starting
from evalrelay.bridge.queue.steering import who
from evalrelay.bridge.reports.promptfoo_json import write_promptfoo_outputs
from evalrelay.bridge.reports.writer import ensure_html_beside
from evalrelay.bridge.results.paid import paid_again
from evalrelay.bridge.results.results_file import results_path
from evalrelay.bridge.results.summary import CampaignSummary
from evalrelay.bridge.targets.targets_file import Targets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedRun:
    """The loaded files and the jobs they make; nothing is sent yet."""

    request: RunRequest
    files: list[LoadedEvalFile]
    campaign_id: str
    jobs: list[Job]

    @property
    def out_dir(self) -> Path:
        return (self.request.out or self.files[0].project.results_dir).resolve()

    def info(self, submitter: Literal["run", "service"]) -> CampaignInfo:
        """The campaign's record; `submitter` is `run` or `service` (a detached run)."""
        request = self.request
        return CampaignInfo.for_jobs(
            self.campaign_id,
            self.jobs,
            [str(f.path) for f in self.files],
            str(self.out_dir),
            submitter,
            name=request.name,
            plan=Plan(
                targets=request.targets,
                repeats=request.repeats,
                cases=request.cases,
                tags=request.tags,
                cache_ttl_seconds=request.cache_ttl_seconds,
                cwd=str(Path.cwd()),
            ),
        )


@dataclass
class FinishedRun:
    """A campaign followed to its last line."""

    info: CampaignInfo
    summary: CampaignSummary
    paid_again: dict[str, int]
    """Target calls past one per job, by why."""
    complete: list[Path] = field(default_factory=list)
    """Results files the collector found complete, each once: their reports are due."""

    @property
    def results_file(self) -> Path:
        return results_path(Path(self.info.out_dir), self.info.campaign_id)


def plan_run(request: RunRequest) -> PlannedRun:
    """Load and select the cases and plan their jobs: an error here sends nothing."""
    files = select_cases(load_eval_files(tuple(request.paths)), request.cases, request.tags)
    campaign_id = new_campaign_id(files, name=request.name)
    jobs = plan_jobs(campaign_id, files, request.targets, request.repeats)
    if request.cache_ttl_seconds is not None:
        update = {"cache_ttl_seconds": request.cache_ttl_seconds}
        jobs = [job.model_copy(update=update) for job in jobs]
    return PlannedRun(request, files, campaign_id, jobs)


def submit_detached(planned: PlannedRun) -> str:
    """Send the campaign to the cluster's workers; an `evalrelay collect` writes its results."""
    with open_runtime(worker=False) as runtime:
        info = planned.info("service")
        send(runtime, planned, info)
    return info.campaign_id


@contextmanager
def running(
    planned: PlannedRun,
    watch: Callable[[CampaignInfo], AbstractContextManager[Watcher]],
    started: Starting | None = None,
) -> Iterator[FinishedRun]:
    """Send the campaign and follow it to its last line, with a worker in this process's
    child on the embedded default (or `local_worker`); the block runs while it winds down.
    `watch` gives what shows the campaign's progress while it is followed; `started`, what
    the command started ahead (`bridge.queue.starting`).

    A KeyboardInterrupt while following cancels the campaign (its finished lines stay)
    and is raised again.
    """
    request = planned.request
    here = request.local_worker or configured_url() is None
    if here:  # this process's child is the worker: the keys its targets name come from here
        load_env_files((f.path, f.project.root) for f in planned.files)
    with open_runtime(
        worker=True,
        force_local_worker=request.local_worker,
        concurrency=request.concurrency,
        await_worker=False,
        started=started,
    ) as runtime:
        if here:
            check_targets_here(planned.files, planned.jobs)
        info = planned.info("run")
        write_record(info)  # what rebuilds the campaign should Redis lose it
        send(runtime, planned, info)
        runtime.worker_ready()  # it started while the jobs were planned and sent
        complete: list[Path] = []
        try:
            with watch(info) as watcher:
                summary = follow_campaign(
                    runtime.client,
                    info,
                    watcher,
                    on_complete=complete.append,
                    rebuild=lambda done: rebuild(runtime.client, runtime.queue, info, done, "run"),
                )
            paid = paid_again(runtime.client, info.campaign_id)
        except KeyboardInterrupt:
            cancel(runtime.client, info.campaign_id)
            raise
        runtime.stop_worker()
        yield FinishedRun(info, summary, paid, list(dict.fromkeys(complete)))


def send(runtime: Runtime, planned: PlannedRun, info: CampaignInfo) -> None:
    if planned.request.budget_usd is not None:  # before any job, so every answer is charged
        set_budget(runtime.client, info.campaign_id, planned.request.budget_usd, who())
    submit(runtime.client, runtime.queue, info, planned.jobs, planned.files)


def write_reports(finished: FinishedRun) -> list[Path]:
    """The HTML report beside each complete results file; the paths written. A report that
    cannot be written is only logged, as the collector does: the results stand."""
    written: list[Path] = []
    for results in finished.complete:
        try:
            written.append(ensure_html_beside(results))
        except Exception:
            log.exception("could not write the report of %s", results)
    return written


def write_promptfoo_results(finished: FinishedRun, files: list[LoadedEvalFile]) -> list[Path]:
    """Each promptfoo config's `outputPath`, in promptfoo's shape; the paths written."""
    written: list[Path] = []
    for loaded in files:
        if loaded.task is None:  # a task.toml is no promptfoo config
            written += write_promptfoo_outputs(
                loaded.path, finished.info.campaign_id, finished.results_file
            )
    return written


def check_targets_here(files: list[LoadedEvalFile], jobs: list[Job]) -> None:
    """When this machine runs the jobs, a target it cannot use fails now, not once per job."""
    used = {job.target.name for job in jobs}
    for loaded in files:
        targets = Targets.load(loaded.project.root, loaded.path)
        for name in sorted(used & targets.by_name.keys()):
            targets.get(name).settings()
