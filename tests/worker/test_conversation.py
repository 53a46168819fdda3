"""Conversation mode on the worker: each turn goes to a loopback OpenAI-style server with
the model's own earlier answers as history, each answer gets its own verdict, and the
case's score aggregates them as AgentV does."""

from __future__ import annotations

import sys
from typing import Any

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.evaluators import CodeEvaluator
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.results.result import Status
from evalrelay.worker.execute import execute
from tests.conftest import WriteFiles
from tests.worker.providers.vendor_server import Reply, Seen, openai_chat, serving

CONVERSATION = """\
evalcases:
  - id: talk
    input_messages: [{{role: system, content: Count the questions.}}]
    mode: conversation
{options}
    turns:
      - input: first?
        evaluators: [{{type: contains, value: "answer 1"}}]
      - input: second?
        evaluators: [{{type: contains, value: "{second}"}}]
      - input: third?
    evaluators: [{{type: contains, value: "[Assistant]: answer 3"}}]
"""


def numbered(seen: Seen) -> tuple[dict[str, Any], dict[str, str]]:
    """`answer N` for the Nth user message of the request."""
    asked = sum(1 for m in seen.body["messages"] if m["role"] == "user")
    return openai_chat(f"answer {asked}"), {}


def conversation_job(project: WriteFiles, url: str, options: str = "", second: str = "2") -> Job:
    targets = (
        "targets:\n  - {name: api, provider: openai-compatible, model: m, "
        f"base_url: '{url}/v1', max_retries: 0}}\n"
    )
    text = CONVERSATION.format(options=options, second=second)
    root = project({"targets.yaml": targets, "evals.yaml": text})
    (job,) = plan_jobs("c", [load_eval_file(root / "evals.yaml")], "api", None)
    return job


def test_each_turn_is_sent_with_the_models_own_earlier_answers(project: WriteFiles) -> None:
    with serving(Reply(None, made=numbered)) as server:
        result = execute(conversation_job(project, server.url), "w")
    sent = [[(m["role"], m["content"]) for m in s.body["messages"]] for s in server.seen]
    assert sent[2] == [
        ("system", "Count the questions."),
        ("user", "first?"),
        ("assistant", "answer 1"),
        ("user", "second?"),
        ("assistant", "answer 2"),
        ("user", "third?"),
    ]
    assert [len(s) for s in sent] == [2, 4, 6]
    assert result.status is Status.OK
    assert result.answer == "answer 3"
    assert result.turns is not None
    assert [(t.turn, t.answer, t.score, t.passed) for t in result.turns] == [
        (1, "answer 1", 1.0, True),
        (2, "answer 2", 1.0, True),
        (3, "answer 3", 1.0, True),  # no evaluators: 1, as in AgentV
    ]
    assert result.turns[0].hits == ["answer contains 'answer 1'"]
    # the case's own evaluators read the whole transcript
    assert [r.score for r in result.evaluator_results] == [1.0]
    assert result.score == 1.0 and result.passed is True
    assert result.usage is not None and result.usage.input_tokens == 33  # 3 calls of 11


def test_turn_scores_aggregate_by_mean_min_or_max(project: WriteFiles) -> None:
    """Turn 2 fails; the scores are turns 1, 2, 3 and the transcript's: 1, 0, 1, 1."""
    scores = {}
    for how in ("mean", "min", "max"):
        with serving(Reply(None, made=numbered)) as server:
            job = conversation_job(project, server.url, f"    aggregation: {how}", second="nope")
            result = execute(job, "w")
        assert result.turns is not None
        assert [t.passed for t in result.turns] == [True, False, True]
        scores[how] = (result.score, result.passed)
    assert scores == {"mean": (0.75, False), "min": (0.0, False), "max": (1.0, True)}


def test_on_turn_failure_stop_sends_no_more_turns_and_scores_them_zero(
    project: WriteFiles,
) -> None:
    with serving(Reply(None, made=numbered)) as server:
        job = conversation_job(project, server.url, "    on_turn_failure: stop", second="nope")
        result = execute(job, "w")
    assert len(server.seen) == 2
    assert result.turns is not None
    third = result.turns[2]
    assert (third.status, third.score, third.answer) == ("skipped", 0.0, None)
    assert third.error == "turn 2 failed and on_turn_failure is stop"
    # 1, 0, 0 and the transcript's 0 (it ends at answer 2)
    assert result.score == 0.25
    assert "turn 3: not sent: turn 2 failed and on_turn_failure is stop" in result.misses


def test_a_rate_limit_mid_conversation_is_the_jobs_status_with_the_turns_done(
    project: WriteFiles,
) -> None:
    """Not the model's failure, so not a score of 0 as in AgentV: the job is `rate_limited`
    (retry sends it again) and keeps what the first turn answered."""
    limited = Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0"})
    with serving(Reply(openai_chat("answer 1")), limited) as server:
        result = execute(conversation_job(project, server.url), "w")
    assert result.status is Status.RATE_LIMITED
    assert result.score is None
    assert result.turns is not None
    assert [(t.turn, t.answer) for t in result.turns] == [(1, "answer 1")]


def test_an_empty_answer_fails_its_turn_and_the_conversation_goes_on(
    project: WriteFiles,
) -> None:
    replies = [Reply(openai_chat("answer 1")), Reply(openai_chat("")), Reply(None, made=numbered)]
    with serving(*replies) as server:
        result = execute(conversation_job(project, server.url), "w")
    assert len(server.seen) == 3
    assert result.status is Status.OK
    assert result.turns is not None
    second = result.turns[1]
    assert (second.status, second.score, second.passed) == ("model_failure", 0.0, False)
    assert second.error is not None and "empty answer" in second.error


def test_a_turn_evaluator_that_cannot_judge_leaves_no_score_but_keeps_every_turn(
    project: WriteFiles,
) -> None:
    """A broken script on turn 2 is a grading error (infra_error, as for any case): the
    answers and the other turns' verdicts stay in the line."""
    with serving(Reply(None, made=numbered)) as server:
        job = conversation_job(project, server.url)
        turns = job.conversation.turns  # type: ignore[union-attr]
        broken = turns[1].model_copy(
            update={"evaluators": [CodeEvaluator(type="code", script=[sys.executable, "-c", "x("])]}
        )
        plan = job.conversation.model_copy(update={"turns": [turns[0], broken, turns[2]]})  # type: ignore[union-attr]
        result = execute(job.model_copy(update={"conversation": plan}), "w")
    assert result.status is Status.INFRA_ERROR
    assert result.error is not None and result.error.kind == "grading_error"
    assert result.error.message.startswith("turn 2: ")
    assert result.score is None
    assert result.turns is not None
    assert [t.answer for t in result.turns] == ["answer 1", "answer 2", "answer 3"]
    assert [t.score for t in result.turns] == [1.0, None, 1.0]
