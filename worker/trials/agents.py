"""The agents of a trial, each run inside the task's container: Harbor's `oracle` (the
task's own solution) and `nop` (nothing)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from evalrelay.bridge.evalfile.harbor.folder import TaskSpec
from evalrelay.bridge.results.trajectory import Trajectory
from evalrelay.worker.trials.container import Ran, TrialContainer
from evalrelay.worker.trials.files import tar_of


@dataclass(frozen=True)
class AgentTurn:
    """One step's work for the agent: what it is asked, and where the step's files are."""

    instruction: str
    folder: str
    """The task folder's path holding this step's `solution/` ("" or `steps/<name>/`)."""
    seconds: float
    env: dict[str, str]
    user: str | None


@dataclass(frozen=True)
class Preparation:
    """What the trial's container needs for the agent, known before it starts."""

    readable: list[Path] = field(default_factory=list)
    """Folders of the worker's mounted read-only at their own paths (the agent's program)."""
    network_of: str | None = None
    """A container whose network the trial's joins (the relay to the agent's model)."""


@dataclass(frozen=True)
class Worked:
    """What the agent did in one step: its command's run, its steps, and log files for
    the trial's `agent/` folder, by name."""

    ran: Ran
    trajectory: Trajectory | None = None
    logs: dict[str, str] = field(default_factory=dict)
    answer: str | None = None
    """The agent's last message, when it reports one; else its output stands for it."""


class TaskAgent(Protocol):
    def prepared(self, no_network: bool) -> contextlib.AbstractContextManager[Preparation]:
        """What the container needs for this agent, kept up while the trial runs."""

    def work(
        self, container: TrialContainer, spec: TaskSpec, contents: dict[str, bytes], turn: AgentTurn
    ) -> Worked | None:
        """Do the step in the container; None when the agent ran no command."""


class BuiltIn:
    """An agent that needs nothing of the worker's in the container."""

    @contextlib.contextmanager
    def prepared(self, no_network: bool) -> Iterator[Preparation]:
        yield Preparation()


class Nop(BuiltIn):
    """Does nothing: the verifier grades the environment as built."""

    def work(
        self, container: TrialContainer, spec: TaskSpec, contents: dict[str, bytes], turn: AgentTurn
    ) -> Worked | None:
        return None


class Oracle(BuiltIn):
    """Copies the step's `solution/` to /solution and runs `bash /solution/solve.sh`, with
    the task's `[solution].env`."""

    def work(
        self, container: TrialContainer, spec: TaskSpec, contents: dict[str, bytes], turn: AgentTurn
    ) -> Worked | None:
        prefix = f"{turn.folder}solution/"
        files = spec.under(prefix.rstrip("/"))
        if not any(f.path == f"{prefix}solve.sh" for f in files):
            return Worked(Ran(1, f"the task has no {prefix}solve.sh to run", False, 0.0))
        container.put(tar_of(files, contents, strip=prefix, into="solution"), "/")
        env = spec.config.solution.env
        return Worked(container.run("bash /solution/solve.sh", turn.seconds, env, turn.user))


BUILT_IN: dict[str, TaskAgent] = {"oracle": Oracle(), "nop": Nop()}
