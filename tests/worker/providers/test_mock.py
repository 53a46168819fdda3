"""The mock provider: canned, echoed and per-case answers, latency, injected failures."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import pytest
from pydantic import ValidationError

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.evaluators import LlmJudgeEvaluator, RubricEvaluator
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.settings import MockTarget
from evalrelay.worker.execute import execute
from evalrelay.worker.providers.base import ProviderFailure
from evalrelay.worker.providers.mock import MockProvider
from tests.conftest import WriteFiles, one_turn_cases, target_ref
from tests.conftest import direct_job as job

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


RULED_JUDGE = {
    "name": "judge",
    "provider": "mock",
    "judge": {
        "score": 0.2,
        "rules": [
            {"contains": "Paris", "score": 0.9},
            {"matches": r"(?i)\blyon\b", "score": 0.4},
        ],
    },
}


def judged(answer: str, judge: dict[str, Any], **update: Any) -> Job:
    """A job on a mock answering `answer`, graded by an `llm_judge` on `judge`."""
    return job(
        **{
            "target": target_ref({"name": "t", "provider": "mock", "response": answer}),
            "evaluators": [LlmJudgeEvaluator(type="llm_judge")],
            "judges": {"judge": target_ref(judge)},
            "default_judge": "judge",
            **update,
        }
    )


@pytest.mark.parametrize(
    ("answer", "score", "why"),
    [
        ("It is Paris.", 0.9, "mock judge: contains 'Paris'"),
        ("LYON, I think", 0.4, r"mock judge: matches /(?i)\blyon\b/"),
        ("No idea.", 0.2, "mock judge: no rule fits"),
    ],
)
def test_a_mock_judge_scores_the_candidate_answer_by_its_first_rule(
    answer: str, score: float, why: str
) -> None:
    graded = execute(judged(answer, RULED_JUDGE), "w")
    assert graded.status is Status.OK
    assert graded.score == score
    assert graded.evaluator_results[0].reasoning == why


def test_a_mock_judge_looks_only_at_the_answer_not_the_question() -> None:
    graded = execute(
        judged("No idea.", RULED_JUDGE, request=PromptRequest(question="Is it Paris?")), "w"
    )
    assert graded.score == 0.2


def test_a_mock_judge_meets_every_rubric_item_at_half_or_more_and_none_below() -> None:
    rubric = RubricEvaluator(type="rubric", rubrics=["names the city", "is polite"])
    met = execute(judged("Paris", RULED_JUDGE, evaluators=[rubric]), "w")
    unmet = execute(judged("Lyon", RULED_JUDGE, evaluators=[rubric]), "w")
    assert (met.score, met.passed) == (1.0, True)
    assert (unmet.score, unmet.passed) == (0.0, False)


def test_judge_true_still_finds_everything_right() -> None:
    graded = execute(judged("No idea.", {"name": "judge", "provider": "mock", "judge": True}), "w")
    assert graded.score == 1.0


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"score": 0.5}, "exactly one of `contains` or `matches`"),
        ({"contains": "a", "matches": "b", "score": 0.5}, "exactly one of"),
        ({"matches": "(", "score": 0.5}, "`matches` is not a valid regular expression"),
        ({"contains": "a", "score": 2}, "less than or equal to 1"),
    ],
)
def test_a_bad_mock_judge_rule_is_refused_saying_why(rule: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        MockTarget.model_validate({"name": "j", "provider": "mock", "judge": {"rules": [rule]}})


def test_on_an_event_loop_the_latency_is_a_wait_of_the_loop(two_jobs: list[Job]) -> None:
    """`arun`: 100 calls of 300 ms latency at once on one loop wait together (about
    300 ms, not 30 s), with no thread each, and answer as `run` does."""
    provider = mock(latency_ms=300, echo=True)

    async def hundred() -> tuple[list[str], float, int]:
        before = threading.active_count()
        started = time.monotonic()
        outputs = await asyncio.gather(
            *(provider.arun(two_jobs[1], time.monotonic() + 5) for _ in range(100))
        )
        return (
            [o.answer for o in outputs],
            time.monotonic() - started,
            threading.active_count() - before,
        )

    answers, took, more_threads = asyncio.run(hundred())
    assert (
        answers
        == ["last turn"] * 100
        == [provider.run(two_jobs[1], time.monotonic() + 5).answer] * 100
    )
    # Together, not one after another (30 s): a loaded CI machine took 0.84 s.
    assert took < 3.0
    assert more_threads == 0


def test_on_an_event_loop_latency_longer_than_the_deadline_is_a_timeout(
    two_jobs: list[Job],
) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderFailure) as failure:
        asyncio.run(mock(latency_ms=5000).arun(two_jobs[0], started + 0.2))
    assert failure.value.status is Status.TIMEOUT
    assert 0.15 < time.monotonic() - started < 1
