"""The Celery app of the workers and its settings.

`celery -A evalrelay.worker.app inspect ping` and Flower work against it as usual: the app reads
`EVALRELAY_REDIS_URL` (default: the Redis on 127.0.0.1:6379).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import socket
import threading
from typing import Any

import redis
from celery import Celery, signals
from celery.concurrency.thread import TaskPool as ThreadPool
from kombu import Queue  # type: ignore[attr-defined]

from evalrelay.bridge.connection import broker_url, client_for, configured_url
from evalrelay.bridge.contract.campaign_state import current_epoch
from evalrelay.bridge.contract.names import QUEUES, RUN_BATCH, RUN_CASE
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS, beat, declare_dead, hold, keep_alive
from evalrelay.bridge.delivery.holds import forget_process, note_hold, process_name
from evalrelay.bridge.delivery.payloads import message_job_ids
from evalrelay.bridge.delivery.reaper import Reaper
from evalrelay.bridge.evalfile.limits import MAX_JOB_SECONDS
from evalrelay.bridge.keys import workers_key
from evalrelay.bridge.masking import mask_logs
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.targets.settings import DEFAULT_KEY_VARIABLES, TASK_QUEUE
from evalrelay.worker.agents.docker_cli import remove_dead_workers_containers
from evalrelay.worker.agents.homes import remove_dead_homes, remove_own_homes
from evalrelay.worker.batches import register_batch_task
from evalrelay.worker.broker import use_for_redis_urls
from evalrelay.worker.loop import job_slots
from evalrelay.worker.stopping import on_shutting_down, released, stopping
from evalrelay.worker.tasks import register_tasks

log = logging.getLogger(__name__)

DEFAULT_URL = "redis://127.0.0.1:6379/0"

VISIBILITY_TIMEOUT_SECONDS = int(MAX_JOB_SECONDS + 2 * 3600)
"""Longer than the longest hard time limit, so the broker never re-delivers a live job.
Dead workers' jobs come back through leases and the reaper, not through this."""

WORKER_HEARTBEAT_SECONDS = ALIVE_SECONDS / 3
"""Three beats in each `alive` period, so one late beat never makes a worker look dead."""

_clients: dict[str, redis.Redis] = {}
"""This process's Redis clients, by URL. A forked pool process starts with none of its
parent's: the parent's threads (reaper, heartbeat) may hold a client's pool lock at the
moment of the fork, and redis-py's after-fork reset takes that lock, which in the child
nobody ever releases: the child would hang on its first command."""
os.register_at_fork(after_in_child=_clients.clear)


BLOCKING_READ_SECONDS = 0.25
"""How long the worker's blocking read of its queues (BRPOP) lasts: a worker told to stop
sees it between two reads, so it stops within this, for four cheap calls a second while
it waits for work (kombu's default is a second)."""


def create_app(redis_url: str | None = None) -> Celery:
    # Also when started as `celery -A evalrelay.worker.app worker`, not through the CLI: every log
    # record of the worker and its forked pool processes is masked of the secrets it holds.
    mask_logs(DEFAULT_KEY_VARIABLES)
    use_for_redis_urls()
    url = redis_url or configured_url() or DEFAULT_URL
    app = Celery("evalrelay", broker=broker_url(url), set_as_current=False)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        event_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        broker_transport_options={
            "visibility_timeout": VISIBILITY_TIMEOUT_SECONDS,
            "polling_interval": BLOCKING_READ_SECONDS,
        },
        visibility_timeout=VISIBILITY_TIMEOUT_SECONDS,
        # Off unless asked (`evalrelay worker -E`): Flower turns them on by itself.
        worker_send_task_events=False,
        task_default_queue="api",
        task_queues=[Queue(name) for name in QUEUES],
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )
    app.conf.evalrelay_redis_url = url
    register_tasks(app, lambda: redis_client(url))
    register_batch_task(app, lambda: redis_client(url))
    return app


def redis_client(url: str) -> redis.Redis:
    """One client per process and URL (redis-py's pool reconnects after a fork)."""
    if url not in _clients:
        _clients[url] = client_for(url)
    return _clients[url]


_background: dict[str, tuple[threading.Event, redis.Redis]] = {}
_threads: dict[str, bool] = {}
"""Whether each worker runs its tasks in a threads pool (in this process), by name."""
"""The stop switch of each worker's background threads, by worker name."""


@signals.task_received.connect
def _on_task_received(sender: Any = None, request: Any = None, **_: Any) -> None:
    """Record that this worker holds the message, before it waits in a buffer or a timer."""
    if request is None or request.name not in (RUN_CASE, RUN_BATCH):
        return
    job_ids = message_job_ids(request.name, request.args)
    if not job_ids:
        return  # not a job: the task itself will say so
    client = redis_client(sender.app.conf.evalrelay_redis_url)
    if isinstance(sender.pool, ThreadPool):  # the task runs in this process: see `holds`
        for job_id in job_ids:
            note_hold(client, request.hostname, job_id, request.id)
    else:
        hold(client, job_ids, request.id, process_name(client, request.hostname))


@signals.worker_init.connect
def _on_worker_init(**_: Any) -> None:
    preload_http_client()


def preload_http_client() -> None:
    """Import httpx, which every vendor SDK is built on, before the pool's threads start:
    SDKs import parts of themselves on first use, and two threads importing one module
    tree at once can see it half made ("partially initialized module 'httpx'"), failing
    a job. Nothing when no SDK is installed."""
    with contextlib.suppress(ImportError):
        importlib.import_module("httpx")


@signals.worker_ready.connect
def _on_worker_ready(sender: Any = None, **_: Any) -> None:
    remove_dead_homes()  # agent homes of this host's workers that are gone
    stopping.clear()  # a worker started again in this process runs its jobs
    released.clear()
    _threads[sender.hostname] = isinstance(sender.pool, ThreadPool)
    if _threads[sender.hostname]:
        job_slots[sender.hostname] = sender.pool.limit
    start_background(sender)


@signals.worker_process_shutdown.connect
def _on_process_shutdown(**_: Any) -> None:
    """A prefork child skips exit hooks: its agent homes go here."""
    remove_own_homes()


@signals.worker_shutting_down.connect
def _on_worker_shutting_down(sender: Any = None, how: str = "", **_: Any) -> None:
    """SIGTERM or Ctrl-C: the jobs this worker took and has not started go back at once."""
    entry = _background.get(str(sender))
    on_shutting_down(
        entry[1] if entry else None, str(sender), how, _threads.get(str(sender), False)
    )


@signals.worker_shutdown.connect
def _on_worker_shutdown(sender: Any = None, **_: Any) -> None:
    for name in list(_background):
        stop_background(name)


def start_background(consumer: Any) -> None:
    """Each worker reaps expired leases and reports itself for `evalrelay status`."""
    app = consumer.app
    client = redis_client(app.conf.evalrelay_redis_url)
    name = consumer.hostname
    queue = JobQueue(app, client)
    stopping = threading.Event()
    _background[name] = (stopping, client)

    Reaper(client, queue.send, owner=name, stopping=stopping).start()
    info: dict[str, Any] = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "queues": sorted(q.name for q in app.amqp.queues.consume_from.values())
        if app.amqp.queues.consume_from
        else list(QUEUES),
    }
    if TASK_QUEUE in info["queues"]:  # containers of this host's workers that are gone
        threading.Thread(target=remove_dead_workers_containers, daemon=True).start()
    threading.Thread(
        target=_report,
        args=(client, name, process_name(client, name), info, stopping),
        daemon=True,
        name="evalrelay-worker-heartbeat",
    ).start()


def stop_background(name: str) -> None:
    """Stop a worker's reaper and status heartbeat, and take it off `evalrelay status`."""
    entry = _background.pop(name, None)
    if entry is not None:
        stopping, client = entry
        stopping.set()
        # Redis going away is a usual reason for a worker to stop.
        with contextlib.suppress(redis.RedisError):
            client.hdel(workers_key(), name)
            process = forget_process(name)
            if process is not None:
                declare_dead(client, process)


def _report(
    client: redis.Redis, name: str, process: str, info: dict[str, Any], stopping: threading.Event
) -> None:
    seen = None  # this Redis's mark when the worker last looked
    while not stopping.is_set():
        try:
            keep_alive(client, process)
            beat(client, workers_key(), name, info)
            epoch = current_epoch(client)
            if seen is not None and epoch != seen:
                log.error(
                    "worker %s: Redis lost its data (it restarted empty, or evicted keys): "
                    "the jobs it held are gone; a `run` following its campaign, a `collect` "
                    "service and a watcher rebuild theirs, and `evalrelay status` names the "
                    "others to rebuild with `evalrelay resume`",
                    name,
                )
            seen = epoch
        except redis.RedisError as exc:
            log.warning("worker %s: status heartbeat failed: %s", name, exc)
        stopping.wait(WORKER_HEARTBEAT_SECONDS)


app = create_app()
