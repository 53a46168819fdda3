"""Inspect AI eval logs of a campaign, checked with inspect_ai's own readers: every result
a sample with its messages, scores and error, a log per target, both file formats, and
no field of ours that Inspect's models would silently drop."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any
from zipfile import ZipFile

import pytest
from inspect_ai.event import ModelEvent, ScoreEvent, ToolEvent
from inspect_ai.log import (
    EvalLog,
    EvalSample,
    EvalSampleSummary,
    read_eval_log,
    read_eval_log_sample,
    read_eval_log_sample_summaries,
    read_eval_log_samples,
)
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.schema import ToolCall
from evalrelay.bridge.prompt.messages import ChatMessage
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.inspect_log import write_inspect_logs
from evalrelay.bridge.results.result import (
    AttemptSummary,
    ErrorInfo,
    EvaluatorResult,
    Result,
    Status,
    Usage,
)
from evalrelay.bridge.results.results_file import summary_path
from tests.bridge.reports.reporting import CAMPAIGN, agent_run, graded, result, write_campaign

FORMATS = pytest.mark.parametrize("suffix", [".eval", ".json"])


def export(
    tmp_path: Path, results: list[Result], suffix: str = ".eval", target: str | None = None
) -> list[Path]:
    campaign = CampaignResults.load(write_campaign(tmp_path / "results", results))
    return write_inspect_logs(campaign, tmp_path / "logs" / f"evals{suffix}", target)


def by_id(log: EvalLog) -> dict[tuple[str | int, int], EvalSample]:
    return {(s.id, s.epoch): s for s in log.samples or []}


@FORMATS
def test_each_target_gets_a_log_inspect_reads_whole(tmp_path: Path, suffix: str) -> None:
    paths = export(tmp_path, CAMPAIGN, suffix)
    logs = tmp_path / "logs"
    assert paths == [logs / f"evals-claude{suffix}", logs / f"evals-gpt{suffix}"]
    gpt = read_eval_log(str(paths[1]))
    assert (gpt.eval.task, gpt.eval.model, gpt.status) == ("geo", "gpt", "success")
    assert sorted(s.id for s in gpt.samples or []) == ["capital", "desert", "mountain", "river"]
    assert gpt.eval.dataset.sample_ids == ["capital", "desert", "mountain", "river"]
    assert gpt.eval.created == "2026-11-21T12:00:00+00:00"
    assert gpt.stats.started_at == "2026-11-21T12:00:00+00:00"
    assert gpt.stats.completed_at == "2026-11-21T12:00:02+00:00"
    samples = by_id(gpt)
    capital = samples[("capital", 1)]
    assert capital.target == "Paris"
    assert capital.output.completion == "Answer to capital"
    assert capital.output.choices[0].message.text == "Answer to capital"
    assert capital.output.choices[0].stop_reason == "stop"
    assert [(m.role, m.text) for m in capital.input] == [
        ("system", "Be brief."),
        ("user", "Question of capital?"),
    ]
    assert [m.role for m in capital.messages] == ["system", "user", "assistant"]
    assert capital.scores is not None
    assert capital.scores["evalrelay"].value == 0.9
    assert capital.scores["evalrelay"].explanation == "checked by hand"
    assert capital.scores["evalrelay"].metadata == {
        "passed": True,
        "hits": ["names the city"],
        "misses": [],
    }
    assert capital.scores["contains"].value == 0.9
    assert (capital.total_time, capital.working_time) == (2.0, 2.0)
    call, *graded_by = capital.events  # the transcript: the call, then each score
    assert isinstance(call, ModelEvent)
    assert (call.model, call.input, call.output) == ("gpt", capital.input, capital.output)
    assert call.working_time == 2.0
    assert [(e.scorer, e.score.value) for e in graded_by if isinstance(e, ScoreEvent)] == [
        ("evalrelay", 0.9),
        ("contains", 0.9),
    ]
    assert capital.metadata == {
        "dataset": "geo",
        "job_id": "capital-gpt",
        "status": "ok",
        "attempt": 1,
        "worker": "w1",
        "passed": True,
    }
    mountain = samples[("mountain", 1)]
    assert mountain.error is not None
    assert mountain.error.message == "infra_error: connection refused by 127.0.0.1:9"
    assert mountain.error.traceback_ansi == mountain.error.message
    assert mountain.scores is None
    assert [e.event for e in mountain.events] == ["model", "error"]
    assert mountain.output.choices == []
    desert = samples[("desert", 1)]  # the model's failure: answered, not an error
    assert desert.error is None
    assert desert.output.error == "model_failure: empty answer"
    assert desert.scores is None  # never graded

    assert gpt.results is not None
    assert (gpt.results.total_samples, gpt.results.completed_samples) == (4, 3)
    evalrelay, contains = gpt.results.scores
    assert (evalrelay.name, evalrelay.scored_samples, evalrelay.unscored_samples) == (
        "evalrelay",
        2,
        2,
    )
    assert {k: m.value for k, m in evalrelay.metrics.items()} == {"accuracy": 0.5, "mean": 0.6}
    assert contains.name == "contains"
    assert contains.metrics["mean"].value == pytest.approx(0.6)

    claude = read_eval_log(str(paths[0]))
    assert (claude.eval.model, claude.status) == ("claude", "cancelled")
    river = by_id(claude)[("river", 1)]
    assert river.error is not None and river.error.message == "cancelled"


@FORMATS
def test_header_only_read_has_the_results_and_no_samples(tmp_path: Path, suffix: str) -> None:
    [path] = export(tmp_path, CAMPAIGN, suffix, target="gpt")
    assert path == tmp_path / "logs" / f"evals{suffix}"  # --target: FILE as given
    header = read_eval_log(str(path), header_only=True)
    assert header.samples is None
    assert header.eval.model == "gpt"
    assert header.results is not None and header.results.total_samples == 4
    assert header.eval.scorers is not None
    assert [s.name for s in header.eval.scorers] == ["evalrelay", "contains"]
    assert header.eval.packages == {"evalrelay": "0.1.0"}
    assert header.eval.config.epochs == 1
    assert header.eval.metadata is not None
    assert header.eval.metadata["evalrelay_campaign"] == "camp"


@FORMATS
def test_samples_stream_one_at_a_time_in_order(tmp_path: Path, suffix: str) -> None:
    results = [graded(f"case-{i:02d}", "gpt", 0.9) for i in range(30)]
    [path] = export(tmp_path, results, suffix)
    streamed = read_eval_log_samples(str(path))  # every sample required (status success)
    first = next(streamed)
    assert (first.id, first.epoch) == ("case-00", 1)
    assert [s.id for s in streamed] == [f"case-{i:02d}" for i in range(1, 30)]
    one = read_eval_log_sample(str(path), id="case-17", epoch=1)
    assert one.output.completion == "Answer to case-17"


def test_repeats_are_epochs(tmp_path: Path) -> None:
    results = [
        graded("capital", "gpt", score, repeat=repeat, job_id=f"capital-{repeat}")
        for repeat, score in enumerate((0.9, 0.5, 1.0))
    ] + [graded("river", "gpt", 0.9)]
    [path] = export(tmp_path, results)
    log = read_eval_log(str(path))
    assert log.eval.config.epochs == 3
    assert log.eval.dataset.samples == 2
    assert log.eval.dataset.sample_ids == ["capital", "river"]
    samples = by_id(log)
    assert sorted(samples) == [("capital", 1), ("capital", 2), ("capital", 3), ("river", 1)]
    assert samples[("capital", 2)].scores is not None
    assert samples[("capital", 2)].scores["evalrelay"].value == 0.5
    assert samples[("capital", 2)].uuid != samples[("capital", 1)].uuid
    streamed = read_eval_log_samples(str(path), all_samples_required=False)
    assert sorted((s.id, s.epoch) for s in streamed) == sorted(samples)


def test_several_datasets_prefix_sample_ids_and_the_task_is_the_campaign(
    tmp_path: Path,
) -> None:
    results = [graded("capital", "gpt", 0.9), graded("capital", "gpt", 0.4, dataset="rivers")]
    [path] = export(tmp_path, [*results, graded("nile", "gpt", 1.0, dataset="rivers")])
    log = read_eval_log(str(path))
    assert log.eval.task == "camp"
    assert log.eval.dataset.sample_ids == ["geo/capital", "rivers/capital", "rivers/nile"]
    assert read_eval_log_sample(str(path), id="rivers/capital", epoch=1).metadata["dataset"] == (
        "rivers"
    )


def test_one_case_and_repeat_twice_stays_two_samples(tmp_path: Path) -> None:
    twice = [graded("capital", "gpt", 0.9, job_id="a"), graded("capital", "gpt", 0.2, job_id="b")]
    [path] = export(tmp_path, twice)
    assert sorted(s.id for s in read_eval_log(str(path)).samples or []) == [
        "capital",
        "capital@b",
    ]


def tool_request() -> PromptRequest:
    """A conversation in which the assistant already called a tool and got its answer."""
    call = ToolCall(id="call_1", name="lookup", arguments={"city": "Paris"})
    return PromptRequest(
        question="unused",
        chat_prompt=[
            ChatMessage(role="system", content="Use the tools."),
            ChatMessage(role="user", content="How many live in Paris?"),
            ChatMessage(role="assistant", content="", tool_calls=[call]),
            ChatMessage(role="tool", content="2.1 million", tool_call_id="call_1"),
            ChatMessage(role="user", content="And in Lyon?"),
        ],
    )


def test_input_messages_tool_calls_output_and_usage(tmp_path: Path) -> None:
    answered = graded(
        "population",
        "gpt",
        1.0,
        answer="",
        raw_request=tool_request(),
        usage=Usage(input_tokens=120, output_tokens=30, cache_read_input_tokens=100),
        artifacts={
            "model": "gpt-4o-2024-08-06",
            "finish_reason": "tool_calls",
            "tool_calls": [{"id": "call_2", "name": "lookup", "arguments": '{"city": "Lyon"}'}],
            "latency_ms": 1500,
        },
    )
    second = graded("capital", "gpt", 0.9, usage=Usage(input_tokens=10, output_tokens=5))
    [path] = export(tmp_path, [answered, second])
    log = read_eval_log(str(path))
    sample = by_id(log)[("population", 1)]
    assert [m.role for m in sample.input] == ["system", "user", "assistant", "tool", "user"]
    assistant, tool = sample.input[2], sample.input[3]
    assert isinstance(assistant, ChatMessageAssistant) and assistant.tool_calls is not None
    [call] = assistant.tool_calls
    assert (call.id, call.function, call.arguments, call.type) == (
        "call_1",
        "lookup",
        {"city": "Paris"},
        "function",
    )
    assert isinstance(tool, ChatMessageTool)
    assert (tool.tool_call_id, tool.function, tool.text) == ("call_1", "lookup", "2.1 million")
    assert all(m.source == "input" for m in sample.input)

    choice = sample.output.choices[0]
    assert choice.stop_reason == "tool_calls"
    assert choice.message.model == sample.output.model == "gpt-4o-2024-08-06"
    assert choice.message.tool_calls is not None
    assert choice.message.tool_calls[0].arguments == {"city": "Lyon"}
    assert sample.messages[-1].role == "assistant"
    assert sample.output.time == 1.5
    usage = sample.model_usage["gpt"]
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (120, 30, 150)
    assert usage.input_tokens_cache_read == 100
    total = log.stats.model_usage["gpt"]
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (130, 35, 165)
    assert log.eval.model == "gpt"  # the target: the vendor's model is in each output
    assert log.eval.metadata is not None
    assert log.eval.metadata["reported_models"] == ["gpt", "gpt-4o-2024-08-06"]


@FORMATS
def test_an_evaluator_that_could_not_judge_is_unscored(tmp_path: Path, suffix: str) -> None:
    judged = graded("capital", "gpt", 0.5).model_copy(
        update={
            "evaluator_results": [
                EvaluatorResult(name="contains", type="contains", score=1.0),
                EvaluatorResult(name="contains", type="contains", score=0.0),
                EvaluatorResult(name="evalrelay", type="llm_judge", score=None, error="429"),
            ]
        }
    )
    [path] = export(tmp_path, [judged, graded("river", "gpt", 0.9)], suffix)
    log = read_eval_log(str(path))
    scores = by_id(log)[("capital", 1)].scores
    assert scores is not None
    assert sorted(scores) == ["contains", "contains-2", "evalrelay", "evalrelay-2"]
    assert (scores["contains"].value, scores["contains-2"].value) == (1.0, 0.0)
    unscored = scores["evalrelay-2"]
    assert isinstance(unscored.value, float) and math.isnan(unscored.value)
    assert (unscored.reason, unscored.explanation) == ("scoring_failed", "429")
    assert log.results is not None  # never scored, so no metric, but one of the scorers
    assert [s.name for s in log.results.scores] == ["evalrelay", "contains", "contains-2"]
    assert log.results.scores[1].unscored_samples == 0
    assert log.eval.scorers is not None
    assert [s.name for s in log.eval.scorers][-1] == "evalrelay-2"


def test_errors_keep_earlier_attempts_and_case_metadata(tmp_path: Path) -> None:
    failed = result(
        "mountain",
        "gpt",
        Status.TIMEOUT,
        error="no answer in 60 s",
        attempt=2,
        metadata={"topic": "peaks", "status": "draft"},
        attempts=[
            AttemptSummary(
                attempt=1,
                status=Status.RATE_LIMITED,
                error=ErrorInfo(kind="rate_limited", message="429 Too Many Requests"),
            )
        ],
    )
    [path] = export(tmp_path, [failed])
    sample = by_id(read_eval_log(str(path)))[("mountain", 1)]
    assert sample.error is not None and sample.error.message == "timeout: no answer in 60 s"
    assert sample.error_retries is not None
    assert [e.message for e in sample.error_retries] == ["rate_limited: 429 Too Many Requests"]
    assert sample.metadata["topic"] == "peaks"
    assert sample.metadata["case_status"] == "draft"
    assert sample.metadata["status"] == "timeout"
    assert sample.metadata["attempt"] == 2
    [summary] = read_eval_log_sample_summaries(str(path))
    assert (summary.error, summary.retries) == ("timeout: no answer in 60 s", 1)


def test_an_unfinished_campaign_is_a_started_log(tmp_path: Path) -> None:
    results_file = write_campaign(tmp_path / "results", [graded("capital", "gpt", 0.9)])
    summary_path(results_file.parent, "camp").write_text(json.dumps({"expected": 2}))
    [path] = write_inspect_logs(CampaignResults.load(results_file), tmp_path / "a.eval", None)
    assert read_eval_log(str(path), header_only=True).status == "started"
    summary_path(results_file.parent, "camp").write_text(json.dumps({"expected": 1}))
    [path] = write_inspect_logs(CampaignResults.load(results_file), tmp_path / "a.eval", None)
    assert read_eval_log(str(path), header_only=True).status == "success"


def test_summaries_are_thinned_as_inspect_thins_them(tmp_path: Path) -> None:
    long = PromptRequest(question="q" * 9000, system_prompt="Be brief.")
    [path] = export(tmp_path, [graded("capital", "gpt", 0.9, raw_request=long)])
    [summary] = read_eval_log_sample_summaries(str(path))
    assert isinstance(summary.input, list)
    assert summary.input[1].text.endswith("(content truncated)")
    assert len(summary.input[1].text) < 5200
    full = read_eval_log_sample(str(path), id="capital", epoch=1)
    assert full.input[1].text == "q" * 9000


def test_the_zip_holds_what_inspect_writes(tmp_path: Path) -> None:
    [path] = export(tmp_path, CAMPAIGN, target="gpt")
    with ZipFile(path) as archive:
        names = set(archive.namelist())
    assert names == {
        "header.json",
        "summaries.json",
        "_journal/start.json",
        "samples/capital_epoch_1.json",
        "samples/desert_epoch_1.json",
        "samples/mountain_epoch_1.json",
        "samples/river_epoch_1.json",
    }


def test_inspect_drops_no_field_we_write(tmp_path: Path) -> None:
    """Inspect's models ignore a field they do not know: one we misname would vanish
    without an error. Each of ours must come back from a read and a re-dump."""
    results = [
        *CAMPAIGN[:4],
        graded("population", "gpt", 1.0, raw_request=tool_request(), usage=Usage(input_tokens=3)),
    ]
    [path] = export(tmp_path, results, target="gpt")
    with ZipFile(path) as archive:
        header = json.loads(archive.read("header.json"))
        sample = json.loads(archive.read("samples/population_epoch_1.json"))
        mountain = json.loads(archive.read("samples/mountain_epoch_1.json"))
        summaries = json.loads(archive.read("summaries.json"))
    assert dropped(header, EvalLog.model_validate(copy.deepcopy(header)).model_dump()) == []
    for raw in (sample, mountain):
        assert dropped(raw, EvalSample.model_validate(copy.deepcopy(raw)).model_dump()) == []
    for raw in summaries:  # (Inspect's validators add to the dict they are given)
        again = EvalSampleSummary.model_validate(copy.deepcopy(raw)).model_dump()
        assert dropped(raw, again) == []


def dropped(ours: Any, theirs: Any, at: str = "") -> list[str]:
    """The paths of `ours` that `theirs` (Inspect's re-dump) lacks."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return [
            path
            for key, value in ours.items()
            for path in (
                dropped(value, theirs[key], f"{at}.{key}") if key in theirs else [f"{at}.{key}"]
            )
        ]
    if isinstance(ours, list) and isinstance(theirs, list):
        pairs = enumerate(zip(ours, theirs, strict=True))
        return [path for i, pair in pairs for path in dropped(*pair, f"{at}[{i}]")]
    return []


def test_no_target_of_that_name_names_the_campaigns_targets(tmp_path: Path) -> None:
    with pytest.raises(EvalrelayError, match="no target 'mistral'; its targets: claude, gpt"):
        export(tmp_path, CAMPAIGN, target="mistral")


def test_only_eval_and_json_files(tmp_path: Path) -> None:
    with pytest.raises(EvalrelayError, match=r"a \.eval file .* or a \.json file"):
        export(tmp_path, CAMPAIGN, ".zip")


def test_an_agents_trajectory_is_a_tool_event_per_step(tmp_path: Path) -> None:
    (path,) = export(tmp_path, [agent_run("fix")])
    (sample,) = read_eval_log(str(path)).samples or []
    tools = [e for e in sample.events if isinstance(e, ToolEvent)]
    assert [(e.function, e.arguments, e.agent) for e in tools] == [
        ("Read", {"file_path": "a.py"}, "codex"),
        ("Bash", {"command": "make"}, "codex"),
        ("Write", {"file_path": "b.txt"}, "codex"),
    ]
    read, command, write = tools
    assert read.result == "print('hi')" and read.working_time == 0.012 and not read.failed
    assert command.truncated == (8005, 3005)
    assert write.failed and write.error is not None
    assert write.error.message == "permission denied"
    kinds = [type(e).__name__ for e in sample.events]
    assert kinds == [
        "ModelEvent",
        "ToolEvent",
        "ToolEvent",
        "ToolEvent",
        "ScoreEvent",
        "ScoreEvent",
    ]
