"""`run --estimate`: jobs, tokens and dollars per target, with nothing sent."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import redis

from tests.bridge.cli.test_run import run
from tests.conftest import Processes, WriteFiles, one_turn_cases
from tests.worker.providers.vendor_server import Reply, Seen, openai_chat, serving

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
    assert rows["echo"][0] == "10" and rows["echo"][3] == "unpriced"  # not $0.000000
    assert client.dbsize() == 0  # no campaign, no job, nothing queued


WORD = re.compile(r"\w+|[^\w\s]")
"""The loopback model's tokenizer: each word and each punctuation mark is a token, as a
BPE vocabulary's common English words are. The chat format adds 3 tokens a message and 3
to start the answer (OpenAI's documented count)."""

QA = [
    (
        "What is the capital of France, and which river runs through it?",
        "Paris; the Seine runs through it.",
        "The capital of France is Paris, and the river Seine runs through the city.",
    ),
    (
        "Explain in one sentence why the sky looks blue on a clear day.",
        "Air scatters short blue wavelengths of sunlight far more than red ones.",
        "Sunlight is scattered by the molecules of the air, and blue light, with its short "
        "wavelength, is scattered the most, so the sky looks blue.",
    ),
    (
        "Name the author of the novel Pride and Prejudice and the year it was published.",
        "Jane Austen, 1813.",
        "Pride and Prejudice was written by Jane Austen and published in 1813.",
    ),
    (
        "How many bones does an adult human body usually have? Answer with the number and "
        "a short note on why babies have more.",
        "206; several bones of a baby fuse together as it grows.",
        "An adult usually has 206 bones. Babies are born with around 270, and many of them "
        "fuse together during growth.",
    ),
]


def counted(text: str) -> int:
    return len(WORD.findall(text))


def answering(seen: Seen) -> tuple[dict[str, Any], dict[str, str]]:
    """The answer to the question asked, with usage counted from what was sent and said."""
    messages = seen.body["messages"]
    question = messages[-1]["content"]
    text = next(answer for asked, _, answer in QA if asked == question)
    prompt = sum(counted(m["content"]) + 3 for m in messages) + 3
    body = openai_chat(text)
    body["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": counted(text),
        "total_tokens": prompt + counted(text),
    }
    return body, {}


def qa_cases(repeats: int) -> str:
    lines = ["evalcases:"]
    for i in range(repeats):
        for n, (asked, expected, _) in enumerate(QA):
            lines += [
                f"  - id: c{i}-{n}",
                f"    input_messages: [{{role: user, content: {json.dumps(asked)}}}]",
                f"    expected_messages: [{{role: assistant, content: {json.dumps(expected)}}}]",
            ]
    return "\n".join(lines) + "\n"


def test_the_estimate_is_within_ten_percent_of_what_the_campaign_cost(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    with serving(Reply(None, made=answering)) as server:
        targets = (
            "targets:\n"
            "  - {name: mini, provider: openai-compatible, model: gpt-4o-mini,"
            f' base_url: "{server.url}/v1", max_tokens: 300}}\n'
        )
        root = project({"targets.yaml": targets, "evals/e.yaml": qa_cases(5)})
        env = {**processes.env, "COLUMNS": "200"}
        guessed = run("evals/e.yaml", "--target", "mini", "--estimate", env=env, cwd=root)
        assert guessed.returncode == 0, guessed.stderr
        (row,) = [line for line in guessed.stdout.splitlines() if "mini" in line]
        estimate = float(row.split("│")[-2].strip().strip("$"))
        processes.worker(client, "w@test", extra_env={"OPENAI_API_KEY": "k"})
        done = run("evals/e.yaml", "--target", "mini", "--out", "out", env=env, cwd=root)
        assert done.returncode == 0, done.stderr
        assert len(server.seen) == 5 * len(QA)
    (summary,) = (root / "out").glob("*.summary.json")
    cost = json.loads(summary.read_text())["cost_usd"]
    assert cost > 0
    assert abs(estimate - cost) <= 0.10 * cost, (estimate, cost)
