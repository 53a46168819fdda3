"""Planning a regrade: a new campaign whose jobs carry the answers a finished campaign
recorded, to be graded with the eval files' current evaluators and never sent to a target.

Each job is the case's job as `run` would plan it now (evaluators, judges, threshold), with
the request that was actually sent and the answer that came back. It travels the normal
queue, worker and collector path, so a regrade scales and is collected exactly once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.contract.turns import ConversationPlan
from evalrelay.bridge.evalfile.cases import LoadedCase, LoadedEvalFile
from evalrelay.bridge.planning.campaigns import FilePlanner, case_targets
from evalrelay.bridge.results.recorded import Recorded
from evalrelay.bridge.results.result import Result, TurnResult
from evalrelay.bridge.targets.targets_file import Targets


class RegradePlan(NamedTuple):
    jobs: list[Job]
    left_out: list[Result]
    """Recorded results whose case the eval files no longer hold: not graded again."""


def plan_regrade(
    campaign_id: str, files: Sequence[LoadedEvalFile], recorded: Iterable[Result]
) -> RegradePlan:
    cases = {(f.dataset, c.id): (f, c) for f in files for c in f.cases}
    targets = {f.path: case_targets(f) for f in files}
    jobs, left_out = [], []
    for result in recorded:
        found = cases.get((result.dataset, result.case_id))
        if found is None:
            left_out.append(result)
            continue
        loaded, case = found
        jobs.append(regrade_job(campaign_id, loaded, case, result, targets[loaded.path]))
    return RegradePlan(jobs, left_out)


def regrade_job(
    campaign_id: str,
    loaded: LoadedEvalFile,
    case: LoadedCase,
    result: Result,
    targets: Targets,
) -> Job:
    planner = FilePlanner(campaign_id, loaded, targets)
    job = planner.job(case, targets.get(result.target), result.repeat)
    return job.model_copy(
        update={
            "request": result.raw_request,  # what the recorded answer answers
            "conversation": _as_asked(job.conversation, result.turns),
            "recorded": Recorded.of(result),
        }
    )


def _as_asked(
    plan: ConversationPlan | None, turns: list[TurnResult] | None
) -> ConversationPlan | None:
    """The conversation's current turns (evaluators, references), each with the message
    that was sent in its place, so the history graded is the one the target saw."""
    if plan is None or not turns:
        return plan
    sent = {t.turn: t.input for t in turns}
    return plan.model_copy(
        update={
            "turns": [
                turn.model_copy(update={"input": sent.get(number, turn.input)})
                for number, turn in enumerate(plan.turns, 1)
            ]
        }
    )
