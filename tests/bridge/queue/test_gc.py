"""`collect_garbage`: campaigns past their retention go whole, complete ones nobody
compacted are compacted, per-job keys whose campaign is gone go."""

from __future__ import annotations

import redis

from evalrelay.bridge.keys import (
    campaign_key,
    campaigns_key,
    collected_key,
    counts_key,
    done_key,
    job_dictionary_key,
    job_key,
    listed_key,
    manifest_key,
)
from evalrelay.bridge.queue.campaigns import store_jobs
from evalrelay.bridge.queue.gc import STORING_SECONDS, collect_garbage
from evalrelay.bridge.results.manifest import manifest_record
from evalrelay.bridge.results.retention import RETENTION_SECONDS, is_compacted
from tests.bridge.queue.test_campaigns import add_campaign
from tests.conftest import direct_job


def test_a_campaign_past_its_retention_goes_whole(client: redis.Redis) -> None:
    add_campaign(client, "old", total=1)  # created on 2026-03-01, long ago
    store_jobs(client, [direct_job(campaign_id="old", job_id="j")])
    client.hincrby(counts_key("old"), "ok", 1)
    removed = collect_garbage(client, retention_seconds=86400)
    assert removed.campaigns == 1
    assert not client.exists(campaign_key("old"), counts_key("old"), *manifest_record("old"))
    assert not client.exists(job_key("j"))
    assert client.zscore(campaigns_key(), "old") is None


def test_a_campaign_within_its_retention_stays(client: redis.Redis) -> None:
    add_campaign(client, "young", total=2)
    store_jobs(client, [direct_job(campaign_id="young", job_id="j")])
    removed = collect_garbage(client, retention_seconds=10**10)
    assert removed.campaigns == 0
    assert client.exists(campaign_key("young"), job_key("j")) == 2


def test_a_complete_campaign_nobody_compacted_is_compacted(client: redis.Redis) -> None:
    add_campaign(client, "done", total=1, done=1)
    store_jobs(client, [direct_job(campaign_id="done", job_id="job-0")])
    removed = collect_garbage(client, retention_seconds=10**10)
    assert removed.compacted == 1
    assert is_compacted(client, "done")
    assert not client.exists(job_key("job-0"), collected_key("done"))


def test_per_job_keys_of_a_gone_campaign_go(client: redis.Redis) -> None:
    """Its stored jobs, job list and job dictionary (its submitter killed while storing:
    never announced), once older than a submit may take; a campaign being stored now stays."""
    add_campaign(client, "known", total=2)
    store_jobs(client, [direct_job(campaign_id="known", job_id="kept")])
    store_jobs(client, [direct_job(campaign_id="forgotten", job_id="orphan")])
    store_jobs(client, [direct_job(campaign_id="storing", job_id="soon")])
    written_long_ago = RETENTION_SECONDS - STORING_SECONDS - 60
    forgotten = (manifest_key("forgotten", "orphan"), listed_key("forgotten"))
    for key in (job_key("orphan"), *forgotten, job_dictionary_key("forgotten")):
        client.expire(key, written_long_ago)
    client.hset(done_key("known", "kept"), "kept", 1)
    client.hset(done_key("known", "collected"), "collected", 1)  # collected `ok`: not stored
    client.expire(done_key("known", "collected"), 3600)
    removed = collect_garbage(client, retention_seconds=10**10)
    # the orphan job, its manifest (a hash and its count) and the dictionary; a done mark
    # expires on its own
    assert removed.jobs == 4
    assert client.exists(job_key("kept"), done_key("known", "kept")) == 2
    assert client.hkeys(done_key("known", "collected")) == ["collected"]
    assert not client.exists(job_key("orphan"))
    assert not client.exists(*forgotten, job_dictionary_key("forgotten"))
    storing = (job_key("soon"), manifest_key("storing", "soon"), job_dictionary_key("storing"))
    assert client.exists(*storing) == 3
