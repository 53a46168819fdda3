"""Planning again a campaign dropped in the inbox that Redis lost, from its file in `queued/`.

A Redis restarted without its data forgets every campaign the watcher queued. Each file
still waits in `queued/`, and beside its results a record (`bridge.queue.rebuild`) names
it. That file is as untrusted as when it was dropped, so it is taken as it was then: the
very content that was queued (its hash is in the record), loaded in a bounded child
process, in the operator's project and never with configuration inside the inbox unless
the watcher trusts it, and refused what the watcher's opt-ins refuse. Planned as if it
were still where it was dropped (its dataset name, target folder and evaluator paths
come from there), it gives the jobs it gave, with the same ids.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile
from evalrelay.bridge.evalfile.isolated import load_isolated
from evalrelay.bridge.inbox.folders import Inbox
from evalrelay.bridge.inbox.intake import drop_identity
from evalrelay.bridge.inbox.trust import InboxTrust
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.rebuild import CampaignRecord


def plan_dropped(
    record: CampaignRecord,
    inbox: Inbox,
    trust: InboxTrust,
    stopping: Callable[[], bool] = lambda: False,
) -> tuple[LoadedEvalFile, list[Job]]:
    """The campaign's file and jobs, planned again from its copy in `queued/`; an
    EvalrelayError saying why when that copy cannot give the same campaign."""
    dropped = record.dropped
    if dropped is None or Path(dropped.inbox) != inbox.root:
        raise EvalrelayError(f"campaign {record.campaign_id} was not dropped in {inbox.root}")
    queued = inbox.root / dropped.queued
    dropped_at = inbox.root / dropped.path
    if inbox.relative(queued) is not None or Path(dropped.queued).parts[:1] != ("queued",):
        raise EvalrelayError(f"{queued}: not a file in {inbox.root / 'queued'}")
    folder_target = inbox.folder_target(dropped_at)
    _same_content(queued, folder_target, dropped.identity, record.campaign_id)
    loaded = load_isolated(queued, trust.project(inbox.root, dropped_at), stopping)
    trust.check(loaded)
    _same_content(queued, folder_target, dropped.identity, record.campaign_id)  # still
    loaded = loaded._replace(path=dropped_at)
    info = record.info
    fallback = info.plan.fallback_target if info.plan else None
    jobs = plan_jobs(info.campaign_id, [loaded], None, None, fallback_target=fallback)
    if len(jobs) != info.total:
        raise EvalrelayError(
            f"campaign {info.campaign_id} had {info.total} jobs; {queued} now gives "
            f"{len(jobs)} (the targets or project configuration changed since it was queued)"
        )
    return loaded, jobs


def _same_content(path: Path, folder_target: str | None, identity: str, campaign_id: str) -> None:
    if drop_identity(path.read_bytes(), folder_target) != identity:
        raise EvalrelayError(
            f"{path} changed since it was queued as campaign {campaign_id}; a changed file "
            "is not the campaign it was"
        )
