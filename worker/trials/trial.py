"""One trial of a container task, as Harbor runs one: the image, the container, then for
each step its files and setup, the agent, the task's tests and their reward; the files
it left are packed for the results folder, and the container is removed.

A failure of the environment (the image, Docker) ends the trial as `infra_error`; an
agent that overruns its time is stopped and the tests still grade what it left (the
trial is a `timeout`, with its reward); tests that overrun theirs give no reward.
"""

from __future__ import annotations

import io
import logging
import re
import shlex
import tarfile
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.harbor.config import Healthcheck, StepConfig
from evalrelay.bridge.evalfile.harbor.folder import TaskFile, TaskSpec
from evalrelay.bridge.results.result import Status, TaskStep
from evalrelay.bridge.results.trajectory import TrajectoryStep
from evalrelay.bridge.targets.settings import CodexTarget
from evalrelay.worker.providers.call import resolved_settings
from evalrelay.worker.trials.agents import BUILT_IN, AgentTurn, Preparation, TaskAgent, Worked
from evalrelay.worker.trials.capacity import reserved
from evalrelay.worker.trials.codex_agent import CodexInTask
from evalrelay.worker.trials.container import (
    JOB_LABEL,
    WORKER_LABEL,
    ContainerError,
    TrialContainer,
)
from evalrelay.worker.trials.files import fetch_contents, tar_of
from evalrelay.worker.trials.image import ImageError, ensure_image
from evalrelay.worker.trials.outcome import TrialOutcome
from evalrelay.worker.trials.pack import pack
from evalrelay.worker.trials.rewards import (
    RewardError,
    read_rewards,
    reward_of,
    stops_after,
    trial_rewards,
)

log = logging.getLogger(__name__)

LOGS = "/logs"
SETUP_SCRIPT = "setup.sh"
TESTS_WAITING = "evalrelay-tests"
"""The tests' folder under /tmp until they are placed at /tests."""
OUTPUT_CHARS = 4000


def run_trial(
    job: Job, worker: str, client: redis.Redis, deadline: float, secrets: Iterable[str] = ()
) -> TrialOutcome:
    """The trial of `job` (a container task) on this host; NoCapacity when the host's
    trials leave no room for it. Its files are masked of the secrets the worker holds
    (`secrets`: the variables naming the target's), as its result is."""
    spec = job.task
    assert spec is not None
    outcome = TrialOutcome(trial_dir=trial_dir(job))
    contents = fetch_contents(client, spec)
    with reserved(spec.config.environment), tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        Trial(job, spec, contents, outcome, folder, deadline).run(worker)
        outcome.bundle, outcome.files = pack(client, folder, outcome.trial_dir, secrets)
    return outcome


def trial_dir(job: Job) -> str:
    """`<campaign>/<task>__<job>`, as Harbor names a trial's folder in its job's (the
    task's name after its `org/`, at most 32 characters)."""
    short = job.case_id.rsplit("/", 1)[-1][:32].rstrip("_-")
    task = re.sub(r"[^A-Za-z0-9_.-]+", "-", short).strip("-.") or "task"
    return f"{job.campaign_id}/{task}__{job.job_id[:8]}"


class Trial:
    def __init__(
        self,
        job: Job,
        spec: TaskSpec,
        contents: dict[str, bytes],
        outcome: TrialOutcome,
        folder: Path,
        deadline: float,
    ) -> None:
        self.job, self.spec, self.contents, self.outcome = job, spec, contents, outcome
        self.folder, self.deadline = folder, deadline
        self.config = spec.config
        self.agent = agent_for(job)
        self.outputs: list[str] = []
        self.steps_taken: list[TrajectoryStep] = []

    def run(self, worker: str) -> None:
        timings = self.outcome.timings
        began = time.monotonic()
        try:
            ensure_image(self.spec, self.contents)
        except ImageError as exc:
            self._failed(Status.INFRA_ERROR, str(exc))
            return
        finally:
            timings.build = time.monotonic() - began
        began = time.monotonic()
        no_network = self.config.environment.network == "no-network"
        try:
            with self.agent.prepared(no_network) as preparation:
                self._in_container(worker, preparation, began)
        except (ContainerError, OSError) as exc:
            self._failed(Status.INFRA_ERROR, str(exc))
        self.outcome.agent_output = "\n".join(self.outputs)[-OUTPUT_CHARS:]

    def _in_container(self, worker: str, preparation: Preparation, began: float) -> None:
        timings = self.outcome.timings
        labels = {WORKER_LABEL: worker, JOB_LABEL: self.job.job_id}
        container = TrialContainer.start(
            self.spec.image,
            self.config.environment,
            self.config.environment.workdir,
            labels,
            preparation.readable,
            preparation.network_of,
        )
        try:
            check = self.config.environment.healthcheck
            healthy = check is None or self._healthy(container, check, "the environment")
            timings.setup = time.monotonic() - began
            if healthy:
                self._steps(container)
            if self.config.steps or not healthy:  # a single step's came with its rewards
                self._collect(container, f"{LOGS}/.", "")
            for path in _artifact_paths(self.config.artifacts):
                self._collect(container, path, _kept_at("artifacts", path))
        finally:
            container.remove()

    def _steps(self, container: TrialContainer) -> None:
        """Each step in turn until one's gated reward falls short (or it could not be
        set up); the trial's rewards as Harbor makes them of the steps' (`trial_rewards`)."""
        steps: list[StepConfig | None] = list(self.config.steps) or [None]
        results: list[TaskStep] = []
        graded: list[dict[str, float] | None] = []
        for step in steps:
            if results and (
                results[-1].skipped or stops_after(steps[len(results) - 1], graded[-1])
            ):
                assert step is not None
                results.append(TaskStep(name=step.name, skipped=True))
                continue
            rewards = self._step(container, step)
            graded.append(rewards)
            name = step.name if step else ""
            reward = None if rewards is None else reward_of(rewards)
            results.append(TaskStep(name=name, reward=reward, rewards=rewards or {}))
        strategy = self.config.multi_step_reward_strategy or "mean"
        rewards = trial_rewards(graded, strategy if self.config.steps else "final")
        self.outcome.rewards = rewards or {}
        self.outcome.reward = reward_of(rewards) if rewards else 0.0
        if self.config.steps:
            self.outcome.steps = results

    def _step(self, container: TrialContainer, step: StepConfig | None) -> dict[str, float] | None:
        """One step (or the whole single-step task): the rewards its tests wrote, or None
        when it has none (no reward file, tests or setup that failed)."""
        timings = self.outcome.timings
        base = f"steps/{step.name}/" if step else ""
        logs = f"steps/{step.name}/" if step else ""
        if step is not None:
            began = time.monotonic()
            ready = self._set_up(container, step)
            timings.setup = (timings.setup or 0.0) + time.monotonic() - began
            if not ready:
                return None
        agent = self.config.agent
        turn = AgentTurn(
            instruction=self._text(f"{base}instruction.md"),
            folder=base,
            seconds=self._within((step.agent.timeout_sec if step else None) or agent.timeout_sec),
            env={**agent.env, **(step.agent.env if step else {})},
            user=(step.agent.user if step else None) or agent.user,
        )
        began = time.monotonic()
        worked = self.agent.work(container, self.spec, self.contents, turn)
        timings.agent = (timings.agent or 0.0) + time.monotonic() - began
        if worked is not None:
            self._keep(worked, logs)
            ran = worked.ran
            self.outputs.append(worked.answer if worked.answer is not None else ran.output)
            if ran.timed_out:
                self._failed(
                    Status.TIMEOUT,
                    f"the agent did not finish within {turn.seconds:g} s (its timeout_sec); "
                    "it was stopped and the tests graded what it left",
                )
        began = time.monotonic()
        rewards = self._verify(container, step, logs)
        timings.verifier = (timings.verifier or 0.0) + time.monotonic() - began
        if step is not None:
            for path in _artifact_paths(step.artifacts):
                self._collect(container, path, _kept_at(f"{logs}artifacts", path))
        return rewards

    def _keep(self, worked: Worked, logs: str) -> None:
        """The agent's steps into the trial's trajectory, its logs into `agent/`."""
        if worked.trajectory is not None:
            self.steps_taken += worked.trajectory.steps
            self.outcome.trajectory = worked.trajectory.model_copy(
                update={"steps": list(self.steps_taken)}
            )
        folder = self.folder / logs / "agent"
        for name, text in worked.logs.items():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")

    def _set_up(self, container: TrialContainer, step: StepConfig) -> bool:
        """The step's `workdir/` uploaded to the container's working folder and its
        setup.sh run there, then its healthcheck until it passes; False when either
        fails."""
        prefix = f"steps/{step.name}/workdir/"
        files = self.spec.under(prefix.rstrip("/"))
        workdir = self._workdir(container)
        if files:
            container.put(tar_of(files, self.contents, strip=prefix), workdir)
        if any(f.path == prefix + SETUP_SCRIPT for f in files):
            ran = container.run(
                f"bash {shlex.quote(workdir.rstrip('/') + '/' + SETUP_SCRIPT)}",
                self._within(self.config.environment.build_timeout_sec),
            )
            self.outputs.append(ran.output)
            if ran.code != 0:
                self._failed(
                    Status.INFRA_ERROR, f"step '{step.name}': setup.sh failed: {ran.output[-500:]}"
                )
                return False
        check = step.healthcheck
        return check is None or self._healthy(container, check, f"step '{step.name}'")

    def _healthy(self, container: TrialContainer, check: Healthcheck, what: str) -> bool:
        """Docker's HEALTHCHECK: the command every `interval_sec` until it exits 0;
        `retries` failures in a row, once `start_period_sec` is over, fail `what`."""
        began, failures = time.monotonic(), 0
        while True:
            ran = container.run(check.command, self._within(check.timeout_sec))
            if ran.code == 0:
                return True
            if time.monotonic() - began >= check.start_period_sec:
                failures += 1
            if failures >= check.retries:
                self._failed(
                    Status.INFRA_ERROR,
                    f"{what}: its healthcheck failed {failures} times: {ran.output.strip()[-300:]}",
                )
                return False
            time.sleep(check.interval_sec)

    def _verify(
        self, container: TrialContainer, step: StepConfig | None, logs: str
    ) -> dict[str, float] | None:
        """The task's tests (the shared `tests/`, then the step's on top) in /tests, run
        with the verifier's time and variables; the rewards they wrote, None when none."""
        verifier = self.config.verifier
        tests: dict[str, TaskFile] = {}
        for folder in ["tests", *([f"steps/{step.name}/tests"] if step else [])]:
            for file in self.spec.under(folder):
                tests[file.path.removeprefix(folder + "/")] = file
        # The tests wait beside /tests until the command that runs them puts them there
        # (and clears the last step's rewards): one `docker exec` for both.
        renamed = [f.model_copy(update={"path": p}) for p, f in tests.items()]
        container.put(tar_of(renamed, self.contents, strip="", into=TESTS_WAITING), "/tmp")
        user = (step.verifier.user if step else None) or verifier.user
        placed = (
            f"rm -rf /tests && mv /tmp/{TESTS_WAITING} /tests"
            f" && rm -f {LOGS}/verifier/reward.txt {LOGS}/verifier/reward.json"
        )
        if user:  # placed as root, run as the verifier's user
            cleared = container.run(placed, 60)
            if cleared.code != 0:
                raise ContainerError(f"could not place the tests: {cleared.output.strip()}")
        seconds = self._within(
            (step.verifier.timeout_sec if step else None) or verifier.timeout_sec
        )
        test = "bash /tests/test.sh"
        ran = container.run(
            test if user else f"{placed} && {test}",
            seconds,
            {**verifier.env, **(step.verifier.env if step else {})},
            user,
        )
        target = self.folder / logs
        if step is None:  # the whole of /logs at once: agent/, verifier/, artifacts/
            self._collect(container, f"{LOGS}/.", "")
        else:
            self._collect(container, f"{LOGS}/verifier", logs)
        (target / "verifier").mkdir(parents=True, exist_ok=True)
        (target / "verifier" / "test-stdout.txt").write_text(ran.output, encoding="utf-8")
        if ran.timed_out:
            self._failed(
                Status.TIMEOUT,
                f"the tests did not finish within {seconds:g} s (the verifier's timeout_sec)",
            )
            return None
        try:
            return read_rewards(target / "verifier")
        except RewardError as exc:
            self._failed(Status.INFRA_ERROR, f"the task's tests wrote a bad reward: {exc}")
            return None

    def _collect(self, container: TrialContainer, path: str, into: str) -> None:
        """`path` of the container (a file or a folder) copied under `into/` of the trial's
        files; nothing when it is not there."""
        tar = container.get(path)
        if tar is None:
            return
        target = self.folder / into
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
            archive.extractall(target, filter="data")

    def _workdir(self, container: TrialContainer) -> str:
        """The container's working folder: the task's `workdir`, else the image's."""
        if self.config.environment.workdir:
            return self.config.environment.workdir
        ran = container.run("pwd", 30)
        return ran.output.strip() or "/"

    def _text(self, path: str) -> str:
        file = self.spec.file(path)
        return self.contents[file.sha256].decode("utf-8", "replace") if file else ""

    def _within(self, seconds: float) -> float:
        """`seconds`, or what is left of the job's time when that is less."""
        return max(1.0, min(seconds, self.deadline - time.monotonic()))

    def _failed(self, status: Status, message: str) -> None:
        """Record the trial's failure; the first one stands."""
        log.warning("job %s: %s", self.job.job_id, message)
        if self.outcome.error is None:
            self.outcome.status, self.outcome.error = status, message


def _kept_at(folder: str, path: str) -> str:
    """Where an artifact goes among the trial's files: under `folder` at its path in the
    container (`/app/report.json` in `artifacts/app/`), as Harbor keeps it."""
    parent = str(PurePosixPath(path).parent).lstrip("/")
    inner = PurePosixPath(parent)
    if ".." in inner.parts:
        return folder  # a path that climbs: kept by its name only
    return f"{folder}/{parent}" if parent else folder


def _artifact_paths(artifacts: list[str | dict[str, object]]) -> list[str]:
    paths = []
    for artifact in artifacts:
        source = (
            artifact
            if isinstance(artifact, str)
            else artifact.get("source") or artifact.get("path")
        )
        if isinstance(source, str) and source:
            paths.append(source)
    return paths


def agent_for(job: Job) -> TaskAgent:
    """The agent of the job's target, working inside the container."""
    if job.target.kind in BUILT_IN:
        return BUILT_IN[job.target.kind]
    settings = resolved_settings(job.target)
    if isinstance(settings, CodexTarget):
        return CodexInTask(settings)
    raise ValueError(f"no agent of kind '{job.target.kind}' runs inside a task's container yet")
