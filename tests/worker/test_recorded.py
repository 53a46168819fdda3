"""A regrade job on the worker: its recorded answer stands in for the target, and what the
target did (an agent's trajectory, its workspace changes, a failure) is graded, or kept, as
recorded."""

from __future__ import annotations

from evalrelay.bridge.evalfile.evaluators import ToolTrajectoryEvaluator
from evalrelay.bridge.results.recorded import Recorded
from evalrelay.bridge.results.result import ErrorInfo, Status
from evalrelay.worker.execute import execute
from tests.bridge.reports.reporting import agent_run
from tests.conftest import direct_job

NEVER = {"name": "t", "provider": "mock", "failure_rate": 1.0, "failure_kind": "infra_error"}
"""A target that fails every call it gets: a regrade that called it would say so."""


def test_an_agents_recorded_steps_are_what_trajectory_evaluators_read() -> None:
    recorded = Recorded.of(agent_run("fix"))
    check = ToolTrajectoryEvaluator(
        type="tool_trajectory", mode="in_order", expected=[{"tool": "Read"}, {"tool": "Write"}]
    )
    job = direct_job(NEVER, recorded=recorded, evaluators=[check])
    result = execute(job, "w")
    assert result.status is Status.OK, result.error
    assert result.answer == "Answer to fix"
    assert result.score == 1.0
    assert result.trajectory == recorded.trajectory
    assert result.workspace_changes == recorded.workspace_changes
    assert result.regraded_from == "camp"
    assert result.duration_ms == recorded.duration_ms


def test_a_recorded_failure_stays_that_failure_ungraded() -> None:
    failed = agent_run("fix").model_copy(
        update={
            "status": Status.TIMEOUT,
            "answer": None,
            "error": ErrorInfo(kind="timeout", message="the job's time limit ran out"),
        }
    )
    job = direct_job(NEVER, recorded=Recorded.of(failed))
    result = execute(job, "w")
    assert result.status is Status.TIMEOUT
    assert result.error == failed.error
    assert result.score is None
    assert result.trajectory == failed.trajectory  # what the agent did until then
