"""`serve`'s /metrics, scraped while a real worker and collector run a campaign: queue
depth, jobs leased, results by status (rate-limited ones included) and services alive,
parsed by prometheus_client's own parser as Prometheus would read them."""

from __future__ import annotations

from pathlib import Path

import redis
from prometheus_client.parser import text_string_to_metric_families

from evalrelay.bridge.keys import paid_again_key
from tests.bridge.cli.test_run import evalrelay
from tests.bridge.cli.test_serve import get, start_serve
from tests.conftest import Processes, WriteFiles, free_port, one_turn_cases, wait_for

SLOW = (
    "targets:\n  - {name: slow, provider: mock, latency_ms: 400, failure_rate: 0.25,"
    " failure_kind: rate_limited, cost_usd: 0.125}\n"
)
CASES = 40


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, headers, body = get(port, "/metrics")
    assert status == 200, body
    assert headers["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def test_metrics_follow_a_campaign_through_the_queue_workers_and_collector(
    project: WriteFiles, processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    root = project({"evalrelay.yaml": "", "targets.yaml": SLOW, "e.yaml": one_turn_cases(CASES)})
    results = root / "results"
    port = start_serve(processes, results).port
    submitted = evalrelay(
        "run", "e.yaml", "--target", "slow", "--detach", env=processes.env, cwd=root
    )
    assert submitted.returncode == 0, submitted.stderr
    campaign = submitted.stdout.strip()

    waiting = scrape(port)
    assert waiting[("evalrelay_queue_depth", (("queue", "api"),))] == CASES
    assert waiting[("evalrelay_campaign_jobs", (("campaign", campaign),))] == CASES
    assert waiting[("evalrelay_jobs_leased", ())] == 0

    processes.worker(client, "m1@test", "-c", "4")
    processes.start("collect", "--name", "c1", name="c1")

    def leased() -> bool:
        return scrape(port)[("evalrelay_jobs_leased", ())] > 0

    wait_for(leased, 60, "jobs leased by the worker")
    running = scrape(port)
    assert running[("evalrelay_queue_depth", (("queue", "api"),))] < CASES
    assert running[("evalrelay_jobs_in_flight", ())] >= running[("evalrelay_jobs_leased", ())]
    assert running[("evalrelay_service_up", (("name", "m1@test"), ("role", "worker")))] == 1

    def collected() -> float:
        found = scrape(port)
        return sum(v for (n, labels), v in found.items() if n == "evalrelay_results_total"
                   and ("campaign", campaign) in labels)  # fmt: skip

    wait_for(lambda: collected() == CASES, 90, "every result counted")
    done = scrape(port)
    ok = done[("evalrelay_results_total", (("campaign", campaign), ("status", "ok")))]
    limited = done[
        ("evalrelay_results_total", (("campaign", campaign), ("status", "rate_limited")))
    ]
    assert ok + limited == CASES and limited > 0
    # The same results per target, as the workers published them, and what the answers cost.
    assert done[("evalrelay_target_results_total", (("status", "ok"), ("target", "slow")))] == ok
    limited_here = (("status", "rate_limited"), ("target", "slow"))
    assert done[("evalrelay_target_results_total", limited_here)] == limited
    assert done[("evalrelay_target_cost_usd_total", (("target", "slow"),))] == 0.125 * ok
    assert done[("evalrelay_target_retries_total", (("target", "slow"),))] == 0
    assert done[("evalrelay_queue_depth", (("queue", "api"),))] == 0
    assert done[("evalrelay_service_up", (("name", "c1"), ("role", "collector")))] == 1
    paid = [n for (n, labels) in done if n == "evalrelay_campaign_paid_again_total"]
    assert not paid  # one call per job: nothing paid twice
    client.hset(paid_again_key(campaign), "duplicate", 2)  # as two copies' publications do
    again = (("campaign", campaign), ("why", "duplicate"))
    assert scrape(port)[("evalrelay_campaign_paid_again_total", again)] == 2


def test_metrics_say_503_while_redis_is_out_of_reach(processes: Processes, tmp_path: Path) -> None:
    dead = free_port()
    processes.env["EVALRELAY_REDIS_URL"] = f"redis://127.0.0.1:{dead}/0"
    port = start_serve(processes, tmp_path, name="serve-dead").port
    status, _, body = get(port, "/metrics")
    assert status == 503
    assert b"Redis is out of reach" in body
