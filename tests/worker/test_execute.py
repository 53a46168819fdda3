"""Every outcome of a provider call becomes a result, and no secret reaches it."""

from __future__ import annotations

import pytest

from bridge.evalfile.cases import load_eval_file
from bridge.queue.campaigns import plan_jobs
from bridge.queue.jobs import Job
from bridge.results.result import Status
from bridge.targets.settings import TargetSettings
from tests.conftest import WriteFiles
from worker.execute import execute
from worker.providers.base import Provider, ProviderOutput, register, unregister

TARGETS = """\
targets:
  - {name: leaky, provider: mock}
  - {name: needs-var, provider: mock, response: "${ANSWER_TEXT}"}
"""


def job(project: WriteFiles, target: str) -> Job:
    root = project(
        {
            "targets.yaml": TARGETS,
            "evals.yaml": "evalcases: [{id: a, input_messages: [{role: user, content: q}]}]\n",
        }
    )
    (planned,) = plan_jobs("c", [load_eval_file(root / "evals.yaml")], target, None)
    return planned


class LeakyProvider(Provider):
    def run(self, job: Job, deadline: float) -> ProviderOutput:
        raise RuntimeError("401 Unauthorized: key sk-test-123456 is invalid")


def test_unexpected_exception_is_an_infra_error_without_the_key(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")

    def factory(settings: TargetSettings) -> Provider:
        return LeakyProvider(settings)

    register(("mock",), factory)
    try:
        result = execute(job(project, "leaky"), "w")
    finally:
        unregister(("mock",))
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert result.error.message == "401 Unauthorized: key *** is invalid"
    assert "sk-test-123456" not in result.model_dump_json()


def test_variable_missing_on_the_worker_is_named_in_the_result(project: WriteFiles) -> None:
    result = execute(job(project, "needs-var"), "w")
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None
    assert "environment variable ANSWER_TEXT is not set on worker host" in result.error.message


def test_worker_variables_fill_the_target(
    project: WriteFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANSWER_TEXT", "from the worker")
    result = execute(job(project, "needs-var"), "w")
    assert (result.status, result.answer) == (Status.OK, "from the worker")
    assert result.raw_request.question == "q"


def test_the_cases_conversation_id_reaches_its_result(project: WriteFiles) -> None:
    root = project(
        {
            "targets.yaml": TARGETS,
            "evals.yaml": "evalcases: [{id: a, conversation_id: thread-7, "
            "input_messages: [{role: user, content: q}]}]\n",
        }
    )
    (planned,) = plan_jobs("c", [load_eval_file(root / "evals.yaml")], "leaky", None)
    assert execute(planned, "w").conversation_id == "thread-7"
