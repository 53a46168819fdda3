"""A message names its job; the worker reads the stored job back."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import redis

from evalrelay.bridge.contract.names import RUN_BATCH, RUN_CASE
from evalrelay.bridge.delivery.outstanding import SENT_HEADER, carried_jobs
from evalrelay.bridge.delivery.payloads import (
    batch_argument,
    batch_payloads,
    job_of,
    message_job_ids,
    payload_of,
)
from evalrelay.bridge.keys import job_key, outstanding_key
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.queue.campaigns import store_jobs
from evalrelay.bridge.queue.celery_queue import MAX_BATCH, JobQueue
from tests.conftest import direct_job


def sent_payload(client: redis.Redis, queue: str) -> tuple[dict[str, Any], int]:
    """The payload of the next message on `queue` (an API job's: a batch of one), and the
    size of the message."""
    raw = client.rpop(queue)
    body = json.loads(base64.b64decode(json.loads(raw)["body"]))
    (payload,) = batch_payloads(body[0][0])
    return payload, len(raw)


def test_a_message_names_its_job_and_carries_none_of_it(
    client: redis.Redis, redis_url: str
) -> None:
    job = direct_job(job_id="j", request=PromptRequest(question="q" * 5000))
    store_jobs(client, [job])
    JobQueue.connect(redis_url).send([job])
    payload, size = sent_payload(client, "api")
    assert payload == {"job_id": "j", "attempt": 1}
    assert size < 2000  # the 5,000-character question stays in the stored job
    assert job_of(client, payload) == job


def test_the_worker_takes_the_messages_attempt_and_waiting_time(client: redis.Redis) -> None:
    job = direct_job(job_id="j")
    store_jobs(client, [job])
    later = job.model_copy(update={"attempt": 3, "waiting_since": 12.5})
    assert job_of(client, payload_of(later)) == later


def test_sending_a_job_not_stored_stores_it(client: redis.Redis, redis_url: str) -> None:
    job = direct_job(job_id="j")
    JobQueue.connect(redis_url).send([job])
    payload, _ = sent_payload(client, "api")
    assert job_of(client, payload) == job


def test_jobs_announced_by_their_sender_are_neither_stored_nor_recorded_again(
    client: redis.Redis, redis_url: str
) -> None:
    """`submit` stores a campaign's jobs and `announce` records them as sent; their messages
    then carry that time, and the stored jobs and records are left as they are."""
    job = direct_job(job_id="j")
    store_jobs(client, [job])
    client.set(job_key("j"), b"as stored by the sender")
    client.zadd(outstanding_key("api"), {"j": 1234})
    JobQueue.connect(redis_url).send([job], announced_ms=1234)
    raw = json.loads(client.rpop("api"))
    assert raw["headers"][SENT_HEADER] == 1234
    assert client.get(job_key("j")) == "as stored by the sender"
    assert client.zscore(outstanding_key("api"), "j") == 1234


def test_a_job_no_longer_stored_is_none(client: redis.Redis) -> None:
    job = direct_job(job_id="j")
    store_jobs(client, [job])
    client.delete(job_key("j"))  # its campaign was compacted: a late duplicate
    assert job_of(client, payload_of(job)) is None


def test_a_batch_names_its_jobs_in_one_string_read_back_as_their_payloads() -> None:
    first = direct_job(job_id="a1")
    again = direct_job(job_id="b2").model_copy(update={"attempt": 3})
    waiting = direct_job(job_id="c3").model_copy(update={"attempt": 2, "waiting_since": 0.1 + 0.2})
    argument = batch_argument([first, again, waiting])
    assert argument == "a1 b2/3 c3/2/0.30000000000000004"
    assert batch_payloads(argument) == [payload_of(first), payload_of(again), payload_of(waiting)]
    assert message_job_ids(RUN_BATCH, [argument]) == ["a1", "b2", "c3"]


def test_a_job_id_that_would_break_the_batch_string_is_refused() -> None:
    with pytest.raises(ValueError, match="space or a slash"):
        batch_argument([direct_job(job_id="a b")])


def test_arguments_that_are_not_jobs_name_none() -> None:
    assert message_job_ids(RUN_BATCH, [[{"job_id": "a"}], ["a"]]) == []
    assert message_job_ids(RUN_BATCH, []) == []
    assert message_job_ids(RUN_CASE, ["nothing"]) == []


def test_a_full_batch_message_costs_its_jobs_little_of_redis(
    client: redis.Redis, redis_url: str
) -> None:
    """A queued job's share of its message: its id once, base64 and the message's headers
    shared by 64 (it was 183 bytes with the id three times)."""
    jobs = [direct_job(job_id=f"{i:032x}", case_id=f"c{i}") for i in range(MAX_BATCH)]
    JobQueue.connect(redis_url).send(jobs, per_message=MAX_BATCH)
    (raw,) = client.lrange("api", 0, -1)
    assert carried_jobs(json.loads(raw)) == [job.job_id for job in jobs]
    assert len(raw) / MAX_BATCH < 70
