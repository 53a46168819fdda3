"""`evalrelay worker`: task events stay off until asked for, as Flower asks."""

from __future__ import annotations

import threading
from typing import Any

import redis
from celery import Celery

from bridge.keys import workers_key
from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for
from tests.worker.test_tasks import collect_all, submit_campaign


def task_events(app: Celery, seen: list[dict[str, Any]], stop: threading.Event) -> None:
    """Celery's own event receiver, the way Flower and `celery events` listen."""
    with app.connection_for_read() as connection:
        receiver = app.events.Receiver(connection, handlers={"*": seen.append}, app=app)
        while not stop.is_set():
            try:
                receiver.capture(limit=None, timeout=0.5, wakeup=False)
            except TimeoutError:
                continue


def test_flower_s_enable_events_turns_task_events_on(
    processes: Processes, client: redis.Redis, redis_url: str, project: WriteFiles
) -> None:
    processes.start("worker", "-n", "ev@host", "-c", "2", name="worker")
    wait_for(lambda: client.hexists(workers_key(), "ev@host"), 30, "the worker")
    app = Celery("watcher", broker=redis_url)
    seen: list[dict[str, Any]] = []
    stop = threading.Event()
    listening = threading.Thread(target=task_events, args=(app, seen, stop), daemon=True)
    listening.start()
    try:
        root = project({"evals.yaml": one_turn_cases(2)})
        collect_all(processes, client, submit_campaign(redis_url, root, 2, target="mock"), 60)
        assert not [e for e in seen if e["type"].startswith("task-")]

        app.control.enable_events(destination=["ev@host"])  # what Flower does every few s
        root = project({"more/evals.yaml": one_turn_cases(2, case_id="d{i}")})
        more = submit_campaign(redis_url, root / "more", 2, target="mock")
        collect_all(processes, client, more, 60)
        wait_for(lambda: [e for e in seen if e["type"] == "task-succeeded"], 10, "task events")
    finally:
        stop.set()
        listening.join(5)
