"""Planning a job: a loaded case, on one target, one repeat, becomes the wire `Job`
(`bridge.contract.job`) a worker runs: evaluators resolved against the eval file's
folder, judges chosen, the request built, the time limit set.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evalrelay.bridge.contract.job import (
    DEFAULT_PASS_THRESHOLD,
    AttachedFile,
    Grading,
    Job,
    TargetRef,
    job_id,
)
from evalrelay.bridge.contract.turns import ConversationPlan, TurnPlan
from evalrelay.bridge.errors import EvalrelayError, TargetError
from evalrelay.bridge.evalfile.cases import LoadedCase
from evalrelay.bridge.evalfile.evaluators import (
    CodeEvaluator,
    CompositeEvaluator,
    EmbeddingSimilarEvaluator,
    EvaluatorSpec,
    LlmJudgeEvaluator,
    RubricEvaluator,
    all_evaluators,
)
from evalrelay.bridge.evalfile.harbor.config import StepConfig
from evalrelay.bridge.evalfile.harbor.folder import TaskSpec
from evalrelay.bridge.evalfile.limits import MAX_JOB_SECONDS
from evalrelay.bridge.evalfile.resolved import ResolvedFile
from evalrelay.bridge.evalfile.schema import EvalCase
from evalrelay.bridge.prompt.build import render, request_for
from evalrelay.bridge.targets.settings import TASK_AGENT_KINDS, TASK_QUEUE
from evalrelay.bridge.targets.targets_file import MOCK_JUDGE, Target, Targets

DEFAULT_TIMEOUT_SECONDS = {
    "api": 300.0,
    "agent.vscode": 1800.0,
    "agent.codex": 1800.0,
    "agent.cli": 1800.0,
    "task": 3600.0,
}
"""Per-queue time limit of one job when neither the case nor the target sets one."""


def build_job(
    campaign_id: str,
    dataset: str,
    case: LoadedCase,
    target: Target,
    repeat: int,
    *,
    evaluators: list[EvaluatorSpec] | None = None,
    timeout_seconds: float | None = None,
    targets: Targets | None = None,
    eval_dir: Path | None = None,
    pass_threshold: float | None = DEFAULT_PASS_THRESHOLD,
    grading: Grading = "evalrelay",
    project_judge: str | None = None,
    ref: TargetRef | None = None,
    task: TaskSpec | None = None,
    judges_resolved_late: bool = False,
) -> Job:
    """`ref`: the target as its jobs carry it, when the caller plans many (made once).
    `task`: the case is this container task. `judges_resolved_late` (an operator's file):
    a judge the file names that `targets` lacks goes in the job's `unknown_judges` instead
    of refusing the campaign."""
    if task is not None or target.queue == TASK_QUEUE:
        return task_job(campaign_id, dataset, case, target, repeat, task, ref)
    system_prompt = target.raw.get("system_prompt")
    spec = case.case
    expected = case.expected[-1] if case.expected else None  # the last, as AgentV takes it
    rubric = spec.rubric_evaluator()
    specs = [
        resolve_evaluator(e, eval_dir or Path.cwd())
        for e in [*([rubric] if rubric else []), *(spec.evaluator_specs() or evaluators or [])]
    ]
    conversation = conversation_plan(spec, lambda e: resolve_evaluator(e, eval_dir or Path.cwd()))
    if conversation is not None and target.queue != "api":
        raise TargetError(
            f"case '{case.id}': conversation mode runs on API targets, and '{target.name}' "
            f"is an agent ({target.kind}); pick an API target for it"
        )
    judging = [
        e for e in all_evaluators([*specs, *turn_evaluators(conversation)]) if needs_judge(e)
    ]
    default_judge = judge_of(target, project_judge, bool(judging))
    for spec_ in judging:
        if not (getattr(spec_, "target", None) or default_judge):
            raise TargetError(f"case '{case.id}': {no_judge(spec_, target)}")
    judges, unknown = _judges(
        _judge_names(specs, judging, default_judge),
        targets or Targets({}),
        default_judge,
        judges_resolved_late,
    )
    return Job(
        campaign_id=campaign_id,
        job_id=job_id(campaign_id, dataset, case.id, target.name, repeat),
        case_id=case.id,
        dataset=dataset,
        repeat=repeat,
        target=ref or target_ref(target),
        request=request_for(
            case,
            system_prompt if isinstance(system_prompt, str) else None,
            default_system=grading != "promptfoo",
        ),
        outcome=spec.success_criteria(),
        reference_answer=render(expected) if expected else None,
        files=[attached(f) for f in case.files()],
        evaluators=specs,
        judges=judges,
        unknown_judges=unknown,
        default_judge=default_judge,
        pass_threshold=pass_threshold,
        grading=grading,
        timeout_seconds=(
            spec.timeout_seconds
            or timeout_seconds
            or _target_timeout(target)
            or DEFAULT_TIMEOUT_SECONDS[target.queue]
        ),
        conversation_id=spec.conversation_id,
        metadata=spec.metadata,
        conversation=conversation,
    )


def _judge_names(
    specs: list[EvaluatorSpec], judging: list[EvaluatorSpec], default_judge: str | None
) -> set[str]:
    """The targets a job's grading may call: those its judging evaluators name, the
    default judge when any evaluator judges or there is none (the outcome is then judged),
    and the embedding targets `similar` asks."""
    names = {t for e in judging if (t := getattr(e, "target", None))}
    if default_judge and (not specs or judging):
        names.add(default_judge)
    names |= {
        e.target
        for e in all_evaluators(specs)
        if isinstance(e, EmbeddingSimilarEvaluator) and e.target
    }
    return names


def _judges(
    names: set[str], targets: Targets, default_judge: str | None, resolved_late: bool
) -> tuple[dict[str, TargetRef], dict[str, str]]:
    """Each judge as the job carries it, and (`resolved_late`: an operator's file) the
    error of each the targets file lacks, which the job then carries instead of the
    campaign being refused. The default judge is always needed: it is the target's own
    `judge_target` or the project's, so its absence is the targets file's error."""
    judges: dict[str, TargetRef] = {}
    unknown: dict[str, str] = {}
    for name in sorted(names):
        try:
            judges[name] = target_ref(targets.get(name))
        except TargetError as exc:
            if not resolved_late or name == default_judge:
                raise
            unknown[name] = str(exc)
    return judges, unknown


def task_job(
    campaign_id: str,
    dataset: str,
    case: LoadedCase,
    target: Target,
    repeat: int,
    task: TaskSpec | None,
    ref: TargetRef | None,
) -> Job:
    """A container task's trial: its verifier grades it, so it has no evaluators; it goes
    to the `task` queue whatever its agent."""
    if task is None:
        raise TargetError(
            f"case '{case.id}': target '{target.name}' ({target.kind}) runs container tasks "
            "(a folder holding task.toml) only; pick another target for eval files"
        )
    if target.kind not in TASK_AGENT_KINDS:
        raise TargetError(
            f"task '{task.name}': target '{target.name}' ({target.kind}) cannot work inside "
            f"a task's container; task agents are: {', '.join(sorted(TASK_AGENT_KINDS))}"
        )
    ref = ref or target_ref(target)
    return Job(
        campaign_id=campaign_id,
        job_id=job_id(campaign_id, dataset, case.id, target.name, repeat),
        case_id=case.id,
        dataset=dataset,
        repeat=repeat,
        target=ref.model_copy(update={"queue": TASK_QUEUE}),
        request=request_for(case, None),
        pass_threshold=1.0,
        timeout_seconds=trial_seconds(task),
        metadata=case.case.metadata,
        task=task,
    )


def trial_seconds(task: TaskSpec) -> float:
    """The most a trial may take: building its image, then each step's agent and verifier
    at their time limits, and a minute for the rest."""
    config = task.config
    total = config.environment.build_timeout_sec + 60.0
    steps: list[StepConfig | None] = list(config.steps) or [None]
    for step in steps:
        agent = step.agent.timeout_sec if step else None
        verifier = step.verifier.timeout_sec if step else None
        total += (agent or config.agent.timeout_sec) + (verifier or config.verifier.timeout_sec)
    return min(total, MAX_JOB_SECONDS)


def judge_of(target: Target, project_judge: str | None, judging: bool) -> str | None:
    """Who grades a target's judging evaluators that name no judge: its `judge_target`;
    for a mock target, the mock judge (a dry run stays offline); else the project's
    `default_judge` (AgentV's `defaults.grader`); else an API target grades itself, as
    AgentV's January format has it. An agent target has none. Only `judge_target` also
    grades a case that has no evaluator at all."""
    explicit = target.raw.get("judge_target")
    if isinstance(explicit, str):
        return explicit
    if not judging:
        return None
    if target.kind == "mock":
        return MOCK_JUDGE
    if project_judge:
        return project_judge
    return target.name if target.queue == "api" else None


def no_judge(spec: EvaluatorSpec, target: Target) -> str:
    return (
        f"{spec.type} has no judge: target '{target.name}' is an agent and has no "
        f"judge_target; set `target:` on this evaluator, `judge_target:` on '{target.name}', "
        "or `default_judge:` in evalrelay.yaml"
    )


def needs_judge(spec: EvaluatorSpec) -> bool:
    if isinstance(spec, CompositeEvaluator):
        return spec.aggregator.type == "llm_judge"
    return isinstance(spec, (LlmJudgeEvaluator, RubricEvaluator))


def resolve_evaluator(spec: EvaluatorSpec, eval_dir: Path) -> EvaluatorSpec:
    """Paths made absolute and prompt files read, so the job stands on its own."""
    if spec.transforms:
        steps = [
            step.model_copy(update={"cwd": str((eval_dir / (step.cwd or ".")).resolve())})
            for step in spec.transforms
        ]
        spec = spec.model_copy(update={"transforms": steps})
    if isinstance(spec, CompositeEvaluator):
        aggregator = spec.aggregator
        cwd = (eval_dir / aggregator.cwd) if aggregator.cwd else eval_dir
        return spec.model_copy(
            update={
                "evaluators": [resolve_evaluator(e, eval_dir) for e in spec.evaluators],
                "aggregator": aggregator.model_copy(update={"cwd": str(cwd.resolve())}),
            }
        )
    if isinstance(spec, CodeEvaluator):
        cwd = (eval_dir / spec.cwd) if spec.cwd else eval_dir
        return spec.model_copy(update={"cwd": str(cwd.resolve())})
    if isinstance(spec, LlmJudgeEvaluator) and (name := spec.prompt_file()):
        path = eval_dir / name
        if not path.is_file():  # the loader checked; the file went away since
            raise EvalrelayError(f"judge prompt file not found: {path}")
        return spec.model_copy(update={"prompt": path.read_text(encoding="utf-8")})
    return spec


def target_ref(target: Target) -> TargetRef:
    return TargetRef(name=target.name, kind=target.kind, queue=target.queue, settings=target.raw)


def attached(file: ResolvedFile) -> AttachedFile:
    return AttachedFile(
        display_path=file.display_path,
        project_path=file.project_path,
        sha256=file.sha256,
        is_guideline=file.is_guideline,
    )


def _target_timeout(target: Target) -> float | None:
    value = target.raw.get("timeout_seconds")
    return float(value) if isinstance(value, int | float) else None


def conversation_plan(
    case: EvalCase, resolve: Callable[[EvaluatorSpec], EvaluatorSpec]
) -> ConversationPlan | None:
    """The case's conversation, None when it is not in conversation mode."""
    if case.mode != "conversation" or not case.turns:
        return None
    return ConversationPlan(
        turns=[
            TurnPlan(
                input=turn.input,
                reference_answer=turn.expected_output,
                evaluators=[resolve(e) for e in turn.evaluators or []],
            )
            for turn in case.turns
        ],
        aggregation=case.aggregation or "mean",
        on_turn_failure=case.on_turn_failure or "continue",
    )


def turn_evaluators(plan: ConversationPlan | None) -> list[EvaluatorSpec]:
    """Every evaluator of every turn, for the checks a job's evaluators get (judges)."""
    return [e for turn in (plan.turns if plan else []) for e in turn.evaluators]
