"""`evalrelay run promptfooconfig.yaml`: prompts x providers x tests as one campaign on a
real worker, the OpenAI provider served on loopback through the real SDK, and the
providers side by side in the report's matrix."""

from __future__ import annotations

import json
from pathlib import Path

import redis

from tests.bridge.cli.test_run import evalrelay, run
from tests.conftest import Processes, read_jsonl
from tests.worker.providers.vendor_server import Reply, openai_chat, serving

KEY = "sk-test-promptfoo-0123456789"

CONFIG = """\
description: capitals
outputPath: promptfoo-results.json
prompts:
  - "What is the capital of {{{{ country }}}}?"
  - file://prompts/terse.txt
providers:
  - id: openai:chat:gpt-test
    label: gpt
    config:
      apiBaseUrl: {url}/v1
      temperature: 0
  - echo
tests:
  - description: france
    vars: {{country: France}}
    assert:
      - {{type: icontains, value: paris}}
  - vars: {{country: Japan}}
    assert:
      - {{type: javascript, value: "output.length > 0"}}
"""


def test_prompts_times_providers_times_tests_in_one_campaign(
    tmp_path: Path, processes: Processes, client: redis.Redis
) -> None:
    root = tmp_path / "project"
    (root / "prompts").mkdir(parents=True)
    (root / "evalrelay.yaml").write_text("")
    (root / "prompts" / "terse.txt").write_text("Capital of {{ country }}, one word.")
    env = {**processes.env, "OPENAI_API_KEY": KEY}
    with serving(Reply(openai_chat("Paris"))) as server:
        (root / "promptfooconfig.yaml").write_text(CONFIG.format(url=server.url))
        processes.worker(client, "w1@pf", extra_env={"OPENAI_API_KEY": KEY})
        done = run("promptfooconfig.yaml", "--out", "out", "--name", "pf", env=env, cwd=root)
    assert done.returncode in (0, 1), done.stderr
    (jsonl,) = (root / "out").glob("*.jsonl")
    lines = read_jsonl(jsonl)
    assert len(lines) == 2 * 2 * 2
    assert {line["target"] for line in lines} == {"gpt", "echo"}
    assert {line["case_id"] for line in lines} == {
        "test-1-france__prompt_prompt-1",
        "test-1-france__prompt_terse",
        "test-2__prompt_prompt-1",
        "test-2__prompt_terse",
    }
    assert len({line["campaign_id"] for line in lines}) == 1
    questions = sorted(str(s.body["messages"][-1]["content"]) for s in server.seen)
    assert questions == [
        "Capital of France, one word.",
        "Capital of Japan, one word.",
        "What is the capital of France?",
        "What is the capital of Japan?",
    ]
    assert all(s.body["model"] == "gpt-test" for s in server.seen)
    by = {(line["case_id"], line["target"]): line for line in lines}
    assert by[("test-1-france__prompt_prompt-1", "gpt")]["passed"] is True
    assert by[("test-1-france__prompt_prompt-1", "echo")]["passed"] is False
    assert by[("test-2__prompt_terse", "echo")]["passed"] is True
    written = json.loads((root / "promptfoo-results.json").read_text())["results"]
    assert len(written["results"]) == 8
    assert written["stats"] == {"successes": 6, "failures": 2, "errors": 0}
    row = next(r for r in written["results"] if r["provider"]["id"] == "echo" and not r["success"])
    assert row["gradingResult"]["componentResults"][0]["assertion"]["type"] == "icontains"
    assert row["gradingResult"]["componentResults"][0]["pass"] is False
    shown = evalrelay("report", str(jsonl), "--out", "reports", env=env, cwd=root)
    assert shown.returncode == 0, shown.stderr
    (html,) = (root / "reports").glob("*.html")
    page = html.read_text()
    assert 'id="matrix"' in page
    assert all(f"test-{n}" in page for n in (1, 2)) and "gpt" in page and "echo" in page
    (markdown,) = (root / "reports").glob("*.md")
    assert "| echo | 4 | 2/4 |" in markdown.read_text()
    assert "| gpt | 4 | 4/4 |" in markdown.read_text()
