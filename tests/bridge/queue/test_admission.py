"""Admitting a call, on a real Redis: steering first, then the budget with the calls under
way reserved."""

from __future__ import annotations

import redis

from evalrelay.bridge.contract.campaign_state import cancel
from evalrelay.bridge.keys import compacted_key
from evalrelay.bridge.queue.admission import Admitted, admit, release
from evalrelay.bridge.queue.budget import budget_of, charge, set_budget
from evalrelay.bridge.queue.steering import pause, paused

EACH = 3450e-9
"""One call's cost, in dollars (3450 nanodollars)."""


def test_a_paused_or_cancelled_campaign_admits_no_call(client: redis.Redis) -> None:
    assert admit(client, "c", "j1", "w") is Admitted.FREE  # no budget: nothing reserved
    pause(client, "c", "by hand", "me")
    assert admit(client, "c", "j1", "w") is Admitted.PAUSED
    cancel(client, "c", ends=True)
    assert admit(client, "c", "j1", "w") is Admitted.CANCELLED


def test_a_late_copy_of_a_compacted_campaign_s_job_admits_no_call(client: redis.Redis) -> None:
    """A copy leased before its campaign completed (a stopped worker's, say) reaches its
    call after compaction: it must not pay for a line the campaign already has."""
    assert admit(client, "c", "j1", "w") is Admitted.FREE
    client.set(compacted_key("c"), "1")
    found = admit(client, "c", "j1", "w")
    assert found is Admitted.COMPACTED and found.stops


def test_the_first_call_runs_alone_then_calls_fit_by_the_mean_cost(client: redis.Redis) -> None:
    """Before any charge the request's estimate ($0.01, far above the real cost) does not
    fit: one call runs alone; once charged, as many run as the budget holds at the mean."""
    set_budget(client, "c", 3.5 * EACH, "me")
    assert admit(client, "c", "j1", "w") is Admitted.ESTIMATE
    assert admit(client, "c", "j1", "w", 0.01) is Admitted.RESERVED
    assert admit(client, "c", "j2", "w", 0.01) is Admitted.WAIT  # the first holds it all
    assert not charge(client, "c", EACH, "w", "j1")
    budget = budget_of(client, "c")
    assert budget is not None and budget.reserved_usd == 0 and budget.spent_usd == EACH
    assert admit(client, "c", "j2", "w") is Admitted.RESERVED  # the mean: no estimate asked
    assert admit(client, "c", "j3", "w") is Admitted.RESERVED
    assert admit(client, "c", "j4", "w") is Admitted.WAIT  # 1 spent + 2 held + 1 > 3.5
    assert release(client, "c", "j3")  # j3's call failed
    assert admit(client, "c", "j4", "w") is Admitted.RESERVED
    assert not charge(client, "c", EACH, "w", "j2")
    assert not charge(client, "c", EACH, "w", "j4")
    # 3 spent, 0.5 left: the next call at the mean would pass the limit.
    assert admit(client, "c", "j5", "w") is Admitted.BUDGET
    state = paused(client, "c")
    assert state is not None and state.reason == "budget reached"
    budget = budget_of(client, "c")
    assert budget is not None and budget.spent_usd <= 3.5 * EACH and budget.reserved_usd == 0


def test_a_retried_call_replaces_its_job_s_reservation(client: redis.Redis) -> None:
    set_budget(client, "c", 10 * EACH, "me")
    charge(client, "c", EACH, "w", "j0")
    for _ in range(3):
        assert admit(client, "c", "j1", "w") is Admitted.RESERVED
    budget = budget_of(client, "c")
    assert budget is not None and budget.reserved_usd == EACH
    charge(client, "c", None, "w", "j1")  # a result with no price only settles
    budget = budget_of(client, "c")
    assert budget is not None and budget.reserved_usd == 0 and budget.spent_usd == EACH
