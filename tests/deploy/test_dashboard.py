"""The Grafana dashboard (`deploy/grafana/evalrelay.json`) asks only for metrics `serve`'s
/metrics gives, each with labels it has."""

from __future__ import annotations

import json
import re

import redis

from evalrelay.bridge.live.metrics import ClusterMetrics
from tests.deploy.service_images import ROOT


def test_every_query_names_a_metric_and_labels_the_endpoint_gives(client: redis.Redis) -> None:
    families = {f.name: f for f in ClusterMetrics(client).collect()}
    given = {name + ("_total" if f.type == "counter" else "") for name, f in families.items()}
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "evalrelay.json").read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert queries
    for query in queries:
        names = set(re.findall(r"\bevalrelay_[a-z_]+", query))
        assert names and names <= given, (query, sorted(given))
    labels = {label for q in queries for label in re.findall(r"by \((\w+)\)", q)}
    assert labels <= {"queue", "status", "campaign", "target"}
