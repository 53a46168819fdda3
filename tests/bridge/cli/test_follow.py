"""Following a campaign, as a command shows it: what to do when no worker serves it, and
why it is paused."""

from __future__ import annotations

from evalrelay.bridge.cli.follow import pause_line, unserved_text
from evalrelay.bridge.queue.following import Unserved
from evalrelay.bridge.queue.steering import Paused


def test_says_to_start_a_worker_when_none_reported_lately() -> None:
    said = unserved_text(Unserved(queues="api", any_alive=False))
    assert "no worker has reported in the last 30 s" in said


def test_names_the_queues_that_live_workers_do_not_serve() -> None:
    """An `agent.cli` campaign with only `api` workers would wait for ever."""
    assert unserved_text(Unserved(queues="agent.cli", any_alive=True)) == (
        "no live worker serves the queue agent.cli; start one with `evalrelay worker --queues "
        "agent.cli`, or run with --local-worker. Waiting."
    )


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
