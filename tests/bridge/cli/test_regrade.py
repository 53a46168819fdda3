"""`evalrelay regrade`: a finished campaign's recorded answers graded again with the eval
file's current evaluators, as a new campaign, through the queue and worker, with no call
to the target (a loopback OpenAI-style server counts them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalrelay.bridge.queue.rebuild import read_record, replan
from tests.bridge.cli.test_run import evalrelay, run
from tests.conftest import WriteFiles, embedded_env, free_port, read_jsonl
from tests.worker.providers.vendor_server import (
    Reply,
    Seen,
    openai_chat,
    openai_chat_tool_call,
    serving,
)

EVALS = """\
target: api
evalcases:
  - id: capital
    input_messages: [{role: user, content: Capital of France?}]
    evaluators: [{type: contains, value: Paris}]
  - id: weather
    input_messages: [{role: user, content: Weather in Rome?}]
    evaluators: [{type: contains, value: ""}]
  - id: judged
    input_messages: [{role: user, content: Say something.}]
    evaluators: [{type: contains, value: Paris}]
  - id: unreachable
    target: down
    input_messages: [{role: user, content: Anyone there?}]
  - id: talk
    mode: conversation
    input_messages: [{role: system, content: Be brief.}]
    turns:
      - input: first?
        evaluators: [{type: contains, value: Paris}]
      - input: second?
"""

NOW = {
    "value: Paris}]\n  - id: weather": "value: Lyon}]\n  - id: weather",
    '[{type: contains, value: ""}]': "[{type: tool_trajectory, mode: any_order, "
    "minimums: {weather: 1}}]",
    "[{type: contains, value: Paris}]\n  - id: unreachable": "[{type: llm_judge, target: judge}]"
    "\n  - id: unreachable",
    "      - input: second?\n": "      - input: second?\n"
    "        evaluators: [{type: contains, value: Rome}]\n",
}
"""The evaluators changed after the run: a check that fails now, a trajectory check of the
recorded tool call, an LLM judge, and a verdict for the conversation's second turn."""


def answer(seen: Seen) -> tuple[dict[str, Any], dict[str, str]]:
    if "Rome" in str(seen.body["messages"]):
        return openai_chat_tool_call("weather", {"city": "Rome"}), {}
    return openai_chat("Paris, I think"), {}


def targets(url: str) -> str:
    return f"""\
targets:
  - {{name: api, provider: openai-compatible, model: m, base_url: "{url}/v1", max_retries: 0}}
  - {{name: down, provider: openai-compatible, model: m, max_retries: 0,
      base_url: "http://127.0.0.1:{free_port()}/v1"}}
  - {{name: judge, provider: mock, judge: true}}
"""


def by_case(path: Path) -> dict[str, dict[str, Any]]:
    return {str(line["case_id"]): line for line in read_jsonl(path)}


def test_regrade_grades_the_recorded_answers_with_the_current_evaluators(
    project: WriteFiles, private_home: Path
) -> None:
    env = embedded_env(private_home)
    with serving(Reply(None, made=answer)) as server:
        root = project({"targets.yaml": targets(server.url), "evals/e.yaml": EVALS})
        done = run("evals/e.yaml", "--name", "before", env=env, cwd=root)
        assert done.returncode == 2, done.stderr  # `unreachable` got no answer
        calls = len(server.seen)
        assert calls == 5  # capital, weather, judged, and two turns
        text = (root / "evals/e.yaml").read_text()
        for old, new in NOW.items():
            assert old in text
            text = text.replace(old, new)
        (root / "evals/e.yaml").write_text(text)
        regraded = evalrelay("regrade", "before", env=env, cwd=root)
        assert len(server.seen) == calls, "regrade called the target"
    assert regraded.returncode == 2, regraded.stderr
    (before,) = (root / "results").glob("before-*.jsonl")
    said = " ".join(regraded.stderr.split())
    assert f"5 results of {before.stem} graded again, no target called" in said
    (after,) = (root / "results").glob("e-regrade-*.jsonl")
    old, new = by_case(before), by_case(after)
    assert new.keys() == old.keys()
    assert all(line["regraded_from"] == before.stem for line in new.values())
    assert {k: line["answer"] for k, line in new.items()} == {
        k: line["answer"] for k, line in old.items()
    }
    assert (old["capital"]["passed"], new["capital"]["passed"]) == (True, False)
    # the recorded tool call is what the trajectory check reads
    assert new["weather"]["evaluator_results"][0]["type"] == "tool_trajectory"  # type: ignore[index]
    assert new["weather"]["score"] == 1.0
    # LLM judges still run
    assert new["judged"]["evaluator_results"][0]["type"] == "llm_judge"  # type: ignore[index]
    assert new["judged"]["score"] == 1.0
    # no answer: its status, ungraded, as recorded
    assert new["unreachable"]["status"] == old["unreachable"]["status"] == "infra_error"
    assert new["unreachable"]["score"] is None
    # the conversation's recorded turns, graded by the turns' current evaluators
    turns = new["talk"]["turns"]
    assert isinstance(turns, list)
    assert [t["answer"] for t in turns] == [t["answer"] for t in old["talk"]["turns"]]  # type: ignore[union-attr]
    assert [t["passed"] for t in turns] == [True, False]
    assert new["talk"]["score"] == 0.5
    compared = evalrelay("compare", before.stem, after.stem, env=env, cwd=root)
    assert "capital" in compared.stdout and "regressed" in compared.stdout, compared.stdout
    # should Redis lose it, the regrade is planned again from the same recorded answers
    record = read_record(root / "results" / f"{after.stem}.campaign.json")
    _, jobs = replan(record.info)
    assert sorted(job.job_id for job in jobs) == sorted(str(r["job_id"]) for r in new.values())
    assert all(job.recorded and job.recorded.campaign_id == before.stem for job in jobs)
    # --case: only the matching cases are graded again, the others are not "left out"
    some = evalrelay(
        "regrade", "before", "--case", "cap*", "--case", "talk", "--name", "some", env=env, cwd=root
    )
    (only,) = (root / "results").glob("some-*.jsonl")
    assert by_case(only).keys() == {"capital", "talk"}, some.stderr
    assert "left out" not in some.stderr
    wrong = evalrelay("regrade", "before", "--case", "nope*", env=env, cwd=root)
    assert wrong.returncode == 1
    assert "no case matches --case nope*; the cases are capital, weather" in wrong.stderr


def test_regrade_of_an_unknown_campaign_says_so(project: WriteFiles, private_home: Path) -> None:
    root = project({"targets.yaml": targets("http://127.0.0.1:9"), "evals/e.yaml": EVALS})
    done = evalrelay("regrade", "nothing-like-this", env=embedded_env(private_home), cwd=root)
    assert done.returncode == 1
    assert "nothing-like-this" in done.stderr
