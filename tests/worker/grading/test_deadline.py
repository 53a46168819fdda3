"""Grading under a deadline: every evaluator stops by the job's `timeout_seconds`, counted
from the answer, and a worker holding a runaway grader stays responsive."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest
import redis

from evalrelay.bridge.evalfile.evaluators import CodeEvaluator, ContainsEvaluator, RegexEvaluator
from evalrelay.bridge.queue.campaigns import progress
from evalrelay.worker.grading.deadline import Deadline
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.grade import grade
from tests.conftest import FAST_RECOVERY, Processes, WriteFiles, direct_job, read_jsonl, wait_for
from tests.worker.test_tasks import submit_campaign

RUNAWAY = r"^(a|aa)+$"
"""Backtracks exponentially on a run of `a`s that ends in something else (the `regex`
package finds `^(a+)+$` at once, so the test uses a pattern it cannot shortcut)."""
ANSWER = "a" * 60 + "!"


def test_deadline_left_counts_down_and_then_refuses() -> None:
    deadline = Deadline.after(0.2)
    assert 0 < deadline.left("x") <= 0.2
    assert deadline.within(0.05, "x") == 0.05
    time.sleep(0.25)
    with pytest.raises(GradingError, match=r"evaluator x: grading ran past its time limit \(0.2 s"):
        deadline.left("x")


def test_runaway_regex_ends_as_grading_error_at_the_deadline() -> None:
    job = direct_job(evaluators=[RegexEvaluator(type="regex", pattern=RUNAWAY)])
    started = time.monotonic()
    verdict = grade(job, ANSWER, deadline=Deadline.after(1.0))
    took = time.monotonic() - started
    assert verdict is not None
    assert 0.9 <= took < 3, took
    assert verdict.score is None
    [failure] = verdict.failures
    assert "grading ran past its time limit (1 s" in failure
    assert "/^(a|aa)+$/" in failure and "backtracks without end" in failure


def test_evaluators_after_the_deadline_are_not_run_but_earlier_verdicts_stay() -> None:
    job = direct_job(
        evaluators=[
            ContainsEvaluator(type="contains", value="a"),
            RegexEvaluator(type="regex", pattern=RUNAWAY),
            ContainsEvaluator(type="contains", value="!", name="last"),
        ]
    )
    verdict = grade(job, ANSWER, deadline=Deadline.after(0.5))
    assert verdict is not None
    first, runaway, last = verdict.evaluator_results
    assert first.score == 1.0 and first.error is None
    assert runaway.error and "backtracks" in runaway.error
    assert last.score is None
    assert last.error == (
        "evaluator last: grading ran past its time limit (0.5 s, the job's timeout_seconds, "
        "counted from the answer)"
    )


def test_a_script_gets_only_the_time_left(tmp_path: Path) -> None:
    script = CodeEvaluator(type="code", script=["sleep", "30"], timeout_seconds=60)
    job = direct_job(evaluators=[script])
    started = time.monotonic()
    verdict = grade(job, "answer", deadline=Deadline.after(1.0))
    assert time.monotonic() - started < 10
    assert verdict is not None
    [failure] = verdict.failures
    assert failure.startswith("evaluator code: grading ran past its time limit (1 s")
    assert failure.endswith("while its script ran")


def test_runaway_regex_on_a_worker_ends_in_time_while_its_other_jobs_finish(
    project: WriteFiles, processes: Processes, client: redis.Redis, redis_url: str
) -> None:
    """The attack from the field: one case whose regex backtracks for hours. Its job ends
    as a grading_error at its 5 s deadline, run once (the lease kept renewed: lease 3 s,
    reaper every 0.5 s), while the same worker's 20 other jobs run meanwhile."""
    others = "\n".join(
        f"  - {{id: c{i}, input_messages: [{{role: user, content: 'b{i}'}}]}}" for i in range(20)
    )
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: echo, provider: mock, echo: true, "
            "latency_ms: 200}\n",
            "evals.yaml": f"evalcases:\n"
            f"  - id: runaway\n"
            f"    timeout_seconds: 5\n"
            f"    input_messages: [{{role: user, content: '{ANSWER}'}}]\n"
            f"    evaluators: [{{type: regex, pattern: '{RUNAWAY}'}}]\n"
            f"{others}\n",
        }
    )
    processes.worker(
        client, "graders@test", "--concurrency", "4", "--pool", "threads",
        extra_env=FAST_RECOVERY,
    )  # fmt: skip
    info = submit_campaign(redis_url, root, 21, target="echo")
    processes.start("collect", "--campaign", info.campaign_id, name="collector")
    wait_for(lambda: progress(client, info.campaign_id).finished, 60, "the campaign to finish")
    lines = read_jsonl(Path(info.out_dir) / f"{info.campaign_id}.jsonl")
    by_case = {line["case_id"]: line for line in lines}
    assert len(lines) == 21 == len(by_case)
    runaway = by_case.pop("runaway")
    assert runaway["status"] == "infra_error"
    assert runaway["error"]["kind"] == "grading_error"
    assert "grading ran past its time limit (5 s" in runaway["error"]["message"]
    assert runaway["answer"] == ANSWER  # the answer paid for is kept
    # Unbounded, this regex runs for hours; on two busy cores the search may be
    # stopped a few seconds after the deadline, never near that.
    assert 4500 <= runaway["artifacts"]["grading_ms"] < 20000
    assert runaway["attempt"] == 1 and not runaway["attempts"]  # never sent again
    assert processes.log("graders@test").count("lease lost") == 0
    graded_until = datetime.fromisoformat(runaway["finished_at"]).timestamp() + (
        runaway["artifacts"]["grading_ms"] / 1000
    )
    assert all(line["status"] == "ok" for line in by_case.values())
    # The worker's other jobs ran while the regex did: it let go of the GIL.
    assert all(
        datetime.fromisoformat(line["finished_at"]).timestamp() < graded_until
        for line in by_case.values()
    )
