"""The inbox watcher, with real file-system events and a real Redis.

Each test runs `Watcher` in a thread (or `evalrelay watch` processes) on a real inbox;
no worker is needed for a file to become a campaign, so most tests leave files in
`queued/`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.connection import client_for
from evalrelay.bridge.delivery.outstanding import carried_jobs
from evalrelay.bridge.inbox.taker import Taker
from evalrelay.bridge.inbox.watcher import InboxEvent, Watcher
from evalrelay.bridge.keys import campaigns_key, outstanding_key
from evalrelay.bridge.queue.campaigns import list_campaigns, load_info
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.rebuild import read_record, record_path
from evalrelay.bridge.results.manifest import listed_ids
from tests.conftest import (
    FAST_RECOVERY,
    HoldingRelay,
    PrivateRedis,
    Processes,
    WriteFiles,
    one_turn_cases,
    processes_on,
    read_jsonl,
    restart_empty,
    wait_for,
)

CASE = "evalcases:\n  - id: {name}\n    input_messages: [{{role: user, content: hi {name}}}]\n"


@pytest.fixture
def inbox(project: WriteFiles) -> Path:
    root = project({"targets.yaml": "targets:\n  - {name: fast, provider: mock}\n"})
    (root / "inbox").mkdir()
    return root / "inbox"


@contextmanager
def watching(
    client: redis.Redis, redis_url: str, inbox: Path, **options: object
) -> Iterator[Watcher]:
    watcher = Watcher(
        client,
        JobQueue.connect(redis_url),
        inbox,
        inbox.parent / "results",
        default_target="mock",
        **options,
    )  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        stop.set()
        thread.join(30)


def campaigns(client: redis.Redis) -> int:
    return int(client.zcard(campaigns_key()))


def files_in(folder: Path, pattern: str = "*.yaml") -> list[str]:
    return sorted(p.name for p in folder.rglob(pattern)) if folder.exists() else []


def taken_after_the_rest(client: redis.Redis, inbox: Path, campaigns_before: int) -> None:
    """Drop one more file and wait for its campaign: the watcher takes files in the order
    they settle, so whatever it would do with every file dropped before, it has done."""
    (inbox / "zz-last.yaml").write_text(CASE.format(name="zz-last"))
    wait_for(lambda: (inbox / "queued" / "zz-last.yaml").exists(), 60, "the last file queued")
    wait_for(lambda: campaigns(client) >= campaigns_before + 1, 60, "the last file's campaign")
    assert campaigns(client) == campaigns_before + 1


def test_file_written_slowly_is_taken_once_after_its_last_write(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    text = CASE.format(name="slow")
    with watching(client, redis_url, inbox):
        with (inbox / "slow.yaml").open("w") as handle:
            for start in range(0, len(text), 12):
                handle.write(text[start : start + 12])
                handle.flush()
                time.sleep(0.4)
            last_write = time.time()
        wait_for(lambda: campaigns(client) == 1, 20, "the campaign")
        (info,) = list_campaigns(client)
        taken_after_the_rest(client, inbox, 1)  # and never a second time
    assert info.created_at.timestamp() >= last_write
    assert files_in(inbox / "queued") == ["slow.yaml", "zz-last.yaml"]
    assert files_in(inbox / "failed") == []


def test_writer_that_closes_and_reopens_the_file_gets_it_taken_whole(
    inbox: Path, processes: Processes, client: redis.Redis
) -> None:
    """Each part alone is a valid eval file: taken at its first close, it would run with
    one case, and the second part would be left behind on its own."""
    processes.start("watch", str(inbox), "--target", "mock", "--name", "w", name="w")
    wait_for(lambda: client.hexists("evalrelay:watchers", "w"), 30, "the watcher")
    path = inbox / "parts.yaml"
    with path.open("w") as handle:
        handle.write("evalcases:\n" + CASE.format(name="first").split("\n", 1)[1])
    time.sleep(1.0)  # the writer closed the file; it opens it again to add the rest
    with path.open("a") as handle:
        handle.write(CASE.format(name="second").split("\n", 1)[1])
    wait_for(lambda: (inbox / "queued" / "parts.yaml").exists(), 30, "the file to be queued")
    (info,) = list_campaigns(client)
    taken_after_the_rest(client, inbox, 1)  # and no part taken on its own
    assert info.total == 2
    assert files_in(inbox) == ["parts.yaml", "zz-last.yaml"]  # nothing left in the inbox


def test_burst_of_500_files_each_becomes_one_campaign(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    with watching(client, redis_url, inbox):
        for i in range(500):
            (inbox / f"f{i:03}.yaml").write_text(CASE.format(name=f"f{i}"))
        wait_for(lambda: len(files_in(inbox / "queued")) == 500, 240, "500 files queued")
        taken_after_the_rest(client, inbox, 500)  # none of the 500 taken twice
    sources = {
        Path(load_info(client, i.campaign_id).sources[0]).name
        for i in list_campaigns(client, limit=1000)
    }
    assert sources == {f"f{i:03}.yaml" for i in range(500)} | {"zz-last.yaml"}
    assert files_in(inbox, "f*.yaml") == files_in(inbox / "queued", "f*.yaml")


def test_malformed_file_goes_to_failed_and_the_watcher_goes_on(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    with watching(client, redis_url, inbox):
        (inbox / "bad.yaml").write_text("evalcases:\n  - id: x\n    input_mesages: []\n")
        wait_for(lambda: (inbox / "failed" / "bad.yaml").exists(), 20, "bad.yaml in failed/")
        (inbox / "good.yaml").write_text(CASE.format(name="good"))
        wait_for(lambda: campaigns(client) == 1, 20, "the good file's campaign")
    errors = (inbox / "failed" / "bad.yaml.error.txt").read_text()
    assert f"{inbox}/bad.yaml:3:5: case 'x': unknown key 'input_mesages'" in errors


def test_file_present_before_start_is_taken(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    (inbox / "early.yaml").write_text(CASE.format(name="early"))
    with watching(client, redis_url, inbox):
        wait_for(lambda: campaigns(client) == 1, 20, "the campaign")
    assert files_in(inbox / "queued") == ["early.yaml"]


def test_restart_between_submit_and_move_submits_nothing_twice(
    inbox: Path, client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (inbox / "once.yaml").write_text(CASE.format(name="once"))
    original: Callable[..., str] = Taker._move_to_queued

    def crash(self: Taker, *args: object) -> str:
        raise OSError("simulated crash before the move")

    monkeypatch.setattr(Taker, "_move_to_queued", crash)
    with watching(client, redis_url, inbox):
        wait_for(lambda: campaigns(client) == 1, 20, "the first campaign")
    assert (inbox / "once.yaml").exists()
    monkeypatch.setattr(Taker, "_move_to_queued", original)
    with watching(client, redis_url, inbox):
        wait_for(lambda: (inbox / "queued" / "once.yaml").exists(), 20, "the file to be queued")
    assert campaigns(client) == 1


def test_same_content_again_is_not_a_second_campaign_unless_rerun(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    text = CASE.format(name="same")
    with watching(client, redis_url, inbox):
        (inbox / "one.yaml").write_text(text)
        wait_for(lambda: campaigns(client) == 1, 20, "the first campaign")
        (inbox / "two.yaml").write_text(text)
        wait_for(lambda: (inbox / "done" / "two.yaml.duplicate.txt").exists(), 20, "the duplicate")
        (inbox / "edited.yaml").write_text(text + "description: edited\n")
        wait_for(lambda: campaigns(client) == 2, 20, "the edited file's campaign")
    with watching(client, redis_url, inbox, rerun=True):
        (inbox / "three.yaml").write_text(text)
        wait_for(lambda: campaigns(client) == 3, 20, "a rerun campaign")
    assert (inbox / "done" / "two.yaml").exists()


def test_each_file_taken_and_each_duplicate_is_an_event_naming_its_campaign(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    events: list[InboxEvent] = []
    text = CASE.format(name="told")
    with watching(client, redis_url, inbox, on_event=events.append):
        (inbox / "fast").mkdir()
        (inbox / "fast" / "told.yaml").write_text(text)
        wait_for(lambda: len(events) == 1, 20, "the file's event")
        (inbox / "fast" / "again.yaml").write_text(text)
        wait_for(lambda: len(events) == 2, 20, "the duplicate's event")
    (campaign,) = list_campaigns(client)
    assert [(e.kind, e.file, e.campaign_id, e.jobs) for e in events] == [
        ("queued", "fast/told.yaml", campaign.campaign_id, 1),
        ("duplicate", "fast/again.yaml", campaign.campaign_id, None),
    ]


def test_subfolder_names_the_target_unless_the_file_does(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    with watching(client, redis_url, inbox):
        (inbox / "fast").mkdir()
        (inbox / "fast" / "a.yaml").write_text(CASE.format(name="a"))
        (inbox / "fast" / "b.yaml").write_text("target: mock\n" + CASE.format(name="b"))
        wait_for(lambda: campaigns(client) == 2, 20, "two campaigns")
    targets = {Path(i.sources[0]).name: i.targets for i in list_campaigns(client)}
    assert targets == {"a.yaml": ["fast"], "b.yaml": ["mock"]}
    assert files_in(inbox / "queued" / "fast") == ["a.yaml", "b.yaml"]


def test_hidden_temporary_and_ignored_files_are_left_alone(
    inbox: Path, client: redis.Redis, redis_url: str
) -> None:
    (inbox / ".evalrelayignore").write_text("drafts/\n*.draft.yaml\n")
    with watching(client, redis_url, inbox):
        for name in (".hidden.yaml", "x.yaml.tmp", "wip.draft.yaml", "drafts/d.yaml", "notes.txt"):
            (inbox / name).parent.mkdir(exist_ok=True)
            (inbox / name).write_text(CASE.format(name="ignored"))
        (inbox / "real.yaml").write_text(CASE.format(name="real"))
        wait_for(lambda: campaigns(client) == 1, 20, "the real file's campaign")
        taken_after_the_rest(client, inbox, 1)  # and none of the others
    for name in (".hidden.yaml", "x.yaml.tmp", "wip.draft.yaml", "drafts/d.yaml", "notes.txt"):
        assert (inbox / name).exists()


def test_symlink_pointing_outside_the_inbox_is_refused(
    inbox: Path, client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(CASE.format(name="outside"))
    with watching(client, redis_url, inbox):
        os.symlink(outside, inbox / "link.yaml")
        wait_for(lambda: (inbox / "failed" / "link.yaml.error.txt").exists(), 20, "the refusal")
    assert campaigns(client) == 0
    assert "outside the inbox" in (inbox / "failed" / "link.yaml.error.txt").read_text()
    assert outside.read_text() == CASE.format(name="outside")


def test_two_watcher_processes_on_one_inbox_never_both_submit(
    inbox: Path, processes: Processes, client: redis.Redis
) -> None:
    for name in ("w1", "w2"):
        processes.start("watch", str(inbox), "--target", "mock", "--name", name, name=name)
    wait_for(lambda: client.hlen("evalrelay:watchers") == 2, 30, "both watchers")
    for i in range(100):
        (inbox / f"d{i:02}.yaml").write_text(CASE.format(name=f"d{i}"))
    wait_for(lambda: len(files_in(inbox / "queued")) == 100, 120, "100 files queued")
    taken_after_the_rest(client, inbox, 100)  # none by both watchers
    after = time.time()

    def both_idle_since() -> dict[str, dict[str, float]] | None:
        reports = {n: json.loads(r) for n, r in client.hgetall("evalrelay:watchers").items()}
        idle = all(r["seen"] > after and r["backlog"] == 0 for r in reports.values())
        return reports if idle and len(reports) == 2 else None

    wait_for(both_idle_since, 30, "both watchers to report nothing left to take")
    reports = both_idle_since()
    assert reports is not None and sum(r["submitted"] for r in reports.values()) == 101
    assert campaigns(client) == 101
    assert files_in(inbox, "d*.yaml") == files_in(inbox / "queued", "d*.yaml")


def test_watch_on_the_embedded_default_runs_files_to_done(
    inbox: Path, processes: Processes, private_home: Path
) -> None:
    env = {k: v for k, v in processes.env.items() if k != "EVALRELAY_REDIS_URL"}
    processes.env = env
    processes.start("watch", str(inbox), "--target", "mock", name="embedded")
    (inbox / "run.yaml").write_text(CASE.format(name="run"))
    wait_for(lambda: (inbox / "done" / "run.yaml").exists(), 60, "run.yaml in done/")
    (jsonl,) = (inbox.parent / "results").glob("*.jsonl")
    assert '"answer":"Mock response"' in jsonl.read_text()


def test_files_moved_into_the_inbox_are_taken(
    inbox: Path, client: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    outside = tmp_path / "written-elsewhere.yaml"
    outside.write_text(CASE.format(name="moved-in"))
    with watching(client, redis_url, inbox):
        os.replace(outside, inbox / "moved-in.yaml")
        (inbox / ".renamed.yaml.tmp").write_text(CASE.format(name="renamed"))
        os.replace(inbox / ".renamed.yaml.tmp", inbox / "renamed.yaml")
        wait_for(lambda: campaigns(client) == 2, 20, "both campaigns")
    assert files_in(inbox / "queued") == ["moved-in.yaml", "renamed.yaml"]


def test_status_shows_the_watchers_health(
    inbox: Path, processes: Processes, client: redis.Redis
) -> None:
    processes.start("watch", str(inbox), "--target", "mock", "--name", "healthy", name="healthy")
    wait_for(lambda: client.hexists("evalrelay:watchers", "healthy"), 30, "the heartbeat")
    status = subprocess.run(
        [sys.executable, "-m", "evalrelay", "status"],
        env={**processes.env, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stderr
    assert "watchers" in status.stdout
    assert "healthy" in status.stdout
    assert str(inbox.resolve()) in status.stdout


def test_watcher_killed_mid_submission_is_finished_by_the_next_as_the_same_campaign(
    inbox: Path, processes: Processes, client: redis.Redis
) -> None:
    """SIGKILL while the jobs go out. The campaign was whole from the start (every job
    stored, and recorded as sent, before the campaign was announced); the restarted watcher
    finishes the file's submission as the same campaign, and the jobs that never went are
    sent by the reaper, once."""
    count = 3000
    cases = "".join(
        f"  - {{id: c{i}, input_messages: [{{role: user, content: '{'x' * 200} {i}'}}]}}\n"
        for i in range(count)
    )
    (inbox / "big.yaml").write_text("evalcases:\n" + cases)
    # The first watcher reaches Redis through a relay that holds it once its first
    # messages went out (a submission now takes a few tens of milliseconds).
    relay = HoldingRelay(processes.env["EVALRELAY_REDIS_URL"], b"LPUSH")
    try:
        first = processes.start(
            "watch", str(inbox), "--target", "mock", "--name", "w1", name="w1",
            extra_env={"EVALRELAY_REDIS_URL": relay.url},
        )  # fmt: skip
        wait_for(relay.held.is_set, 60, "the submission to be under way")
        wait_for(lambda: client.llen("api") > 0, 10, "its first messages to be queued")
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        relay.close()
    sent_before = client.llen("api")
    assert 0 < jobs_queued(client, "api") < count
    (campaign_id,) = client.zrange(campaigns_key(), 0, -1)
    assert len(list(listed_ids(client, campaign_id))) == count
    assert client.zcard(outstanding_key("api")) == count

    processes.start("watch", str(inbox), "--target", "mock", "--name", "w2", name="w2")
    wait_for(lambda: (inbox / "queued" / "big.yaml").exists(), 120, "the file to be queued")
    assert client.zrange(campaigns_key(), 0, -1) == [campaign_id]
    assert client.zcard(outstanding_key("api")) == count
    assert client.llen("api") == sent_before  # nothing sent twice
    assert "finishing the submission of campaign" in processes.log("w2")
    processes.worker(client, "w@test", "-c", "8", extra_env=FAST_RECOVERY)
    wait_for(lambda: (inbox / "done" / "big.yaml").exists(), 300, "the campaign to finish")
    lines = read_jsonl(inbox.parent / "results" / f"{campaign_id}.jsonl")
    assert sorted(str(line["case_id"]) for line in lines) == sorted(f"c{i}" for i in range(count))
    assert processes.log("w@test").count("this delivery is ignored") == 0


def jobs_queued(client: redis.Redis, queue: str) -> int:
    """How many jobs the messages on a queue carry (an API message carries a batch)."""
    return sum(len(carried_jobs(json.loads(raw))) for raw in client.lrange(queue, 0, -1))


SLOW_TARGET = "targets:\n  - {name: slow, provider: mock, latency_ms: 150}\n"


def unwrapped(text: str) -> str:
    """Without white space: the log's lines are wrapped, paths included."""
    return "".join(text.split())


def lines_in(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def status(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "status", *args],
        env={**env, "COLUMNS": "200"}, cwd=cwd, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_watched_campaign_is_rebuilt_from_its_queued_file_when_redis_restarts_empty(
    project: WriteFiles, forgetful_redis: PrivateRedis, private_home: Path, tmp_path: Path
) -> None:
    """A watcher and a worker on a Redis that keeps nothing. Restarted empty mid-campaign,
    the watcher rebuilds the campaign from the file in `queued/` and the results on disk:
    the jobs without a line run, none twice, and the file ends in `done/`."""
    jobs = 200
    root = project({"targets.yaml": SLOW_TARGET, "inbox/.keep": ""})
    inbox = root / "inbox"
    running = processes_on(forgetful_redis.url, private_home, tmp_path / "logs", FAST_RECOVERY)
    env = running.env
    text = one_turn_cases(jobs)
    try:
        running.start("worker", "-c", "4", name="worker")
        running.start("watch", str(inbox), "--target", "slow", "--name", "porter", name="watch")
        (inbox / "evals.yaml").write_text(text)
        wait_for(lambda: list((root / "results").glob("*.jsonl")), 60, "the results file")
        (results,) = (root / "results").glob("*.jsonl")
        campaign = results.name.removesuffix(".jsonl")
        wait_for(lambda: lines_in(results) >= 30, 60, "30 results")
        collected = lines_in(results)
        restart_empty(forgetful_redis)
        rebuilt = re.compile(
            rf"^evals\.yaml: campaign {re.escape(campaign)} rebuilt after Redis lost its data, "
            r"(\d+) results kept, (\d+) jobs queued again$",
            re.MULTILINE,
        )
        wait_for(lambda: rebuilt.search(running.log("watch")), 60, "the watcher to rebuild it")
        said_while_running = status(env, root)
        wait_for(lambda: (inbox / "done" / "evals.yaml").exists(), 120, "the file in done/")
        said_of_it = status(env, root, campaign)
        (inbox / "again.yaml").write_text(text)  # the same content: run once, even so
        wait_for(lambda: (inbox / "done" / "again.yaml").exists(), 60, "the copy in done/")
    finally:
        running.stop_all()
    lines = read_jsonl(results)
    assert len(lines) == jobs
    assert len({line["job_id"] for line in lines}) == jobs
    assert {line["status"] for line in lines} == {"ok"}
    assert (inbox / "done" / "evals.yaml").read_text() == text
    assert (inbox / "done" / "again.yaml.duplicate.txt").exists()
    assert not list((inbox / "failed").iterdir())

    found = rebuilt.search(running.log("watch"))
    assert found
    kept, sent = int(found[1]), int(found[2])
    assert kept >= collected
    assert kept + sent == jobs
    said = unwrapped(running.log("watch"))
    assert unwrapped("watcher porter: Redis lost its data (it restarted empty") in said
    assert (
        unwrapped(
            f"campaign {campaign} rebuilt from queued/evals.yaml and {results}: "
            f"{kept} results kept, {sent} jobs sent again"
        )
        in said
    )
    record = read_record(record_path(root / "results", campaign))
    assert record.dropped is not None
    assert (record.dropped.path, record.dropped.queued) == ("evals.yaml", "queued/evals.yaml")

    assert re.search(rf"{re.escape(campaign)}\s+│\s+\d+/{jobs} rebuilt", said_while_running)
    assert unwrapped(
        f"by porter, after Redis lost its data: {kept} results kept, {sent} jobs sent again"
    ) in unwrapped(said_of_it)


def test_queued_file_whose_campaign_redis_lost_and_no_record_keeps_goes_to_failed(
    inbox: Path, forgetful_redis: PrivateRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing to rebuild it from, the watcher says so instead of waiting for ever."""
    monkeypatch.setattr("evalrelay.bridge.inbox.watcher.RESCAN_SECONDS", 0.5)
    client = client_for(forgetful_redis.url)
    with watching(client, forgetful_redis.url, inbox):
        (inbox / "forgotten.yaml").write_text(CASE.format(name="forgotten"))
        wait_for(lambda: (inbox / "queued" / "forgotten.yaml").exists(), 20, "queued")
        (record,) = (inbox.parent / "results").glob("*.campaign.json")
        record.unlink()
        restart_empty(forgetful_redis)
        wait_for(lambda: (inbox / "failed" / "forgotten.yaml").exists(), 30, "failed/")
    said = (inbox / "failed" / "forgotten.yaml.error.txt").read_text()
    assert "Redis no longer has its campaign" in said
    assert "keeps no record of it to rebuild it from" in said
    assert "Drop the file again to run it anew" in said


def test_queued_file_configured_from_inside_the_inbox_is_not_rebuilt(
    inbox: Path, forgetful_redis: PrivateRedis
) -> None:
    """A targets file put in the inbox once the file was queued would give its target
    another meaning: the rebuild reads the operator's configuration only, and refuses."""
    client = client_for(forgetful_redis.url)
    with watching(client, forgetful_redis.url, inbox):
        (inbox / "forgotten.yaml").write_text(CASE.format(name="forgotten"))
        wait_for(lambda: (inbox / "queued" / "forgotten.yaml").exists(), 20, "queued")
        (inbox / "targets.yaml").write_text(
            "targets:\n  - {name: mock, provider: cli, command: [touch, pwned]}\n"
        )
        restart_empty(forgetful_redis)
        wait_for(lambda: (inbox / "failed" / "forgotten.yaml").exists(), 30, "failed/")
    said = (inbox / "failed" / "forgotten.yaml.error.txt").read_text()
    assert "Redis lost its data" in said
    assert "it could not be rebuilt from this file" in said
    assert "targets.yaml in the inbox would configure this file" in said
    assert campaigns(client) == 0


def test_the_watch_console_says_why_a_file_failed_and_how_many_passed(
    inbox: Path, processes: Processes, private_home: Path
) -> None:
    """What someone watching `evalrelay watch` sees: an invalid file's problems, not only
    that it moved, and a finished file's passed count beside its statuses."""
    processes.env = {k: v for k, v in processes.env.items() if k != "EVALRELAY_REDIS_URL"}
    processes.start("watch", str(inbox), "--target", "mock", name="console")
    graded = (
        "evalcases:\n"
        "  - id: yes\n    input_messages: [{role: user, content: hi}]\n"
        "    evaluators: [{name: says, type: contains, value: Mock}]\n"
        "  - id: no\n    input_messages: [{role: user, content: hi}]\n"
        "    evaluators: [{name: says, type: contains, value: absent}]\n"
    )
    (inbox / "graded.yaml").write_text(graded)
    (inbox / "broken.yaml").write_text(graded.replace("type: contains", "type: contians", 1))
    wait_for(lambda: (inbox / "done" / "graded.yaml").exists(), 60, "graded.yaml in done/")
    wait_for(lambda: "broken.yaml: not run" in processes.log("console"), 30, "the refusal")
    said = processes.log("console")
    assert "broken.yaml: not run, moved to failed/" in said
    assert "unknown type 'contians'; did you mean 'contains'?" in said
    assert re.search(
        r"graded\.yaml: campaign \S+ complete, 2 results \(1 of 2 graded passed; ok 2\)", said
    )
