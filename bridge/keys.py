"""Every Redis key evalrelay uses, built in one place from one prefix."""

from __future__ import annotations

import zlib

PREFIX = "evalrelay"


def epoch_key() -> str:
    """Set by the first command to use this Redis; a Redis that lost its data lacks it."""
    return f"{PREFIX}:epoch"


def rebuild_lock_key(campaign_id: str) -> str:
    """String with a TTL: the one process rebuilding a campaign Redis lost, while it does."""
    return f"{PREFIX}:campaign:{campaign_id}:rebuilding"


def campaigns_key() -> str:
    """Sorted set of campaign ids, scored by creation time."""
    return f"{PREFIX}:campaigns"


def campaign_key(campaign_id: str) -> str:
    """Hash: the campaign's metadata (a `CampaignInfo`)."""
    return f"{PREFIX}:campaign:{campaign_id}"


JOB_BUCKETS = 4096
"""A campaign's per-job records kept as fields of hashes (its manifest, its `done` marks)
are spread over this many hashes by `job_bucket`: up to some hundred thousand jobs a
campaign, a hash holds under 128 fields, which Redis keeps packed (a listpack, up to
`hash-max-listpack-entries`, 128 by default), at a third of the memory of a set member or
of a key each (docs/performance.md)."""


def job_bucket(job_id: str) -> str:
    """The hash (of `JOB_BUCKETS`, three hex digits) a job's records are fields of."""
    return f"{zlib.crc32(job_id.encode()) % JOB_BUCKETS:03x}"


def manifest_prefix(campaign_id: str) -> str:
    """What the names of the campaign's manifest hashes start with: their bucket follows."""
    return f"{PREFIX}:campaign:{campaign_id}:jobs:"


def manifest_key(campaign_id: str, job_id: str) -> str:
    """Hash: the ids of the campaign's jobs in the job's bucket (`job_bucket`), each a field
    with an empty value: a part of its manifest, every job it expects a result for
    (`bridge.results.manifest`)."""
    return manifest_prefix(campaign_id) + job_bucket(job_id)


def manifest_keys(campaign_id: str) -> list[str]:
    """Every part of the campaign's manifest (`manifest_key`), whether it exists or not."""
    return [f"{manifest_prefix(campaign_id)}{n:03x}" for n in range(JOB_BUCKETS)]


def listed_key(campaign_id: str) -> str:
    """Integer: how many jobs the campaign's manifest lists."""
    return f"{PREFIX}:campaign:{campaign_id}:listed"


def counts_key(campaign_id: str) -> str:
    """Hash: collected results by status, kept by the collector."""
    return f"{PREFIX}:campaign:{campaign_id}:counts"


def compacted_key(campaign_id: str) -> str:
    """String: when the campaign was compacted (`bridge.results.retention`): its file is
    complete, its counts are its record, its jobs and per-job keys are gone."""
    return f"{PREFIX}:campaign:{campaign_id}:compacted"


def collected_key(campaign_id: str) -> str:
    """Set: ids of the jobs whose result is in the campaign's JSONL file."""
    return f"{PREFIX}:campaign:{campaign_id}:collected"


def results_home_key(campaign_id: str) -> str:
    """String: the host and path of the campaign's results file (a `ResultsHome`)."""
    return f"{PREFIX}:campaign:{campaign_id}:results-home"


def collector_lease_key(campaign_id: str) -> str:
    """String with a TTL: the one collector writing this campaign's file right now."""
    return f"{PREFIX}:campaign:{campaign_id}:collector"


def cannot_write_key() -> str:
    """Hash: `<collector> <campaign>` to the disk error stopping that collector writing
    that campaign's file (a `bridge.results.write_errors.WriteError`), while it lasts."""
    return f"{PREFIX}:collectors:cannot-write"


def retry_request_key(campaign_id: str) -> str:
    """String with a TTL: a `retry` asking the campaign's live collector to move the lines
    of the jobs it runs again aside (a `bridge.results.retry_request.RetryRequest`)."""
    return f"{PREFIX}:campaign:{campaign_id}:retry-request"


def retry_answer_key(request_id: str) -> str:
    """String with a TTL: the collector's answer to one retry request (the lines it moved)."""
    return f"{PREFIX}:retry-answer:{request_id}"


def cancel_key(campaign_id: str) -> str:
    """String: present while the campaign is cancelled; workers then skip its jobs."""
    return f"{PREFIX}:campaign:{campaign_id}:cancelled"


CANCEL_ENDS = "ends"
"""The start of a `cancel_key` value when the cancel ends the campaign (`evalrelay cancel`):
a worker that meets one of its jobs then writes a `cancelled` line for it. Any other value
(Ctrl-C on `run`) leaves the jobs without a line, for `resume`."""


def paused_key(campaign_id: str) -> str:
    """String: present while the campaign is paused (a `bridge.queue.steering.Paused`);
    workers then leave its jobs for `unpause` to send again."""
    return f"{PREFIX}:campaign:{campaign_id}:paused"


def budget_key(campaign_id: str) -> str:
    """Hash: the campaign's budget (`limit`) and what its answers cost so far (`spent`), both
    in nanodollars, charged by every worker (`bridge.queue.budget`)."""
    return f"{PREFIX}:campaign:{campaign_id}:budget"


def audit_key(campaign_id: str) -> str:
    """Stream: who paused, unpaused, cancelled or changed the campaign, and when."""
    return f"{PREFIX}:campaign:{campaign_id}:audit"


def live_limits_key(target: str) -> str:
    """Hash: the target's limits changed live (`rpm`, `tpm`, `max_concurrency`), which
    every worker uses instead of those of its targets file."""
    return f"{PREFIX}:limit:{target}:live"


def limits_audit_key() -> str:
    """Stream: who changed a target's limits live, when, and to what."""
    return f"{PREFIX}:limits:audit"


def target_tally_key(target: str) -> str:
    """Hash: results published for a target since the tally began, by status; attempts past
    the first (`retries`); dollars (`cost_usd`): what `/metrics` reports per target."""
    return f"{PREFIX}:tally:target:{target}"


def paid_again_key(campaign_id: str) -> str:
    """Hash: the campaign's target calls past one per job, by why (`bridge.results.paid`):
    `duplicate`, `late copy`, `retry`; kept with its record."""
    return f"{PREFIX}:campaign:{campaign_id}:paid-again"


def tallied_targets_key() -> str:
    """Set: the targets that have a tally."""
    return f"{PREFIX}:tally:targets"


def results_stream_key(campaign_id: str) -> str:
    """Stream: results as workers finish them, read by the collector's consumer group."""
    return f"{PREFIX}:results:{campaign_id}"


def checkpoint_key(campaign_id: str) -> str:
    """List: compressed segments of results moved out of the stream once their lines were
    fsynced (`bridge.results.checkpoint`), for a collector taking the campaign over."""
    return f"{PREFIX}:checkpoint:{campaign_id}"


def job_dictionary_key(campaign_id: str) -> str:
    """String: the campaign's first stored job, the zlib dictionary its stored jobs are
    compressed against (`bridge.contract.stored`)."""
    return f"{PREFIX}:campaign:{campaign_id}:job-dictionary"


def job_key(job_id: str) -> str:
    """String: the job's JSON, which its messages name (`bridge.delivery.payloads`), kept so
    the reaper, `resume` and `retry` can send it again; removed once its line is collected
    `ok` (`bridge.results.collected.count`) or its campaign is compacted."""
    return f"{PREFIX}:job:{job_id}"


def done_prefix(campaign_id: str) -> str:
    """What the names of the campaign's hashes of `done` marks start with: their bucket
    follows."""
    return f"{PREFIX}:campaign:{campaign_id}:done:"


def done_key(campaign_id: str, job_id: str) -> str:
    """Hash: the `done` marks (`bridge.done_marks`) of the campaign's jobs in the job's
    bucket (`job_bucket`), job id to mark: the attempt whose result is in the stream and
    the publication that put it there. About 55 B a mark, against 165 B for a key of its
    own."""
    return done_prefix(campaign_id) + job_bucket(job_id)


def lease_key(job_id: str) -> str:
    """String with a TTL: the token of the worker running the job, renewed by its heartbeat."""
    return f"{PREFIX}:lease:{job_id}"


def inflight_key() -> str:
    """Sorted set: running job ids, scored by when their lease runs out."""
    return f"{PREFIX}:inflight"


def holders_key() -> str:
    """Hash: job id → `<message id> <worker process>` of the worker holding the job's message."""
    return f"{PREFIX}:holders"


def outstanding_key(queue: str) -> str:
    """Sorted set: the jobs sent to `queue` and not yet finished, scored by when sent (ms)."""
    return f"{PREFIX}:outstanding:{queue}"


def unseen_key() -> str:
    """Hash: job id → when (ms) the reaper first found it sent but nowhere (`outstanding`)."""
    return f"{PREFIX}:unseen"


def unacked_sweep_key() -> str:
    """String with a TTL: present for a while after a sweep of the broker's `unacked` hash."""
    return f"{PREFIX}:unacked-sweep"


def alive_key(process: str) -> str:
    """String with a TTL: present while the worker process renews it."""
    return f"{PREFIX}:alive:{process}"


def reaper_lock_key() -> str:
    """String with a TTL: held by the one process re-queuing jobs whose lease expired."""
    return f"{PREFIX}:reaper"


def blob_key(sha256: str) -> str:
    """String: an attached file's text, by content hash."""
    return f"{PREFIX}:blob:{sha256}"


def bytes_key(sha256: str) -> str:
    """String: a file's bytes in base64, by content hash (a task folder's files, a trial's
    collected files); apart from `blob_key`, whose value is text."""
    return f"{PREFIX}:bytes:{sha256}"


def workers_key() -> str:
    """Hash: worker name to its last heartbeat (JSON), for `evalrelay status`."""
    return f"{PREFIX}:workers"


def intake_key(identity: str) -> str:
    """String: the record of one dropped file's content (`bridge.intake.IntakeRecord`)."""
    return f"{PREFIX}:intake:{identity}"


def intake_lock_key(identity: str) -> str:
    """String with a TTL: the watcher taking one dropped file right now, renewed as it works."""
    return f"{PREFIX}:intake:{identity}:lock"


def watch_campaigns_key(inbox_id: str) -> str:
    """Hash: campaigns submitted from an inbox, to the path in `queued/` of their file."""
    return f"{PREFIX}:inbox:{inbox_id}:campaigns"


def watchers_key() -> str:
    """Hash: watcher name to its last heartbeat, scan and backlog (JSON)."""
    return f"{PREFIX}:watchers"


def collectors_key() -> str:
    """Hash: collector (`collect` service) name to its last heartbeat, for `evalrelay health`."""
    return f"{PREFIX}:collectors"


COLLECTOR_GROUP = "collectors"
"""The consumer group every collector reads result streams through."""


def workspace_lease_key(host: str, folder: str) -> str:
    """String with a TTL: the token of the job using an agent workspace, renewed while it runs."""
    return f"{PREFIX}:workspace:{host}:{folder}"
