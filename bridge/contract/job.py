"""A job: one case, on one target, one repeat; everything a worker anywhere needs to run it.

Jobs travel as JSON. They carry the built request, the target's settings as written
(`${VAR}` references unresolved, so keys stay in workers' environments) and the
content hashes of attached files, whose text lives once in Redis (`bridge.queue.blobs`).
Planning a job from a loaded case is `bridge.planning.jobs`.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.contract.turns import ConversationPlan
from evalrelay.bridge.evalfile.evaluators import EvaluatorSpec
from evalrelay.bridge.evalfile.harbor.folder import TaskSpec
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.results.recorded import Recorded
from evalrelay.bridge.results.result import AttemptSummary

DEFAULT_PASS_THRESHOLD = 0.8

Grading = Literal["evalrelay", "promptfoo"]
"""Whose rules decide an evaluator's pass and the case's: evalrelay's (the weighted score
at the threshold) or promptfoo's (every assertion passes, unless a threshold is set)."""


class AttachedFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    display_path: str
    project_path: str
    sha256: str
    is_guideline: bool


class TargetRef(BaseModel):
    """The target as written in targets.yaml; workers resolve variables from their environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: str
    queue: str
    settings: dict[str, Any]


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    campaign_id: str
    job_id: str
    case_id: str
    dataset: str
    repeat: int = 0
    attempt: int = 1
    target: TargetRef
    request: PromptRequest
    outcome: str | None = None
    reference_answer: str | None = None
    """The first expected message, rendered; the grader compares against it."""
    files: list[AttachedFile] = Field(default_factory=list)
    evaluators: list[EvaluatorSpec] = Field(default_factory=list)
    judges: dict[str, TargetRef] = Field(default_factory=dict)
    """The judge (and embedding) targets the evaluators name, as written in targets.yaml."""
    unknown_judges: dict[str, str] = Field(default_factory=dict)
    """Judge (or embedding) targets an operator's file names that its targets file lacks,
    each with why. The job still runs, as AgentV resolves a judge only when it grades; the
    evaluator naming one ends the job as an infra error with that reason. A dropped file's
    unknown judge is refused when it is planned instead."""
    default_judge: str | None = None
    """The target's `judge_target`: grades a case that names no evaluator."""
    pass_threshold: float | None = DEFAULT_PASS_THRESHOLD
    """The score at which the case passes; None (promptfoo grading only): when every
    evaluator passes."""
    grading: Grading = "evalrelay"
    """`promptfoo`: graded as promptfoo grades a test (`worker.grading.promptfoo_rule`)."""
    timeout_seconds: float
    conversation_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The case's `metadata` (with AgentV's `tags`, `governance`, `environment`), for results."""
    cache_ttl_seconds: int | None = None
    """Serve and store API answers from the response cache for this long (`run --cache`)."""
    previous_attempts: list[AttemptSummary] = Field(default_factory=list)
    """Earlier attempts of this job, carried into its result when it is retried."""
    conversation: ConversationPlan | None = None
    """Conversation mode: the turns sent one after the other after the `request`."""
    recorded: Recorded | None = None
    """A regrade: the answer recorded earlier, graded instead of calling the target."""
    task: TaskSpec | None = None
    """A container task (Harbor's format): the trial's task, whose verifier grades it."""
    waiting_since: float | None = None
    """When this attempt first found no free capacity (epoch seconds, by Redis's clock: the
    worker that finds it busy next may be on another host). It waits, without a
    limit on tries, until its own time limit has passed since then."""

    def stored_json(self) -> str:
        """The job as Redis stores it: fields at their default left out, a third of a
        one-turn case's JSON (reading it back fills them in)."""
        return self.model_dump_json(exclude_defaults=True)

    def retried(self, earlier: AttemptSummary) -> Job:
        return self.model_copy(
            update={
                "attempt": max(self.attempt, earlier.attempt) + 1,
                "previous_attempts": [*self.previous_attempts, earlier],
            }
        )


def job_id(campaign_id: str, dataset: str, case_id: str, target: str, repeat: int) -> str:
    """Deterministic: the same case, target and repeat in a campaign is always the same job."""
    key = "\0".join((campaign_id, dataset, case_id, target, str(repeat)))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def new_message_id(job: Job) -> str:
    """Every message of a job gets an id of its own, so the worker holding one message can be
    told from the one holding a later message of the same job (`bridge.delivery.holders`)."""
    return f"{job.job_id}-{job.attempt}-{uuid.uuid4().hex[:12]}"


def new_batch_id() -> str:
    """A batch message's id: its jobs' holders name it (`bridge.delivery.holders`)."""
    return f"batch-{uuid.uuid4().hex}"
