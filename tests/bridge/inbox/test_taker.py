"""Taking complete files in batches, with a real Redis and no watching.

Each test hands files that settled long ago straight to the watcher's `Taker`, as the
watcher does with the files complete at one turn, and checks what became of each.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.connection import client_for
from evalrelay.bridge.inbox.intake import IntakeRecord, drop_identity
from evalrelay.bridge.inbox.settle import Settler
from evalrelay.bridge.inbox.watcher import InboxEvent, Watcher
from evalrelay.bridge.keys import campaigns_key, intake_key, intake_lock_key
from evalrelay.bridge.queue.celery_queue import JobQueue
from tests.conftest import WriteFiles

CASE = "evalcases:\n  - id: {name}\n    input_messages: [{{role: user, content: hi {name}}}]\n"
BAD = "evalcases:\n  - id: x\n    input_mesages: []\n"


@pytest.fixture
def inbox(project: WriteFiles) -> Path:
    root = project({})
    (root / "inbox").mkdir()
    return root / "inbox"


def watcher_on(redis_url: str, inbox: Path, events: list[InboxEvent] | None = None) -> Watcher:
    return Watcher(
        client_for(redis_url),
        JobQueue.connect(redis_url),
        inbox,
        inbox.parent / "results",
        default_target="mock",
        on_event=(events if events is not None else []).append,
    )


def dropped(inbox: Path, name: str, text: str) -> Path:
    """A file written a minute ago: complete, whatever the settle period."""
    path = inbox / name
    path.write_text(text)
    a_minute_ago = time.time() - 60
    os.utime(path, (a_minute_ago, a_minute_ago))
    return path


def record_of(client: redis.Redis, path: Path) -> IntakeRecord:
    raw = client.get(intake_key(drop_identity(path.read_bytes(), None)))
    assert isinstance(raw, str), f"no record of {path.name}"
    return IntakeRecord.model_validate_json(raw)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.yaml"))


def test_each_file_of_a_batch_is_its_own_campaign_and_a_bad_one_fails_alone(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    events: list[InboxEvent] = []
    watcher = watcher_on(redis_url, inbox, events)
    good = [dropped(inbox, f"g{i}.yaml", CASE.format(name=f"g{i}")) for i in range(5)]
    bad = dropped(inbox, "bad.yaml", BAD)
    watcher.taker.take([*good[:2], bad, *good[2:]])
    assert names(inbox / "queued") == [f"g{i}.yaml" for i in range(5)]
    assert names(inbox / "failed") == ["bad.yaml"]
    errors = (inbox / "failed" / "bad.yaml.error.txt").read_text()
    assert f"{bad}:3:5: case 'x': unknown key 'input_mesages'" in errors
    assert "could not read" not in errors  # its own errors, not a crash of the loader
    assert client.zcard(campaigns_key()) == 5
    assert client.llen("api") == 5  # one job each, each sent once
    assert sorted((e.kind, e.file, e.jobs) for e in events) == [
        ("invalid", "bad.yaml", None),
        *(("queued", f"g{i}.yaml", 1) for i in range(5)),
    ]
    [refused] = [e for e in events if e.kind == "invalid"]
    assert refused.why is not None and "unknown key 'input_mesages'" in refused.why
    assert len({e.campaign_id for e in events if e.kind == "queued"}) == 5


def test_same_content_twice_in_one_batch_runs_once_and_the_copy_is_a_duplicate(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    watcher = watcher_on(redis_url, inbox)
    text = CASE.format(name="same")
    first, copy = dropped(inbox, "a.yaml", text), dropped(inbox, "b.yaml", text)
    watcher.taker.take([first, copy])
    assert names(inbox / "queued") == ["a.yaml"]
    assert names(inbox) == ["b.yaml"]  # left for the next batch
    watcher.taker.take(watcher.settler.complete())
    (campaign_id,) = [str(c) for c in client.zrange(campaigns_key(), 0, -1)]
    assert names(inbox / "done") == ["b.yaml"]
    assert campaign_id in (inbox / "done" / "b.yaml.duplicate.txt").read_text()
    assert client.llen("api") == 1


def test_a_file_another_watcher_holds_is_left_to_it(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    watcher = watcher_on(redis_url, inbox)
    held = dropped(inbox, "held.yaml", CASE.format(name="held"))
    free = dropped(inbox, "free.yaml", CASE.format(name="free"))
    lock = intake_lock_key(drop_identity(held.read_bytes(), None))
    client.set(lock, "another-watcher", ex=60)
    watcher.taker.take([held, free])
    assert names(inbox / "queued") == ["free.yaml"]
    assert names(inbox) == ["held.yaml"]
    assert client.get(lock) == "another-watcher"
    assert client.zcard(campaigns_key()) == 1


def test_batch_cut_short_after_sending_is_finished_as_the_same_campaigns(
    inbox: Path, client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis goes away once the jobs are sent: the files stay, their records name their
    campaigns, and the next try moves them on without sending any job again."""
    watcher = watcher_on(redis_url, inbox)
    paths = [dropped(inbox, f"c{i}.yaml", CASE.format(name=f"c{i}")) for i in range(3)]
    send = JobQueue.send

    def send_then_lose_redis(self: JobQueue, *args: object, **kwargs: object) -> int:
        sent = send(self, *args, **kwargs)  # type: ignore[arg-type]
        raise redis.ConnectionError("simulated: Redis went away after the send")
        return sent

    monkeypatch.setattr(JobQueue, "send", send_then_lose_redis)
    watcher.taker.take(paths)
    assert names(inbox) == ["c0.yaml", "c1.yaml", "c2.yaml"]
    records = {p.name: record_of(client, p) for p in paths}
    assert {r.state for r in records.values()} == {"submitting"}
    monkeypatch.setattr(JobQueue, "send", send)
    watcher.taker.take(paths)
    assert names(inbox / "queued") == ["c0.yaml", "c1.yaml", "c2.yaml"]
    assert sorted(client.zrange(campaigns_key(), 0, -1)) == sorted(
        r.campaign_id for r in records.values()
    )
    assert client.llen("api") == 3


def test_settler_says_when_its_first_file_may_be_complete(inbox: Path) -> None:
    settler = Settler(settle=2.0)
    assert settler.due_in() == float("inf")
    (inbox / "new.yaml").write_text(CASE.format(name="new"))
    settler.touched(inbox / "new.yaml")
    assert 0.0 < settler.due_in() <= 2.0
    settler.touched(dropped(inbox, "old.yaml", CASE.format(name="old")))
    assert settler.due_in() == 0.0  # found by a scan, long unchanged: complete now
