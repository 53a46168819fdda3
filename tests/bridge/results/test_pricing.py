"""A result's cost: the vendor's figure first, else its tokens priced by `genai-prices`;
summed per target into `summary.json`, from real results of a real worker."""

from __future__ import annotations

import json

import pytest
import redis

from evalrelay.bridge.results.pricing import cost_of
from evalrelay.bridge.results.result import Cost, Usage
from tests.bridge.cli.test_run import evalrelay, run
from tests.conftest import Processes, WriteFiles, one_turn_cases, read_jsonl
from tests.worker.providers.vendor_server import Reply, openai_chat, serving

MINI_INPUT, MINI_OUTPUT = 0.15e-6, 0.6e-6
"""gpt-4o-mini's dollars per token, as OpenAI lists them."""


def test_the_vendors_figure_wins_over_the_price_database() -> None:
    usage = Usage(input_tokens=1000, output_tokens=100)
    assert cost_of(usage, ["gpt-4o-mini"], 0.5) == Cost(usd=0.5, source="vendor")


def test_tokens_are_priced_and_cached_input_costs_less() -> None:
    plain = cost_of(Usage(input_tokens=1000, output_tokens=100), ["gpt-4o-mini"], None, "openai")
    assert plain is not None and plain.source == "genai-prices"
    assert plain.usd == pytest.approx(1000 * MINI_INPUT + 100 * MINI_OUTPUT)
    cached = cost_of(
        Usage(input_tokens=1000, output_tokens=100, cached_input_tokens=800), ["gpt-4o-mini"], None
    )
    assert cached is not None and cached.usd < plain.usd


def test_an_unknown_model_or_no_tokens_has_no_cost() -> None:
    assert cost_of(Usage(input_tokens=10, output_tokens=1), ["house-model-7"], None) is None
    assert cost_of(None, ["gpt-4o-mini"], None) is None


def test_the_first_model_the_database_knows_prices_the_answer() -> None:
    """A compatible server may answer under its own name (here `gpt-test`)."""
    usage = Usage(input_tokens=1000, output_tokens=0)
    found = cost_of(usage, ["gpt-test", None, "gpt-4o-mini"], None, "openai")
    assert found is not None and found.usd == pytest.approx(1000 * MINI_INPUT)


def test_each_result_and_each_target_in_the_summary_carry_their_cost(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    """The loopback server speaks OpenAI's wire protocol and reports 11 input and 3 output
    tokens a call, as the vendor does; it says nothing of dollars."""
    with serving(Reply(openai_chat())) as server:
        root = project(
            {
                "targets.yaml": f"""\
            targets:
              - {{name: mini, provider: openai-compatible, model: gpt-4o-mini,
                  base_url: "{server.url}/v1"}}
            """,
                "evals/e.yaml": one_turn_cases(5),
            }
        )
        processes.worker(client, "w@test", extra_env={"OPENAI_API_KEY": "sk-pricing-1"})
        done = run("evals/e.yaml", "--target", "mini", "--out", "out", env=processes.env, cwd=root)
    assert done.returncode == 0, done.stderr
    each = 11 * MINI_INPUT + 3 * MINI_OUTPUT
    lines = read_jsonl(next((root / "out").glob("*.jsonl")))
    assert [line["cost"] for line in lines] == [
        {"usd": pytest.approx(each), "source": "genai-prices"}
    ] * 5
    summary = json.loads(next((root / "out").glob("*.summary.json")).read_text())
    mini = summary["targets"]["mini"]
    assert (mini["input_tokens"], mini["output_tokens"], mini["unpriced"]) == (55, 15, 0)
    assert mini["cost_usd"] == pytest.approx(5 * each)
    assert summary["cost_usd"] == pytest.approx(5 * each)
    html = root / "report.html"
    reported = evalrelay("report", "latest", "--html", str(html), env=processes.env, cwd=root)
    assert reported.returncode == 0, reported.stderr
    page = html.read_text()
    assert '<td class="num cost" title="55 input, 15 output tokens">$1.7' in page, page
    per_dollar = mini["passed_per_dollar"]
    assert per_dollar == pytest.approx(mini["passed"] / (5 * each))
    assert f'<td class="num per-dollar">{per_dollar:.1f}</td>' in page
