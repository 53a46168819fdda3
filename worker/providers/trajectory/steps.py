"""What the agents' event streams have in common: steps built, kinds named, times read."""

from __future__ import annotations

import json
import shlex
from datetime import datetime
from typing import Any

from evalrelay.bridge.results.trajectory import (
    MOST_STEPS,
    StepKind,
    Trajectory,
    TrajectoryStep,
    trimmed,
    trimmed_arguments,
)

READERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "sed", "bat"})
SEARCHERS = frozenset({"grep", "rg", "find", "ls", "fd", "tree", "ag"})
VALUED = {name: frozenset({"-n", "-c"}) for name in ("head", "tail")}
"""Options of the readers that take a value as the next word (`head -n 5 FILE`)."""
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})
_CONTROL = frozenset("|&;<>`$(")


def step(
    tool: str,
    kind: StepKind,
    arguments: Any,
    output: Any = None,
    *,
    ok: bool | None = None,
    paths: list[str] | None = None,
    duration_ms: int | None = None,
    usage: dict[str, int] | None = None,
) -> TrajectoryStep:
    text, cut = trimmed(output_text(output)) if output is not None else (None, 0)
    return TrajectoryStep(
        tool=tool,
        kind=kind,
        arguments=trimmed_arguments(arguments),
        output=text,
        output_chars_cut=cut,
        ok=ok,
        paths=paths or [],
        duration_ms=duration_ms,
        usage=usage,
    )


def kept(agent: str, steps: list[TrajectoryStep], **figures: Any) -> Trajectory:
    """The trajectory, its steps past `MOST_STEPS` counted instead of kept."""
    return Trajectory(
        agent=agent,
        steps=steps[:MOST_STEPS],
        steps_not_kept=max(0, len(steps) - MOST_STEPS),
        **figures,
    )


def output_text(output: Any) -> str:
    """A tool's output as text: strings as they are, content blocks by their text."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(output_text(part) for part in output)
    if isinstance(output, dict):
        for key in ("text", "content", "output"):
            if isinstance(output.get(key), str | list):
                return output_text(output[key])
    return json.dumps(output, ensure_ascii=False)


def command_kind(command: str) -> tuple[StepKind, list[str]]:
    """`read` for a plain `cat FILE`-like command (and the files), `search` for `grep`,
    `ls`, `find` and the like, else `command`. A shell's `-c`/`-lc` script is looked into."""
    words = _words(command)
    if len(words) >= 3 and words[0] in _SHELLS and words[1].startswith("-") and "c" in words[1]:
        words = _words(words[2])
    if not words or any(c in _CONTROL for w in words for c in w):
        return "command", []
    program = words[0].rsplit("/", 1)[-1]
    operands = _operands(words[1:], VALUED.get(program, frozenset()))
    if program in READERS and operands:
        return "read", operands[-1:] if program == "sed" else operands
    if program in SEARCHERS:
        return "search", []
    return "command", []


def _operands(words: list[str], valued: frozenset[str]) -> list[str]:
    """The words that are not options, nor the values of options that take one."""
    operands, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in valued
        else:
            operands.append(word)
    return operands


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return []


def milliseconds_between(start: Any, end: Any) -> int | None:
    """The time between two ISO 8601 timestamps, when both are there."""
    try:
        first = datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        last = datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0, int((last - first).total_seconds() * 1000))


def token_counts(usage: Any) -> dict[str, int] | None:
    """The `*_tokens` counts of a usage record, when there are any."""
    if not isinstance(usage, dict):
        return None
    counts = {k: v for k, v in usage.items() if k.endswith("_tokens") and isinstance(v, int)}
    return counts or None
