"""The agents of a trial, each run inside the task's container: Harbor's `oracle` (the
task's own solution) and `nop` (nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bridge.evalfile.harbor.folder import TaskSpec
from worker.trials.container import Ran, TrialContainer
from worker.trials.files import tar_of


@dataclass(frozen=True)
class AgentTurn:
    """One step's work for the agent: what it is asked, and where the step's files are."""

    instruction: str
    folder: str
    """The task folder's path holding this step's `solution/` ("" or `steps/<name>/`)."""
    seconds: float
    env: dict[str, str]
    user: str | None


class TaskAgent(Protocol):
    def work(
        self, container: TrialContainer, spec: TaskSpec, contents: dict[str, bytes], turn: AgentTurn
    ) -> Ran | None:
        """Do the step in the container; None when the agent ran no command."""


class Nop:
    """Does nothing: the verifier grades the environment as built."""

    def work(
        self, container: TrialContainer, spec: TaskSpec, contents: dict[str, bytes], turn: AgentTurn
    ) -> Ran | None:
        return None


class Oracle:
    """Copies the step's `solution/` to /solution and runs `bash /solution/solve.sh`."""

    def work(
        self, container: TrialContainer, spec: TaskSpec, contents: dict[str, bytes], turn: AgentTurn
    ) -> Ran | None:
        prefix = f"{turn.folder}solution/"
        files = spec.under(prefix.rstrip("/"))
        if not any(f.path == f"{prefix}solve.sh" for f in files):
            return Ran(1, f"the task has no {prefix}solve.sh for the oracle to run", False, 0.0)
        cleared = container.run("rm -rf /solution", 30)
        if cleared.code != 0:
            return cleared
        container.put(tar_of(files, contents, strip=prefix, into="solution"), "/")
        return container.run("bash /solution/solve.sh", turn.seconds, turn.env, turn.user)


def agent_for(kind: str) -> TaskAgent:
    """The agent of a target kind (`bridge.targets.settings.TASK_AGENT_KINDS`)."""
    agents: dict[str, TaskAgent] = {"oracle": Oracle(), "nop": Nop()}
    if kind not in agents:
        raise ValueError(f"no agent of kind '{kind}' runs inside a task's container yet")
    return agents[kind]
