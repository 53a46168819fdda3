"""`run --estimate`: jobs, tokens and dollars per target, with nothing sent."""

from __future__ import annotations

import os

import redis

from tests.bridge.cli.test_run import run
from tests.conftest import WriteFiles, one_turn_cases

TARGETS = """\
targets:
  - {name: mini, provider: openai-compatible, model: gpt-4o-mini,
     base_url: "http://127.0.0.1:9/v1", max_tokens: 100}
  - {name: echo, provider: mock, echo: true}
"""


def test_the_estimate_prices_each_target_and_sends_nothing(
    project: WriteFiles, client: redis.Redis, redis_url: str
) -> None:
    question = "x" * 396  # 400 characters of JSON around it, a hundred tokens
    root = project({"targets.yaml": TARGETS, "evals/e.yaml": one_turn_cases(10, question=question)})
    env = {**os.environ, "EVALRELAY_REDIS_URL": redis_url, "COLUMNS": "200"}
    done = run("evals/e.yaml", "--target", "mini,echo", "--estimate", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    rows = {
        cells[0]: cells[1:]
        for line in done.stdout.splitlines()
        if len(cells := [c.strip() for c in line.strip("│ ").split("│")]) == 5
    }
    jobs, tokens_in, tokens_out, dollars = rows["mini"]
    assert (jobs, tokens_out) == ("10", "1000")  # max_tokens a job
    assert 1000 <= int(tokens_in) <= 1300, tokens_in
    expected = int(tokens_in) * 0.15e-6 + 1000 * 0.6e-6
    assert abs(float(dollars.strip("$")) - expected) < 1e-6, dollars
    assert rows["echo"][0] == "10" and "10 unpriced" in rows["echo"][3]
    assert client.dbsize() == 0  # no campaign, no job, nothing queued
