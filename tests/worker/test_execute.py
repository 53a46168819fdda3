"""Every outcome of a provider call becomes a result, and no secret reaches it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.evaluators import CodeEvaluator
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.settings import TargetSettings
from evalrelay.worker.execute import execute, secret_names
from evalrelay.worker.providers.base import Provider, ProviderOutput, register, unregister
from tests.conftest import WriteFiles, direct_job

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


SECRET = "acme-4f8a91c2d7e6b305"
"""Held in a variable whose name does not look secret: only the target says it is one."""


class EchoingProvider(Provider):
    """Fails with the value of ACME_LOGIN in its message, twice, as a vendor echoing it might."""

    def run(self, job: Job, deadline: float) -> ProviderOutput:
        raise RuntimeError(f"refused {SECRET}; retry with {SECRET}")


@pytest.mark.parametrize(
    "settings",
    [
        {"name": "t", "provider": "openai", "model": "m", "api_key": "${ACME_LOGIN}"},
        {"name": "t", "provider": "openai", "model": "m", "api_key": "${{ ACME_LOGIN }}"},
        {"name": "t", "provider": "claude-code", "env": {"VENDOR_USER": "u:${ACME_LOGIN}"}},
    ],
    ids=["api_key", "agentv_api_key", "agent_env"],
)
def test_a_variable_the_target_names_is_masked_everywhere(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, object]
) -> None:
    monkeypatch.setenv("ACME_LOGIN", SECRET)
    job_ = direct_job(settings)
    assert "ACME_LOGIN" in secret_names(job_)
    kinds = (job_.target.kind,)
    register(kinds, EchoingProvider)
    try:
        result = execute(job_, "w")
    finally:
        unregister(kinds)
    assert result.error is not None
    assert result.error.message == "refused ***; retry with ***"
    assert SECRET[:8] not in result.model_dump_json()


def test_a_grading_error_is_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    (tmp_path / "grader.py").write_text(f"import sys\nsys.exit('grader saw {SECRET}')\n")
    spec = CodeEvaluator(type="code", script=[sys.executable, "grader.py"], cwd=str(tmp_path))
    result = execute(direct_job(evaluators=[spec]), "w")
    assert (result.status, result.error is not None) == (Status.INFRA_ERROR, True)
    assert result.error is not None and result.error.kind == "grading_error"
    assert result.error.message == "evaluator code: script exited with code 1: grader saw ***"
    assert result.evaluator_results[0].error == result.error.message
    assert SECRET[:8] not in result.model_dump_json()
