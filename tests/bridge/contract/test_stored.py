"""Stored jobs are compressed against their campaign's first job, and read back whole."""

from __future__ import annotations

import redis

from evalrelay.bridge.contract import stored
from evalrelay.bridge.contract.campaign_state import JOB_TTL_SECONDS
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.stored import campaign_of, read_job, read_jobs
from evalrelay.bridge.keys import job_dictionary_key, job_key, listed_key, manifest_key
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.queue.campaigns import store_jobs, stored_jobs
from evalrelay.bridge.results.manifest import listed_ids
from tests.bridge.queue.test_campaigns import add_campaign
from tests.conftest import direct_job


def jobs(count: int, campaign: str = "c") -> list[Job]:
    system = "You are a careful assistant. " * 10
    return [
        direct_job(
            campaign_id=campaign,
            job_id=f"j{i}",
            case_id=f"case{i}",
            request=PromptRequest(question=f"{system}\nQuestion {i}?", system_prompt=system),
        )
        for i in range(count)
    ]


def test_what_jobs_share_is_stored_once(client: redis.Redis) -> None:
    planned = jobs(3)
    store_jobs(client, planned)
    whole = len(planned[2].model_dump_json())
    assert client.strlen(job_key("j2")) < whole / 4
    assert read_jobs(client, ["j0", "j1", "j2", "none"]) == [*planned, None]


def test_a_process_reads_the_dictionary_once(client: redis.Redis) -> None:
    store_jobs(client, jobs(2))
    stored._dictionaries.clear()
    assert read_job(client, "j0") is not None
    client.delete(job_dictionary_key("c"))  # read already: not asked for again
    assert read_job(client, "j1") == jobs(2)[1]


def test_a_dictionary_made_again_is_told_from_the_first(client: redis.Redis) -> None:
    """A compacted campaign retried makes a new dictionary; a job stored with the old one
    (a late message's) is unreadable, not read wrong."""
    store_jobs(client, jobs(1))
    old = client.execute_command("GET", job_key("j0"), NEVER_DECODE=[])  # type: ignore[no-untyped-call]
    client.delete(job_dictionary_key("c"), job_key("j0"))
    other = [j.model_copy(update={"job_id": "k0"}) for j in jobs(1, "c")]
    other = [other[0].model_copy(update={"outcome": "a different first job"})]
    store_jobs(client, other)
    stored._dictionaries.clear()
    client.set(job_key("j0"), old)
    assert read_job(client, "j0") is None
    assert read_job(client, "k0") == other[0]


def test_a_value_of_another_format_is_taken_as_not_stored(client: redis.Redis) -> None:
    """Plain JSON is no stored job: it is logged and read as missing, and it belongs to no
    campaign."""
    (job,) = jobs(1)
    client.set(job_key("j0"), job.model_dump_json())
    assert read_job(client, "j0") is None
    assert campaign_of(job.model_dump_json().encode()) is None


def test_each_stored_job_lives_as_long_as_its_campaign_and_is_in_its_manifest(
    client: redis.Redis,
) -> None:
    planned = jobs(3)
    store_jobs(client, planned)
    for job in planned:
        assert 0.99 * JOB_TTL_SECONDS < client.ttl(job_key(job.job_id)) <= JOB_TTL_SECONDS
    assert sorted(listed_ids(client, "c")) == sorted(job.job_id for job in planned)
    assert client.get(listed_key("c")) == "3"
    store_jobs(client, planned[:2])  # stored again: listed once
    assert client.get(listed_key("c")) == "3"
    for job in planned:
        assert client.ttl(manifest_key("c", job.job_id)) > 0.99 * JOB_TTL_SECONDS


def test_stored_jobs_of_a_campaign_read_back(client: redis.Redis) -> None:
    add_campaign(client, "c", total=3)
    planned = jobs(3)
    store_jobs(client, planned)
    assert sorted(stored_jobs(client, "c"), key=lambda j: j.job_id) == planned


def test_every_campaigns_jobs_read_back_whatever_its_dictionary(client: redis.Redis) -> None:
    """A binary digest held a line break for about one campaign in thirty, and its jobs
    could not be read (the fleet test caught it)."""
    planned = [j for c in range(200) for j in jobs(1, f"campaign-{c}")]
    planned = [j.model_copy(update={"job_id": f"j-{j.campaign_id}"}) for j in planned]
    for job in planned:
        store_jobs(client, [job])
    stored._dictionaries.clear()
    assert read_jobs(client, [j.job_id for j in planned]) == planned
