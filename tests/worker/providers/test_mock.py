"""The mock provider: canned, echoed and per-case answers, latency, injected failures."""

from __future__ import annotations

import time

import pytest

from bridge.evalfile.cases import load_eval_file
from bridge.queue.campaigns import plan_jobs
from bridge.queue.jobs import Job
from bridge.results.result import Status
from bridge.targets.settings import MockTarget
from tests.conftest import WriteFiles, one_turn_cases
from worker.providers.base import ProviderFailure
from worker.providers.mock import MockProvider

CASES = """\
evalcases:
  - id: single
    input_messages: [{role: user, content: only turn}]
  - id: multi
    input_messages:
      - {role: user, content: first}
      - {role: assistant, content: reply}
      - {role: user, content: last turn}
"""


@pytest.fixture
def two_jobs(project: WriteFiles) -> list[Job]:
    root = project({"evals.yaml": CASES})
    return plan_jobs("c", [load_eval_file(root / "evals.yaml")], "mock", None)


def mock(**settings: object) -> MockProvider:
    return MockProvider(MockTarget.model_validate({"name": "m", "provider": "mock", **settings}))


def test_canned_echo_and_per_case_answers(two_jobs: list[Job]) -> None:
    single, multi = two_jobs
    far = time.monotonic() + 10
    assert mock().run(single, far).answer == "Mock response"
    assert mock(echo=True).run(single, far).answer == "only turn"
    assert mock(echo=True).run(multi, far).answer == "last turn"
    assert mock(responses={"multi": "special"}, response="x").run(multi, far).answer == "special"


def test_latency_longer_than_the_deadline_is_a_timeout(two_jobs: list[Job]) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderFailure) as failure:
        mock(latency_ms=5000).run(two_jobs[0], started + 0.2)
    assert failure.value.status is Status.TIMEOUT
    assert time.monotonic() - started < 1


def test_injected_failures_are_reproducible_per_attempt(project: WriteFiles) -> None:
    root = project({"many.yaml": one_turn_cases(200)})
    jobs = plan_jobs("c", [load_eval_file(root / "many.yaml")], "mock", None)
    provider = mock(failure_rate=0.3, failure_kind="rate_limited")

    def failed(job: Job) -> bool:
        try:
            provider.run(job, time.monotonic() + 10)
        except ProviderFailure as failure:
            assert failure.status is Status.RATE_LIMITED
            return True
        return False

    first = [failed(job) for job in jobs]
    assert first == [failed(job) for job in jobs]
    assert 30 < sum(first) < 90
    retried = [failed(job.model_copy(update={"attempt": 2})) for job in jobs]
    assert retried != first
