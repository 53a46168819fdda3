"""A regrade job's recorded answer, standing in for its target: no call is made, and what
the target answered (or how it failed) is what the job's evaluators read."""

from __future__ import annotations

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.results.recorded import Recorded
from evalrelay.bridge.results.result import Status
from evalrelay.worker.providers.base import ProviderFailure, ProviderOutput


def recorded_output(recorded: Recorded) -> ProviderOutput:
    """The recorded answer as a provider's output; a recorded failure raised again as the
    same status, so the regraded result keeps it (it was never scored)."""
    if not recorded.status.is_scored:
        error = recorded.error
        failure = ProviderFailure(
            recorded.status,
            error.message if error else f"recorded as {recorded.status.value}",
            kind=error.kind if error else None,
        )
        failure.artifacts = dict(recorded.artifacts)
        failure.turns = recorded.turns
        failure.trajectory = recorded.trajectory
        failure.workspace_changes = recorded.workspace_changes
        raise failure
    model_failure = None
    if recorded.status is Status.MODEL_FAILURE:
        model_failure = recorded.error.message if recorded.error else "recorded as a model failure"
    return ProviderOutput(
        answer=recorded.answer or "",
        usage=recorded.usage,
        tool_calls=recorded.tool_calls(),
        model_failure=model_failure,
        artifacts={k: v for k, v in recorded.artifacts.items() if k != "tool_calls"},
        trajectory=recorded.trajectory,
        workspace_changes=recorded.workspace_changes,
    )


def recorded_turn(job: Job, number: int) -> ProviderOutput | None:
    """Turn `number`'s recorded answer, None when that turn was never answered."""
    turns = job.recorded.turns if job.recorded else None
    turn = next((t for t in turns or [] if t.turn == number), None)
    if turn is None or turn.status == "skipped":
        return None
    return ProviderOutput(
        answer=turn.answer or "",
        usage=turn.usage,
        model_failure=turn.error if turn.status == "model_failure" else None,
    )
