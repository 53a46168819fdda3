"""Prometheus metrics of the cluster, read from Redis at each scrape (`serve`'s /metrics).

Nothing is counted in this process: every figure is what Redis holds when Prometheus
asks, so any number of `serve` processes give the same answer, and one restarted loses
nothing. Results are counters per campaign and status (`rate()` gives results per second
by status; `rate_limited` is the 429s), and per target as the workers publish them, with
the attempts past a job's first and the dollars answers cost; services are up when they
reported within `EVALRELAY_ALIVE_SECONDS`, on Redis's clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import redis
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from evalrelay.bridge.clock import now_seconds
from evalrelay.bridge.contract.names import QUEUES
from evalrelay.bridge.delivery.holders import ALIVE_SECONDS
from evalrelay.bridge.keys import (
    collectors_key,
    holders_key,
    inflight_key,
    tallied_targets_key,
    target_tally_key,
    watchers_key,
    workers_key,
)
from evalrelay.bridge.queue.campaigns import list_campaigns, progress_many
from evalrelay.bridge.results.paid import paid_again_many

SERVICES = {"worker": workers_key, "watcher": watchers_key, "collector": collectors_key}


class ClusterMetrics(Collector):
    """Queue depths, jobs held and leased, results by campaign and status, services' age."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def collect(self) -> Iterator[Metric]:
        client = self.client
        depth = GaugeMetricFamily(
            "evalrelay_queue_depth", "Jobs waiting on each queue.", labels=["queue"]
        )
        for queue in QUEUES:
            depth.add_metric([queue], client.llen(queue))
        yield depth
        yield GaugeMetricFamily(
            "evalrelay_jobs_leased",
            "Jobs a worker holds a lease on: running now.",
            value=client.zcard(inflight_key()),
        )
        yield GaugeMetricFamily(
            "evalrelay_jobs_in_flight",
            "Jobs taken from a queue by a worker (prefetched, waiting or running).",
            value=client.hlen(holders_key()),
        )
        yield from self._campaigns()
        yield from self._targets()
        yield from self._services()

    def _campaigns(self) -> Iterator[Metric]:
        infos = list_campaigns(self.client, limit=None)
        states = progress_many(self.client, [i.campaign_id for i in infos])
        results = CounterMetricFamily(
            "evalrelay_results",
            "Results collected, by campaign and status (rate_limited: HTTP 429s).",
            labels=["campaign", "status"],
        )
        jobs = GaugeMetricFamily(
            "evalrelay_campaign_jobs", "Jobs in each campaign Redis holds.", labels=["campaign"]
        )
        again = CounterMetricFamily(
            "evalrelay_campaign_paid_again",
            "Target calls past one per job, by campaign and why (duplicate: a copy sent "
            "again ran to its end; late copy: after the campaign was complete; retry: asked).",
            labels=["campaign", "why"],
        )
        paid = paid_again_many(self.client, list(states))
        for campaign_id, state in states.items():
            jobs.add_metric([campaign_id], state.total)
            for status, number in sorted(state.counts.items()):
                results.add_metric([campaign_id, status], number)
            for why, number in sorted(paid[campaign_id].items()):
                again.add_metric([campaign_id, why], number)
        yield results
        yield jobs
        yield again

    def _targets(self) -> Iterator[Metric]:
        results = CounterMetricFamily(
            "evalrelay_target_results",
            "Results published, by target and status (rate_limited: HTTP 429s that ended a job).",
            labels=["target", "status"],
        )
        retries = CounterMetricFamily(
            "evalrelay_target_retries",
            "Results of a job's second or later attempt (retry, resume), by target.",
            labels=["target"],
        )
        cost = CounterMetricFamily(
            "evalrelay_target_cost_usd",
            "Dollars the targets' answers cost, as the vendor said or priced from tokens.",
            labels=["target"],
        )
        for target in sorted(str(t) for t in self.client.smembers(tallied_targets_key())):
            tally = {str(k): v for k, v in self.client.hgetall(target_tally_key(target)).items()}
            retries.add_metric([target], int(tally.pop("retries", 0)))
            cost.add_metric([target], float(tally.pop("cost_usd", 0.0)))
            for status, number in sorted(tally.items()):
                results.add_metric([target, status], int(number))
        yield results
        yield retries
        yield cost

    def _services(self) -> Iterator[Metric]:
        now = now_seconds(self.client)
        up = GaugeMetricFamily(
            "evalrelay_service_up",
            f"1 when the service reported within {ALIVE_SECONDS:.0f} s.",
            labels=["role", "name"],
        )
        age = GaugeMetricFamily(
            "evalrelay_service_last_seen_seconds",
            "Seconds since the service last reported, by Redis's clock.",
            labels=["role", "name"],
        )
        for role, key in SERVICES.items():
            for name, raw in sorted(self.client.hgetall(key()).items()):
                seconds = max(0.0, now - float(json.loads(raw).get("seen", 0)))
                up.add_metric([role, str(name)], 1.0 if seconds < ALIVE_SECONDS else 0.0)
                age.add_metric([role, str(name)], seconds)
        yield up
        yield age


def registry_for(client: redis.Redis) -> CollectorRegistry:
    """A registry of only the cluster's metrics (no process metrics of this `serve`)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ClusterMetrics(client))
    return registry
