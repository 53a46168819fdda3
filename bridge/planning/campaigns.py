"""Planning a campaign: every case of its eval files on each of its targets, once per
repeat, as wire jobs (`bridge.planning.jobs.build_job`)."""

from __future__ import annotations

from collections.abc import Sequence

from evalrelay.bridge.contract.job import Job, TargetRef
from evalrelay.bridge.errors import EvalrelayError, TargetError
from evalrelay.bridge.evalfile.cases import LoadedCase, LoadedEvalFile
from evalrelay.bridge.evalfile.schema import EvalCase
from evalrelay.bridge.gc_pause import gc_paused
from evalrelay.bridge.planning.jobs import build_job, target_ref
from evalrelay.bridge.targets.targets_file import Target, Targets


def targets_for(
    targets: Targets,
    loaded: LoadedEvalFile,
    case: EvalCase,
    overrides: Sequence[str],
    fallback: str | None = None,
) -> list[Target]:
    """`--target` (one or several) wins, then the case's targets, the file's, `fallback`
    (the inbox folder's or the watcher's), and the project's default."""
    names = (
        list(overrides)
        or case.target_names()
        or loaded.spec.target_names()
        or [n for n in (fallback or loaded.project.config.default_target,) if n]
    )
    if not names:
        raise TargetError(
            f"{loaded.path}: no target; pass --target, or set `target:` in the file "
            "or `default_target:` in evalrelay.yaml"
        )
    return [targets.get(name) for name in dict.fromkeys(names)]


@gc_paused()
def plan_jobs(
    campaign_id: str,
    files: Sequence[LoadedEvalFile],
    override: str | Sequence[str] | None,
    repeats: int | None,
    fallback_target: str | None = None,
) -> list[Job]:
    """Every job of the campaign: each case on each of its targets, once per repeat.
    `override`: the target, or targets, that `--target` names."""
    overrides = [override] if isinstance(override, str) else list(override or [])
    jobs = []
    for loaded in files:
        planner = FilePlanner(campaign_id, loaded)
        for case in loaded.cases:
            count = repeats or case.case.repeats or loaded.spec.repeats or 1
            for target in targets_for(
                planner.targets, loaded, case.case, overrides, fallback_target
            ):
                jobs += [planner.job(case, target, r) for r in range(count)]
    ids = [job.job_id for job in jobs]
    if len(set(ids)) != len(ids):
        raise EvalrelayError(
            "two eval files in this campaign share a dataset name and case ids; "
            "give them distinct `dataset:` names"
        )
    return jobs


def case_targets(loaded: LoadedEvalFile) -> Targets:
    """The targets file the eval file's jobs are planned with."""
    project = loaded.project
    derive = project.untrusted is None or project.untrusted.define_targets
    return Targets.load(
        project.root, project.configured_at or loaded.path, loaded.path, derive=derive
    )


class FilePlanner:
    """Plans the jobs of one eval file. What they share (the targets file, the file's and
    the project's defaults, each target as a job carries it) is read once, not once per
    job: a hundred thousand jobs are planned in about two seconds."""

    def __init__(self, campaign_id: str, loaded: LoadedEvalFile, targets: Targets | None = None):
        self.campaign_id = campaign_id
        self.loaded = loaded
        self.targets = targets or case_targets(loaded)
        self.dataset = loaded.dataset
        self.evaluators = loaded.spec.evaluator_specs()
        self.eval_dir = loaded.path.parent
        self._refs: dict[str, TargetRef] = {}

    def job(self, case: LoadedCase, target: Target, repeat: int) -> Job:
        """One case's job on one target, with the file's and the project's defaults."""
        ref = self._refs.get(target.name)
        if ref is None:
            ref = self._refs[target.name] = target_ref(target)
        return build_job(
            self.campaign_id,
            self.dataset,
            case,
            target,
            repeat,
            evaluators=self.evaluators,
            timeout_seconds=self.loaded.spec.timeout_seconds,
            targets=self.targets,
            eval_dir=self.eval_dir,
            pass_threshold=self._threshold(case),
            grading=self.loaded.spec.grading,
            project_judge=self.loaded.project.config.default_judge,
            ref=ref,
            task=self.loaded.task.spec if self.loaded.task else None,
            judges_resolved_late=self.loaded.project.untrusted is None,
        )

    def _threshold(self, case: LoadedCase) -> float | None:
        """The case's, the file's, else the project's; none under promptfoo grading, where
        a test without `threshold` passes when every assertion does."""
        for value in (case.case.threshold, self.loaded.spec.threshold):
            if value is not None:
                return value
        if self.loaded.spec.grading == "promptfoo":
            return None
        return self.loaded.project.config.pass_threshold
