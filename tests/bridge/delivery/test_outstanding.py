"""Jobs lost between a queue and a worker are found and sent again; nothing else is.

The lost states are made exactly as a worker killed at the wrong moment leaves them: the
message popped off Redis's list (BRPOP) and recorded nowhere, or also written to the
broker's `unacked` hash the way kombu does it, with no worker holding it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import redis

from evalrelay.bridge.clock import now_ms
from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.names import RUN_CASE
from evalrelay.bridge.delivery.holders import hold, keep_alive, new_process_name
from evalrelay.bridge.delivery.outstanding import (
    SENT_HEADER,
    UNACKED_INDEX_KEY,
    UNACKED_KEY,
    UnackedSweep,
    find_lost,
)
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.keys import outstanding_key, unseen_key
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.campaigns import CampaignInfo, store_jobs
from evalrelay.bridge.queue.celery_queue import JobQueue
from tests.conftest import FAST_RECOVERY, Processes, WriteFiles, one_turn_cases, wait_for
from tests.worker.test_tasks import collect_all, submit_campaign


def jobs(project: WriteFiles, count: int) -> list[Job]:
    root = project({"evals.yaml": one_turn_cases(count)})
    return plan_jobs("c", [load_eval_file(root / "evals.yaml")], "mock", None)


def quick_campaign(project: WriteFiles, redis_url: str, count: int) -> CampaignInfo:
    """A submitted campaign of `count` quick mock jobs, with no worker yet."""
    targets = "targets:\n  - {name: quick, provider: mock, latency_ms: 10}\n"
    root = project({"targets.yaml": targets, "evals.yaml": one_turn_cases(count)})
    return submit_campaign(redis_url, root, count, target="quick")


def pop_like_a_killed_worker(client: redis.Redis, queue: str = "api") -> dict[str, object]:
    """Take the next message off the queue's list as a worker's BRPOP does, and drop it."""
    popped = client.brpop([queue], timeout=5)
    assert popped is not None, f"no message on {queue}"
    message: dict[str, object] = json.loads(popped[1])
    return message


def test_only_a_job_found_nowhere_twice_a_grace_apart_is_lost(
    project: WriteFiles, client: redis.Redis, redis_url: str
) -> None:
    queued, taken, held, popped = jobs(project, 4)
    store_jobs(client, [queued, taken, held, popped])
    queue = JobQueue.connect(redis_url)
    queue.send([popped, taken, held])
    for _ in range(3):
        pop_like_a_killed_worker(client)  # all three left the list
    process = new_process_name("alive@test")
    keep_alive(client, process)
    hold(client, [held.job_id], "m", process)
    sent_first = max(client.zscore(outstanding_key("api"), j.job_id) or 0 for j in (popped, taken))
    # Sent later than the popped ones by more than the 10 ms slack, by Redis's clock.
    wait_for(lambda: now_ms(client) > sent_first + 10, 5, "Redis's clock past the slack")
    queue.send([queued])  # sent later, still on the list

    # A first look only notes them.
    assert find_lost(client, ["api"], grace_ms=300, slack_ms=10) == {}
    assert set(client.hkeys(unseen_key())) == {popped.job_id, taken.job_id}
    hold(client, [taken.job_id], "m2", process)  # its worker recorded it after all
    first_look = int(client.hget(unseen_key(), popped.job_id) or 0)
    wait_for(lambda: now_ms(client) >= first_look + 300, 5, "the grace to go by on Redis's clock")
    assert find_lost(client, ["api"], grace_ms=300, slack_ms=10) == {popped.job_id: "api"}
    assert client.hkeys(unseen_key()) == []
    # Still on the list, sent before the popped ones: never lost while it waits there.
    assert client.zscore(outstanding_key("api"), queued.job_id) is not None


def test_a_message_popped_by_a_worker_killed_before_it_recorded_it_runs_again(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    info = quick_campaign(project, redis_url, 5)
    pop_like_a_killed_worker(client)
    processes.worker(client, "rescuer@test", extra_env=FAST_RECOVERY)
    lines = collect_all(processes, client, info, 60)
    assert {line["status"] for line in lines} == {"ok"}
    said = " ".join(processes.log("rescuer@test").split())
    assert said.count("taken off its queue but held by no worker; sending it again") == 1
    assert client.zcard(outstanding_key("api")) == 0


def test_unacked_entries_no_live_worker_holds_are_dropped_and_their_job_runs(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    info = quick_campaign(project, redis_url, 3)
    message = pop_like_a_killed_worker(client)
    # What kombu's QoS.append writes when a worker takes a message, before the worker
    # records it (`task_received`): the worker is killed right after.
    tag = str(uuid.uuid4())
    client.hset(UNACKED_KEY, tag, json.dumps([message, "", "api"]))
    client.zadd(UNACKED_INDEX_KEY, {tag: time.time()})
    foreign = str(uuid.uuid4())  # another app's task on the same Redis: left alone
    other = {**message, "headers": {"task": "someone.else", "id": "x"}}
    client.hset(UNACKED_KEY, foreign, json.dumps([other, "", "api"]))
    client.zadd(UNACKED_INDEX_KEY, {foreign: time.time() - 3600})

    processes.worker(client, "rescuer@test", extra_env=FAST_RECOVERY)
    collect_all(processes, client, info, 60)
    wait_for(lambda: not client.hexists(UNACKED_KEY, tag), 30, "the stale entry to go")
    # The worker acknowledges its last message just after publishing its result.
    wait_for(lambda: client.hlen(UNACKED_KEY) == 1, 10, "the last acknowledgement")
    assert client.hexists(UNACKED_KEY, foreign)


def test_sweep_keeps_entries_of_messages_a_live_worker_holds(
    project: WriteFiles, client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    (job,) = jobs(project, 1)
    JobQueue.connect(redis_url).send([job])
    message = pop_like_a_killed_worker(client)
    headers = message["headers"]
    assert isinstance(headers, dict) and SENT_HEADER in headers
    client.hset(UNACKED_KEY, "t1", json.dumps([message, "", "api"]))
    client.zadd(UNACKED_INDEX_KEY, {"t1": time.time() - 60})
    process = new_process_name("alive@test")
    keep_alive(client, process)
    hold(client, [job.job_id], str(headers["id"]), process)
    assert UnackedSweep(RUN_CASE).run(client, grace_ms=1000) == 0
    assert client.hexists(UNACKED_KEY, "t1")
