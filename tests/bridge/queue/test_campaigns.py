"""What a user types for a campaign: `latest`, a `run --name`, the start of an id; a real
Redis holds the campaigns."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.delivery.outstanding import SENT_HEADER, carried_jobs
from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import collected_key, outstanding_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import (
    AmbiguousCampaign,
    CampaignInfo,
    announce,
    list_campaigns,
    new_campaign_id,
    resolve_campaign,
    submit,
)
from evalrelay.bridge.queue.celery_queue import JobQueue
from tests.conftest import one_turn_cases

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def add_campaign(
    client: redis.Redis,
    campaign_id: str,
    minutes: int = 0,
    *,
    total: int = 1,
    done: int = 0,
    out_dir: str = "/tmp/results",
    name: str | None = None,
) -> CampaignInfo:
    """A campaign as `run` announces it, created `minutes` after T0, `done` of its `total`
    jobs with their line."""
    info = CampaignInfo(
        campaign_id=campaign_id,
        created_at=T0 + timedelta(minutes=minutes),
        sources=["evals.yaml"],
        targets=["mock"],
        total=total,
        out_dir=out_dir,
        name=name,
    )
    announce(client, info, [])
    if done:
        client.sadd(collected_key(campaign_id), *[f"job-{i}" for i in range(done)])
    return info


def test_latest_is_the_newest_campaign_created(client: redis.Redis) -> None:
    add_campaign(client, "evals-20260301-120500-aaaa", 5)
    add_campaign(client, "evals-20260301-121000-bbbb", 10)
    add_campaign(client, "evals-20260301-120000-cccc", 0)
    assert resolve_campaign(client, "latest") == "evals-20260301-121000-bbbb"


def test_a_unique_start_of_an_id_is_the_id(client: redis.Redis) -> None:
    add_campaign(client, "evals-20260301-120500-aaaa", 5)
    add_campaign(client, "geo-20260301-121000-bbbb", 10)
    assert resolve_campaign(client, "geo") == "geo-20260301-121000-bbbb"
    assert resolve_campaign(client, "evals-20260301-120500-aaaa") == "evals-20260301-120500-aaaa"


def test_a_name_is_its_newest_campaign(client: redis.Redis) -> None:
    add_campaign(client, "nightly-20260301-120000-aaaa", 0, name="nightly")
    add_campaign(client, "nightly-20260301-121000-bbbb", 10, name="nightly")
    add_campaign(client, "other-20260301-122000-cccc", 20, name="Other run")
    assert resolve_campaign(client, "nightly") == "nightly-20260301-121000-bbbb"
    assert resolve_campaign(client, "Other run") == "other-20260301-122000-cccc"


def test_an_ambiguous_start_names_every_campaign_it_starts(client: redis.Redis) -> None:
    add_campaign(client, "evals-20260301-120500-aaaa", 5)
    add_campaign(client, "evals-20260301-121000-bbbb", 10)
    with pytest.raises(AmbiguousCampaign) as refused:
        resolve_campaign(client, "evals-2026")
    assert str(refused.value) == (
        "'evals-2026' starts 2 campaign ids: evals-20260301-121000-bbbb, "
        "evals-20260301-120500-aaaa; type more of the id, or `latest`"
    )


def test_an_unknown_id_is_refused_naming_the_closest_campaigns(client: redis.Redis) -> None:
    add_campaign(client, "evals-20260301-120500-aaaa", 5)
    add_campaign(client, "geo-20260301-121000-bbbb", 10)
    with pytest.raises(EvalrelayError) as refused:
        resolve_campaign(client, "evals-20260301-120500-aaab")
    assert str(refused.value) == (
        "no campaign 'evals-20260301-120500-aaab' in this Redis; "
        "did you mean: evals-20260301-120500-aaaa?"
    )
    with pytest.raises(EvalrelayError, match="the newest: geo-20260301-121000-bbbb, evals-"):
        resolve_campaign(client, "zzz")


def test_latest_with_no_campaign_says_there_is_none(client: redis.Redis) -> None:
    with pytest.raises(EvalrelayError, match="this Redis has no campaigns"):
        resolve_campaign(client, "latest")


def test_a_name_becomes_the_slugified_stem_of_the_id(client: redis.Redis) -> None:
    campaign_id = new_campaign_id([], name="Nightly GPT run!")
    assert campaign_id.startswith("Nightly-GPT-run-2")
    with pytest.raises(EvalrelayError, match="'latest' always means the newest campaign"):
        new_campaign_id([], name="latest")


def test_list_campaigns_without_a_limit_lists_all_newest_first(client: redis.Redis) -> None:
    for i in range(25):
        add_campaign(client, f"c{i:02}", i)
    assert [i.campaign_id for i in list_campaigns(client)][:2] == ["c24", "c23"]
    assert len(list_campaigns(client)) == 20
    assert len(list_campaigns(client, limit=None)) == 25


def test_submitted_jobs_messages_carry_the_time_their_jobs_were_recorded_as_sent(
    client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    """The reaper compares each job's record with the oldest message's `SENT_HEADER`: a
    message stamped later than its own job's record would make the job look lost."""
    (tmp_path / "evalrelay.yaml").write_text("")
    (tmp_path / "evals.yaml").write_text(one_turn_cases(150))
    loaded = load_eval_file(tmp_path / "evals.yaml")
    jobs = plan_jobs("c", [loaded], "mock", None)
    info = CampaignInfo.for_jobs("c", jobs, [], str(tmp_path / "results"), "service")
    submit(client, JobQueue.connect(redis_url), info, jobs, [loaded])
    recorded = dict(client.zrange(outstanding_key("api"), 0, -1, withscores=True))
    assert set(recorded) == {job.job_id for job in jobs}
    sent = []
    while (raw := client.rpop("api")) is not None:
        message = json.loads(raw)
        stamp = message["headers"][SENT_HEADER]
        for job_id in carried_jobs(message):
            assert recorded[job_id] == stamp
            sent.append(job_id)
    assert sorted(sent) == sorted(recorded)
