"""OpenAI's Codex CLI inside a trial's container: `codex exec --json`, the step's
instruction on standard input, in the container's working folder.

Its program comes from the worker: the native binary of the npm package (statically
linked), mounted read-only, so a task's image needs no Node.js. Its model server is
reached through the relay (`worker.trials.relay`) at the endpoints the target's
`isolation.network` declares. The container is its sandbox, so Codex's own is off
(`-s danger-full-access`), as Harbor runs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from evalrelay.bridge.evalfile.harbor.folder import TaskSpec
from evalrelay.bridge.targets.settings import CodexTarget
from evalrelay.worker.agents.sandbox import install_root
from evalrelay.worker.providers.agent_cli import json_events
from evalrelay.worker.providers.codex import toml_value
from evalrelay.worker.providers.commands import find_executable
from evalrelay.worker.providers.trajectory.codex import codex_trajectory
from evalrelay.worker.trials.agents import AgentTurn, Preparation, Worked
from evalrelay.worker.trials.container import TrialContainer
from evalrelay.worker.trials.relay import model_relay

HOME = "/tmp/evalrelay-codex"
"""CODEX_HOME and HOME inside the container: Codex's state, apart from the task's files."""
LOG_NAME = "codex.txt"


class CodexInTask:
    def __init__(self, settings: CodexTarget) -> None:
        self.settings = settings
        self.binary = ""

    @contextlib.contextmanager
    def prepared(self, no_network: bool) -> Iterator[Preparation]:
        self.binary = native_binary(find_executable(self.settings.executable, "Codex CLI"))
        readable = [install_root(Path(self.binary).resolve())]
        endpoints = self.settings.isolation.network
        if not endpoints:
            yield Preparation(readable)
            return
        with model_relay(endpoints, self.settings.isolation.image, no_network) as relay:
            yield Preparation(readable, relay)

    def work(
        self, container: TrialContainer, spec: TaskSpec, contents: dict[str, bytes], turn: AgentTurn
    ) -> Worked:
        made = container.run(f"mkdir -p {HOME}", 30)
        if made.code != 0:
            return Worked(made)
        env = {**self.settings.env, **turn.env, "CODEX_HOME": HOME, "HOME": HOME}
        ran = container.run_argv(
            self.command(), turn.seconds, env, turn.user, stdin=turn.instruction
        )
        events = json_events(ran.stdout)
        said = [
            str(e["item"].get("text", ""))
            for e in events
            if e.get("type") == "item.completed"
            and isinstance(e.get("item"), dict)
            and e["item"].get("type") == "agent_message"
        ]
        logs = {LOG_NAME: ran.stdout}
        return Worked(ran, codex_trajectory(events), logs, said[-1] if said else None)

    def command(self) -> list[str]:
        settings = self.settings
        argv = [self.binary, "--ask-for-approval", "never", "exec", "--json", "--color", "never"]
        argv += ["--skip-git-repo-check", "-s", settings.sandbox or "danger-full-access"]
        for flag, value in (("-m", settings.model), ("-p", settings.profile)):
            if value:
                argv += [flag, value]
        for key, value in settings.config.items():
            argv += ["-c", f"{key}={toml_value(value)}"]
        return [*argv, *settings.args, "-"]


def native_binary(executable: str) -> str:
    """Codex's own program: `executable` when it is one, else the binary its npm
    package ships for Linux (the `codex` command there is a Node.js script)."""
    path = Path(executable).resolve()
    with path.open("rb") as program:
        if program.read(4) == b"\x7fELF":
            return str(path)
    root = install_root(path.resolve())
    found = sorted(root.glob("node_modules/@openai/codex*/vendor/*-linux-musl/bin/codex"))
    if not found:
        raise FileNotFoundError(
            f"no native Codex binary under {root}; a task's container runs Codex's Linux "
            "build (npm @openai/codex ships it)"
        )
    return str(found[0])
