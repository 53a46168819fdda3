"""One container-task result as Harbor records a trial: its `result.json` and `config.json`.

Harbor's viewer and its job loader read a trial folder through its own pydantic models
(`TrialResult`, `TrialConfig`); these documents hold what those models require, filled from
evalrelay's result line. Harbor's semantics are kept where they differ from evalrelay's
words: a step skipped after a `min_reward` stop is absent from `step_results` (Harbor never
runs it), a trial whose tests wrote no reward has no `verifier_result` but a
`RewardFileNotFoundError`, and a timeout is the exception Harbor raises for that phase
(the verifier still grades after an agent timeout; after a verifier timeout there is no
reward).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from evalrelay.bridge.results.result import Result, Status, TaskTimings

NAMESPACE = uuid.UUID("6f1d8a52-3c1e-4d0b-9a57-2b1f0e7c4a11")
"""Ids in the export are derived from evalrelay's (uuid5), so exporting twice writes the
same documents."""
AGENT_VERSION = "evalrelay"
"""What `agent_info.version` says: the agent ran under evalrelay, not Harbor."""


def export_id(text: str) -> str:
    return str(uuid.uuid5(NAMESPACE, text))


def trial_name(result: Result) -> str:
    """Harbor's trial folder name: the task's short name (after `org/`, 32 characters at
    most), two underscores and an id of 7 characters (here the start of the job id)."""
    short = result.case_id.split("/")[-1][:32].rstrip("_-") or "task"
    return f"{short}__{result.job_id[:7]}"


def exception_type(result: Result) -> str | None:
    """The exception Harbor records for what ended the trial; None when it ended well."""
    if result.status == Status.OK:
        return None if result.rewards else "RewardFileNotFoundError"
    if result.status == Status.TIMEOUT:
        message = (result.error.message if result.error else "").lower()
        return "VerifierTimeoutError" if "verifier" in message else "AgentTimeoutError"
    if result.status == Status.CANCELLED:
        return "CancelledError"
    return "RuntimeError"


def trial_document(result: Result, job_id: str, trial_uri: str) -> dict[str, Any]:
    """The trial's `result.json`, as Harbor's `TrialResult` reads it."""
    name = trial_name(result)
    phases = _phases(result.started_at, result.timings or TaskTimings())
    kind = exception_type(result)
    graded = kind in (None, "AgentTimeoutError")
    return {
        "schema_version": 1,
        "id": export_id(result.job_id),
        "task_name": result.case_id,
        "trial_name": name,
        "trial_uri": trial_uri,
        "task_id": {"path": result.case_id},
        "source": result.dataset or None,
        # Harbor's hash of the task folder; a result keeps none, so the trial's own job id
        # stands in (a string Harbor only stores).
        "task_checksum": result.job_id,
        "config": trial_config(result, job_id),
        "agent_info": {"name": result.target, "version": AGENT_VERSION},
        "agent_result": _agent_context(result),
        "verifier_result": {"rewards": result.rewards} if graded and result.rewards else None,
        "verifier_environment_mode": None if result.steps is not None else "shared",
        "exception_info": _exception(result, kind) if kind else None,
        "started_at": result.started_at.isoformat(),
        "finished_at": result.finished_at.isoformat(),
        **phases,
        "step_results": _step_results(result),
        "reward_valid": graded and bool(result.rewards),
    }


def trial_config(result: Result, job_id: str) -> dict[str, Any]:
    """The trial's `config.json`, as Harbor's `TrialConfig` reads it."""
    return {
        "schema_version": 1,
        "task": {"path": result.case_id, "source": result.dataset or None},
        "trial_name": trial_name(result),
        "agent": {"name": result.target},
        "job_id": job_id,
    }


def _step_results(result: Result) -> list[dict[str, Any]] | None:
    if result.steps is None:
        return None
    return [
        {
            "step_name": step.name,
            "verifier_result": {"rewards": step.rewards} if step.rewards else None,
        }
        for step in result.steps
        if not step.skipped
    ]


def _phases(started: datetime, timings: TaskTimings) -> dict[str, dict[str, str] | None]:
    """Harbor's phase timings (start and end) laid end to end from the trial's start: the
    result keeps each phase's seconds, not its clock times."""
    phases: dict[str, dict[str, str] | None] = {}
    clock = started
    for name, seconds in (
        ("environment_setup", _sum(timings.build, timings.setup)),
        ("agent_setup", None),
        ("agent_execution", timings.agent),
        ("verifier", timings.verifier),
    ):
        if seconds is None:
            phases[name] = None
            continue
        end = clock + timedelta(seconds=seconds)
        phases[name] = {"started_at": clock.isoformat(), "finished_at": end.isoformat()}
        clock = end
    return phases


def _sum(*seconds: float | None) -> float | None:
    known = [s for s in seconds if s is not None]
    return sum(known) if known else None


def _agent_context(result: Result) -> dict[str, Any] | None:
    usage = result.usage
    if usage is None:
        return None
    return {
        "n_input_tokens": usage.input_tokens,
        "n_cache_tokens": usage.cached_input_tokens,
        "n_output_tokens": usage.output_tokens,
        "cost_usd": result.cost.usd if result.cost else None,
    }


def _exception(result: Result, kind: str) -> dict[str, Any]:
    message = result.error.message if result.error else ""
    if kind == "RewardFileNotFoundError":
        message = "the task's tests wrote neither /logs/verifier/reward.txt nor reward.json"
    return {
        "exception_type": kind,
        "exception_message": message,
        "exception_traceback": "",
        "occurred_at": result.finished_at.isoformat(),
    }
