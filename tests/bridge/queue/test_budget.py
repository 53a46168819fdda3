"""A campaign's budget, spent by two real workers against a loopback OpenAI-style server
that reports token usage: the fleet stops near the budget, `unpause --budget-usd` ends it."""

from __future__ import annotations

import json
import time

import pytest
import redis

from evalrelay.bridge.keys import inflight_key
from evalrelay.bridge.queue.budget import budget_of, charge, set_budget
from evalrelay.bridge.queue.campaigns import list_campaigns
from evalrelay.bridge.queue.steering import paused
from tests.bridge.cli.test_run import evalrelay
from tests.conftest import Processes, WriteFiles, one_turn_cases, read_jsonl, wait_for
from tests.worker.providers.vendor_server import Reply, openai_chat, serving

EACH = 11 * 0.15e-6 + 3 * 0.6e-6
"""One answer of the server (11 input, 3 output tokens) at gpt-4o-mini's prices."""

JOBS, COVERED, WORKERS, PER_WORKER = 20, 6, 2, 2


def test_the_charge_that_reaches_the_limit_pauses_once_and_counts_exactly(
    client: redis.Redis,
) -> None:
    set_budget(client, "c", 3 * EACH, "me@here")
    assert [charge(client, "c", EACH, "w") for _ in range(4)] == [False, False, True, False]
    state = paused(client, "c")
    assert state is not None and state.reason == "budget reached" and state.by == "w"
    budget = budget_of(client, "c")
    assert budget is not None and budget.spent_usd == round(4 * EACH, 9)
    assert not charge(client, "no-budget", EACH, "w")


def test_a_budget_for_n_calls_stops_two_workers_near_n_and_unpause_finishes_it(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    with serving(Reply(openai_chat(), delay=0.2)) as server:
        root = project(
            {
                "targets.yaml": f"""\
            targets:
              - {{name: mini, provider: openai-compatible, model: gpt-4o-mini,
                  base_url: "{server.url}/v1"}}
            """,
                "evals/e.yaml": one_turn_cases(JOBS),
            }
        )
        for name in ("a@test", "b@test"):
            processes.worker(
                client, name, "--concurrency", str(PER_WORKER), extra_env={"OPENAI_API_KEY": "k"}
            )
        evals, out = str(root / "evals/e.yaml"), str(root / "out")
        budget = f"{COVERED * EACH:.10f}"
        run = processes.start(
            "run", evals, "--target", "mini", "--out", out, "--budget-usd", budget, name="run"
        )
        wait_for(lambda: list_campaigns(client), 30, "the campaign")
        (info,) = list_campaigns(client)
        wait_for(lambda: paused(client, info.campaign_id), 60, "the budget to pause it")
        wait_for(lambda: client.zcard(inflight_key()) == 0, 10, "the calls under way")
        calls = len(server.seen)
        # Each call reserved the mean cost before it started: four could run at once, yet
        # exactly the calls the budget covers were made.
        assert calls == COVERED, calls
        spent = budget_of(client, info.campaign_id)
        assert spent is not None and spent.spent_usd <= spent.limit_usd
        time.sleep(1.5)  # ten more calls' time: none is made
        assert len(server.seen) == calls and run.poll() is None
        said = f"campaign {info.campaign_id} is paused: budget reached"
        wait_for(lambda: said in " ".join(processes.log("run").split()), 10, "run to say so")

        env = processes.env | {"COLUMNS": "250"}
        status = evalrelay("status", info.campaign_id, env=env, cwd=root)
        shown = " ".join(status.stdout.split())
        assert "budget reached" in shown and "spent of $" in shown, shown
        refused = evalrelay("unpause", info.campaign_id, env=processes.env, cwd=root)
        assert refused.returncode != 0 and "give a higher one" in refused.stderr, refused.stderr
        again = evalrelay("unpause", info.campaign_id, "--budget-usd", "1", env=env, cwd=root)
        assert again.returncode == 0, again.stderr
        assert run.wait(60) == 0, processes.log("run")
        assert len(server.seen) == JOBS  # none paid for twice
    lines = read_jsonl(next((root / "out").glob("*.jsonl")))
    assert len({line["job_id"] for line in lines}) == len(lines) == JOBS
    spent = budget_of(client, info.campaign_id)
    assert spent is not None and abs(spent.spent_usd - JOBS * EACH) < 1e-9


JUDGED_JOBS = 10
VERDICT = json.dumps({"score": 1.0, "hits": ["fine"], "misses": [], "reasoning": "Fine."})


def test_judge_calls_are_charged_with_their_answers_and_reach_the_budget(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """A budget the answers alone stay under (10 of 15 answers' worth) but answers and
    their judges reach (each job two calls): the campaign pauses before its end."""
    with serving(Reply(openai_chat(VERDICT), delay=0.1)) as server:
        cases = "\n".join(
            f"  - {{id: c{i}, input_messages: [{{role: user, content: q{i}}}], "
            f"evaluators: [{{type: llm_judge, target: judge}}]}}"
            for i in range(JUDGED_JOBS)
        )
        root = project(
            {
                "targets.yaml": f"""\
            targets:
              - {{name: mini, provider: openai-compatible, model: gpt-4o-mini,
                  base_url: "{server.url}/v1"}}
              - {{name: judge, provider: openai-compatible, model: gpt-4o-mini,
                  base_url: "{server.url}/v1"}}
            """,
                "evals/e.yaml": f"evalcases:\n{cases}\n",
            }
        )
        processes.worker(client, "a@test", "--concurrency", "1", extra_env={"OPENAI_API_KEY": "k"})
        evals, out = str(root / "evals/e.yaml"), str(root / "out")
        budget = f"{1.5 * JUDGED_JOBS * EACH:.10f}"
        run = processes.start(
            "run", evals, "--target", "mini", "--out", out, "--budget-usd", budget, name="run"
        )
        wait_for(lambda: list_campaigns(client), 30, "the campaign")
        (info,) = list_campaigns(client)
        wait_for(
            lambda: paused(client, info.campaign_id) or run.poll() is not None, 60, "the pause"
        )
        state = paused(client, info.campaign_id)
        assert state is not None and state.reason == "budget reached", processes.log("run")
        wait_for(lambda: client.zcard(inflight_key()) == 0, 10, "the call under way")
        spent = budget_of(client, info.campaign_id)
        # Paused before the call whose result (answer and judge) would pass the limit.
        assert spent is not None and spent.limit_usd - 2 * EACH < spent.spent_usd
        assert spent.spent_usd <= spent.limit_usd
        assert abs(spent.spent_usd - len(server.seen) * EACH) < 1e-9  # every call charged
        assert len(server.seen) < 2 * JUDGED_JOBS and run.poll() is None


def test_jobs_waiting_for_a_slot_start_no_call_the_budget_cannot_cover(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """The issue's campaign: a slow priced target with `max_concurrency: 2` and sixteen jobs
    begun at once, most of them waiting for a slot. Each call reserves its cost before it
    starts, so the calls stop at the budget (they once went on to twice it)."""
    covered = 10
    with serving(Reply(openai_chat(), delay=0.5)) as server:
        root = project(
            {
                "targets.yaml": f"""\
            targets:
              - {{name: mini, provider: openai-compatible, model: gpt-4o-mini,
                  base_url: "{server.url}/v1", max_concurrency: 2}}
            """,
                "evals/e.yaml": one_turn_cases(60),
            }
        )
        processes.worker(client, "a@test", "--concurrency", "16", extra_env={"OPENAI_API_KEY": "k"})
        evals, out = str(root / "evals/e.yaml"), str(root / "out")
        budget = f"{(covered + 0.5) * EACH:.10f}"
        run = processes.start(
            "run", evals, "--target", "mini", "--out", out, "--budget-usd", budget, name="run"
        )
        wait_for(lambda: list_campaigns(client), 30, "the campaign")
        (info,) = list_campaigns(client)
        wait_for(lambda: paused(client, info.campaign_id), 60, "the budget to pause it")
        wait_for(lambda: client.zcard(inflight_key()) == 0, 10, "the calls under way")
        time.sleep(1.5)  # three more calls' time at the cap: none is made
        assert len(server.seen) == covered
        spent = budget_of(client, info.campaign_id)
        assert spent is not None and spent.spent_usd == pytest.approx(covered * EACH, abs=1e-9)
        assert spent.spent_usd <= spent.limit_usd and spent.reserved_usd == 0
        assert run.poll() is None
