"""Following a campaign: a cluster run with no worker says so instead of waiting silently."""

from __future__ import annotations

import io
import json
import time
from datetime import UTC, datetime

import redis
from rich.console import Console

from bridge.cli.follow import pause_line, statistics_due, warn_without_workers
from bridge.keys import workers_key
from bridge.queue.campaigns import CampaignInfo
from bridge.queue.steering import Paused

INFO = CampaignInfo(
    campaign_id="c",
    created_at=datetime.now(UTC),
    sources=[],
    targets=["t"],
    total=1,
    out_dir="/tmp",
)


def test_warns_when_no_worker_reported_lately(client: redis.Redis) -> None:
    output = io.StringIO()
    client.hset(workers_key(), "old@host", json.dumps({"seen": time.time() - 600}))
    assert warn_without_workers(client, Console(file=output, width=200), INFO)
    assert "no worker has reported in the last 30 s" in output.getvalue()


def test_stays_quiet_while_a_worker_is_alive(client: redis.Redis) -> None:
    output = io.StringIO()
    client.hset(workers_key(), "w@host", json.dumps({"seen": time.time()}))
    assert not warn_without_workers(client, Console(file=output), INFO)
    assert output.getvalue() == ""


def test_warns_when_live_workers_serve_none_of_the_campaigns_queues(client: redis.Redis) -> None:
    """An `agent.cli` campaign with only `api` workers would wait for ever."""
    output = io.StringIO()
    info = INFO.model_copy(update={"queues": ["agent.cli", "api"]})
    client.hset(workers_key(), "w@host", json.dumps({"seen": time.time(), "queues": ["api"]}))
    assert warn_without_workers(client, Console(file=output, width=200), info)
    assert output.getvalue() == (
        "no live worker serves the queue agent.cli; start one with `evalrelay worker --queues "
        "agent.cli`, or run with --local-worker. Waiting.\n"
    )
    client.hset(workers_key(), "v@host", json.dumps({"seen": time.time(), "queues": ["agent.cli"]}))
    assert not warn_without_workers(client, Console(file=io.StringIO()), info)


def test_the_pause_line_says_why_and_how_to_go_on() -> None:
    budget = Paused(reason="budget reached", at=0.0, by="w@host")
    line = pause_line("c", budget)
    assert line.plain == (
        "campaign c is paused: budget reached. `evalrelay unpause c --budget-usd N` "
        "lets it go on with a higher budget"
    )
    assert line.style == "red"
    by_hand = Paused(reason="[bold]too slow:m:", at=0.0, by="me@here")  # never markup
    said = pause_line("c", by_hand).plain
    assert "([bold]too slow:m:, by me@here): `evalrelay unpause c`" in said
    assert pause_line("c", None).plain == "campaign c goes on"


def test_the_statistics_are_imported_at_once_for_a_small_campaign_else_near_its_end() -> None:
    assert statistics_due(0, 200, 0.0)  # small: at once, overlapping its few jobs
    assert not statistics_due(0, 3000, 0.0)  # nothing done yet: no rate to judge by
    assert not statistics_due(2000, 3000, 400.0)  # 2.5 s of jobs left
    assert statistics_due(2700, 3000, 400.0)  # under a second left
    assert statistics_due(3000, 3000, 400.0)
