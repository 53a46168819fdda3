"""`llm_judge` against a loopback server speaking OpenAI's chat completions, through the
real SDK: good, malformed and out-of-range verdicts, and a judge that fails."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.evaluators import (
    ContainsEvaluator,
    LlmJudgeEvaluator,
    RubricEvaluator,
)
from evalrelay.bridge.results.result import Status
from evalrelay.bridge.results.summary import CampaignSummary
from evalrelay.worker.execute import execute
from evalrelay.worker.grading.errors import GradingError
from evalrelay.worker.grading.grade import grade
from evalrelay.worker.grading.judge import SYSTEM_PROMPT, judge
from tests.conftest import target_ref
from tests.worker.grading.test_grade import job
from tests.worker.providers.vendor_server import Reply, openai_chat, serving

GOOD = {"score": 0.9, "hits": ["names Paris"], "misses": [], "reasoning": "Right capital."}


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-test-key")


def judged_job(url: str, **update: Any) -> Job:
    settings = {
        "name": "judge",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "base_url": f"{url}/v1",
        "max_retries": 0,
    }
    return job(
        outcome="Names the capital of France",
        reference_answer="Paris",
        judges={"judge": target_ref(settings)},
        default_judge="judge",
        **update,
    )


def reply(verdict: object) -> Reply:
    return Reply(openai_chat(verdict if isinstance(verdict, str) else json.dumps(verdict)))


def sent(server: Any, index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = server.seen[index].body["messages"]
    return messages


def test_good_verdict_is_the_score_and_the_judge_sees_every_section() -> None:
    with serving(reply(GOOD)) as server:
        result = judge(
            LlmJudgeEvaluator(type="llm_judge"), "judge", judged_job(server.url), "Paris.", None
        )
    assert (result.score, result.hits, result.reasoning) == (0.9, ["names Paris"], "Right capital.")
    assert result.details == {"judge": "judge", "tries": 1, "model": "gpt-test"}
    system, user = sent(server, 0)
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["content"] == (
        "[[ ## expected_outcome ## ]]\nNames the capital of France\n\n"
        "[[ ## question ## ]]\nq\n\n"
        "[[ ## reference_answer ## ]]\nParis\n\n"
        "[[ ## candidate_answer ## ]]\nParis."
    )


def test_malformed_verdict_is_asked_for_again() -> None:
    with serving(reply("Looks right to me!"), reply(GOOD)) as server:
        result = judge(
            LlmJudgeEvaluator(type="llm_judge"), "judge", judged_job(server.url), "Paris", None
        )
    assert result.score == 0.9
    assert result.details["tries"] == 2
    assert result.details["rejected_replies"] == [
        {"reply": "Looks right to me!", "problem": "no JSON object in the reply"}
    ]
    assert sent(server, 1)[1]["content"].endswith(
        "Your previous reply could not be used (no JSON object in the reply). Reply with only "
        "the JSON object described above."
    )


def test_out_of_range_verdicts_end_in_a_grading_error_not_a_zero() -> None:
    with serving(reply({**GOOD, "score": 7})) as server, pytest.raises(GradingError) as raised:
        judge(LlmJudgeEvaluator(type="llm_judge"), "judge", judged_job(server.url), "Paris", None)
    assert len(server.seen) == 3
    assert str(raised.value) == (
        "evaluator judge: judge target 'judge' gave no valid verdict in 3 tries; last problem: "
        "score: Input should be less than or equal to 1"
    )


def test_a_verdict_of_the_wrong_shape_is_rejected() -> None:
    with serving(reply({"score": 0.5, "hits": "all of it"}), reply(GOOD)) as server:
        result = judge(
            LlmJudgeEvaluator(type="llm_judge"), "judge", judged_job(server.url), "x", None
        )
    assert result.details["rejected_replies"][0]["problem"] == "hits: Input should be a valid list"


def test_failing_judge_target_is_a_grading_error_naming_it() -> None:
    match = r"judge target 'judge' failed \(infra_error\)"
    with (
        serving(Reply({"error": {"message": "down"}}, status=500)) as server,
        pytest.raises(GradingError, match=match),
    ):
        judge(LlmJudgeEvaluator(type="llm_judge"), "judge", judged_job(server.url), "x", None)


def test_custom_prompt_with_placeholders_replaces_the_user_prompt() -> None:
    spec = LlmJudgeEvaluator(
        type="llm_judge", prompt="Grade ${candidate_answer} against ${reference_answer}."
    )
    with serving(reply(GOOD)) as server:
        judge(spec, "judge", judged_job(server.url), "Lyon", None)
    assert sent(server, 0)[1]["content"] == "Grade Lyon against Paris."
    custom_system = LlmJudgeEvaluator(type="llm_judge", prompt="You grade geography answers.")
    with serving(reply(GOOD)) as server:
        judge(custom_system, "judge", judged_job(server.url), "Lyon", None)
    system = sent(server, 0)[0]["content"]
    assert system.startswith("You grade geography answers.\n\n")
    assert "Reply with one JSON object" in system  # the reply format stays


def test_agentv_double_brace_placeholders_are_filled_and_unknown_ones_kept() -> None:
    spec = LlmJudgeEvaluator(
        type="llm_judge",
        prompt="Q: {{question}} A: {{ candidate_answer }} Ref: {{reference_answer}} "
        "Out: {{ output }} Keep: {{ nonsense }}",
    )
    with serving(reply(GOOD)) as server:
        judge(spec, "judge", judged_job(server.url), " Lyon ", None)
    messages = sent(server, 0)
    question = judged_job(server.url).request.question
    assert messages[1]["content"] == (
        f"Q: {question} A: Lyon Ref: Paris Out: Lyon Keep: {{{{ nonsense }}}}"
    )
    assert "Reply with one JSON object" in messages[0]["content"]


def test_rubric_scores_the_satisfied_weight_and_a_required_miss_fails_the_case() -> None:
    rubric = RubricEvaluator.model_validate(
        {
            "type": "rubric",
            "target": "judge",
            "rubrics": [
                {"id": "city", "outcome": "names the city", "weight": 3},
                {"description": "is polite", "required": False},
            ],
        }
    )
    checks = {
        "checks": [
            {"id": "city", "satisfied": True, "reasoning": "says Paris"},
            {"id": "rubric-2", "satisfied": False, "reasoning": "curt"},
        ],
        "overall_reasoning": "right but curt",
    }
    with serving(reply(checks)) as server:
        result = judge(rubric, "r", judged_job(server.url), "Paris.", None)
    assert result.score == 0.75  # 3 of 4 weight satisfied
    assert result.hits == ["[city] names the city: says Paris"]
    assert result.misses == ["[rubric-2] is polite: curt"]
    assert "required_unmet" not in result.details
    user = sent(server, 0)[1]["content"]
    assert "- [city] (REQUIRED) (weight: 3): names the city" in user
    assert "- [rubric-2]: is polite" in user
    unmet = {"checks": [{"id": "city", "satisfied": False}, {"id": "rubric-2", "satisfied": True}]}
    with serving(reply(unmet)) as server:
        graded = grade(judged_job(server.url, evaluators=[rubric]), "Lyon.")
    assert graded is not None and graded.score == 0.25 and graded.passed is False
    assert graded.misses[0] == "required rubric item city of rubric not met"


def test_execute_grades_with_the_default_judge_and_keeps_the_answer_on_failure() -> None:
    candidate = {"target": target_ref({"name": "t", "provider": "mock", "response": "Paris"})}
    with serving(reply(GOOD)) as server:
        graded = execute(judged_job(server.url, **candidate), "w")
    assert graded.status is Status.OK
    assert (graded.score, graded.passed, graded.hits) == (0.9, True, ["names Paris"])
    assert [e.name for e in graded.evaluator_results] == ["llm_judge"]
    assert graded.reference_answer == "Paris"

    with serving(reply("no idea")) as server:
        broken = execute(judged_job(server.url, **candidate), "w")
    assert broken.status is Status.INFRA_ERROR
    assert broken.error is not None and broken.error.kind == "grading_error"
    assert broken.answer == "Paris" and broken.score is None
    assert "sk-judge-test-key" not in broken.model_dump_json()


def test_a_failed_judge_keeps_the_other_verdicts_and_its_own_replies() -> None:
    candidate = {"target": target_ref({"name": "t", "provider": "mock", "response": "Paris"})}
    evaluators = [
        ContainsEvaluator(type="contains", value="Paris"),
        LlmJudgeEvaluator(type="llm_judge", target="judge"),
    ]
    with serving(reply("no idea")) as server:
        broken = execute(judged_job(server.url, evaluators=evaluators, **candidate), "w")
    assert broken.status is Status.INFRA_ERROR
    assert broken.error is not None and broken.error.kind == "grading_error"
    assert "gave no valid verdict in 3 tries" in broken.error.message
    assert broken.score is None and broken.passed is None
    contains, judged = broken.evaluator_results
    assert (contains.name, contains.score, contains.error) == ("contains", 1.0, None)
    assert judged.name == "llm_judge" and judged.score is None
    assert judged.error == broken.error.message
    replies = judged.details["rejected_replies"]
    assert [r["reply"] for r in replies] == ["no idea"] * 3
    assert {r["problem"] for r in replies} == {"no JSON object in the reply"}


def test_judge_tokens_and_dollars_are_kept_apart_from_the_targets_and_summed() -> None:
    """Two tries (a malformed reply, then a verdict) of 11 input and 3 output tokens each,
    at gpt-4o-mini's prices; the mock target costs nothing, and stays so."""
    candidate = {"target": target_ref({"name": "t", "provider": "mock", "response": "Paris"})}
    with serving(reply("Looks right to me!"), reply(GOOD)) as server:
        graded = execute(judged_job(server.url, **candidate), "w")
        priced = graded.model_copy(update={"job_id": "j2"})
    (judged,) = graded.evaluator_results
    assert judged.usage is not None
    assert (judged.usage.input_tokens, judged.usage.output_tokens) == (22, 6)
    usd = 22 * 0.15e-6 + 6 * 0.6e-6
    assert judged.cost is not None and abs(judged.cost.usd - usd) < 1e-12
    assert graded.judge_cost is not None and abs(graded.judge_cost.usd - usd) < 1e-12
    assert graded.judge_usage is not None and graded.judge_usage.input_tokens == 22
    assert graded.cost is None and graded.usage is None  # the target's own: nothing

    summary = CampaignSummary(campaign_id="c")
    summary.add(graded)
    summary.add(priced)
    written = summary.as_json()
    assert abs(float(written["judge_cost_usd"]) - 2 * usd) < 1e-12  # type: ignore[arg-type]
    assert written["cost_usd"] == 0.0


def test_under_promptfoo_grading_the_graders_pass_decides_and_a_threshold_too() -> None:
    """promptfoo's llm-rubric: the grader's `pass` (true when it gives none), failed below
    the assertion's threshold; the judge is asked for that reply."""
    cases = [
        ({"pass": True, "score": 0.6, "reason": "ok"}, None, (0.6, True)),
        ({"pass": False, "score": 0.9, "reason": "no"}, None, (0.9, False)),
        ({"pass": True, "score": 0.6, "reason": "ok"}, 0.7, (0.6, False)),
        ({"pass": True, "reason": "ok"}, None, (1.0, True)),
        ({"score": 0.2, "reason": "ok"}, None, (0.2, True)),
    ]
    for verdict, threshold, expected in cases:
        with serving(reply(verdict)) as server:
            spec = LlmJudgeEvaluator(type="llm_judge", min_score=threshold)
            graded = judge(spec, "judge", judged_job(server.url, grading="promptfoo"), "x", None)
        assert (graded.score, graded.passed) == expected, verdict
        assert '"pass": <true' in sent(server, 0)[0]["content"]
