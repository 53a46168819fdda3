"""A `cli` target's command must not hand case content to a shell inside its script.

The worker runs the command without a shell and fills each placeholder into its own
argument, so `{prompt}` can hold any text. In `sh -c 'agent {prompt}'` the filled-in
argument is itself shell code: the case's text would run as commands on the worker. The
same holds for any interpreter given a script as an argument (`bash -c`, `cmd /c`,
`powershell -Command`, `python -c`, `node -e`...): such a template is refused when the
targets file loads.

The paths evalrelay makes itself (`{output_file}`, `{task_file}`, `{workspace}`) may
stand inside a POSIX shell's script, as AgentV's targets write them
(`bash -c '... > {OUTPUT_FILE}'`): the worker fills them in shell-quoted there
(`shell_scripts`), so a campaign name inside the path stays one word of data.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PureWindowsPath

PLACEHOLDERS = frozenset(
    {"task_file", "prompt_file", "output_file", "workspace", "prompt", "files"}
)
"""The placeholders the worker fills in (case does not matter; `prompt_file` is `task_file`)."""

QUOTED_IN_SHELLS = frozenset({"task_file", "prompt_file", "output_file", "workspace"})
"""Paths evalrelay makes, filled in shell-quoted inside a POSIX shell's script. `{prompt}`
and `{files}` carry the case's content and stay refused there."""

POSIX_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
"""The shells whose quoting `shlex.quote` writes."""

PLACEHOLDER = re.compile(r"\{([A-Za-z_]+)\}")

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})
SCRIPT_OPTIONS: dict[str, re.Pattern[str]] = {
    **{shell: re.compile(r"-[a-z]*c[a-z]*") for shell in SHELLS},  # -c, -lc, -ec...
    "busybox": re.compile(r"-[a-z]*c[a-z]*"),
    "python": re.compile(r"-[a-zA-Z]*c"),
    "cmd": re.compile(r"/[ck]", re.IGNORECASE),
    "powershell": re.compile(r"-(c|command|e|ec|encodedcommand)", re.IGNORECASE),
    "node": re.compile(r"-e|--eval|-p|--print"),
    "deno": re.compile(r"eval"),
    "perl": re.compile(r"-[a-zA-Z]*[eE]"),
    "ruby": re.compile(r"-[a-zA-Z]*e"),
    "php": re.compile(r"-r"),
    "osascript": re.compile(r"-e"),
}
"""Each interpreter, and the options after which its next argument is a script."""


def interpreter(token: str) -> str | None:
    """The interpreter a program name runs (`/usr/bin/python3.12` is `python`), or None."""
    name = PureWindowsPath(token).name.lower().removesuffix(".exe")
    name = re.sub(r"^(python|pypy)[0-9.]*$", "python", name)
    name = {"pwsh": "powershell", "nodejs": "node"}.get(name, name)
    return name if name in SCRIPT_OPTIONS else None


def placeholders_in_scripts(command: str | list[str]) -> list[tuple[str, str, str]]:
    """(program, its script option, placeholder) for each placeholder written inside a
    script that an interpreter of the command would run (`env`, `timeout` and the like
    may come first: every interpreter named in the command is looked at)."""
    tokens = shlex.split(command) if isinstance(command, str) else list(command)
    found = []
    for index, token in enumerate(tokens):
        name = interpreter(token)
        script = _script_after(name, tokens[index + 1 :]) if name else None
        if name is not None and script is not None:
            option, text, _ = script
            found += [
                (PureWindowsPath(token).name, option, f"{{{m}}}")
                for m in PLACEHOLDER.findall(text)
                if m.lower() in PLACEHOLDERS
                and not (name in POSIX_SHELLS and m.lower() in QUOTED_IN_SHELLS)
            ]
    return found


def shell_scripts(tokens: list[str]) -> set[int]:
    """The indices of the tokens that are a POSIX shell's script (`bash -c SCRIPT`):
    where the worker fills placeholders in shell-quoted."""
    found = set()
    for index, token in enumerate(tokens):
        name = interpreter(token)
        script = _script_after(name, tokens[index + 1 :]) if name in POSIX_SHELLS else None
        if name is not None and script is not None:
            found.add(index + 1 + script[2])
    return found


def _script_after(name: str, arguments: list[str]) -> tuple[str, str, int] | None:
    """The interpreter's script option, its script and the script's index in
    `arguments`, if its options give one."""
    index = 0
    while index + 1 < len(arguments):
        option = arguments[index]
        if SCRIPT_OPTIONS[name].fullmatch(option):
            return option, arguments[index + 1], index + 1
        if option in VALUE_OPTIONS.get(name, ()):
            index += 2  # `bash -o pipefail -c ...`
        elif option.startswith(("-", "/", "+")) or name == "powershell":
            index += 1
        else:
            return None  # a script file or the first argument: the options are over
    return None


VALUE_OPTIONS = {
    **{shell: frozenset({"-o", "+o", "-O", "+O"}) for shell in SHELLS},
    "python": frozenset({"-W", "-X"}),
    "node": frozenset({"-r", "--require", "--import"}),
}
"""Options whose value is the next argument, so that argument does not end the options.
PowerShell's are many (`-ExecutionPolicy Bypass`): all its arguments are looked at."""


def check_no_placeholder_in_scripts(command: str | list[str]) -> str | list[str]:
    """The command as it is, or a ValueError saying how to pass the placeholder instead."""
    found = placeholders_in_scripts(command)
    if found:
        program, option, placeholder = found[0]
        raise ValueError(
            f"{placeholder} is inside the script `{program} {option}` runs, so the case's text "
            f"would run as code on the worker; pass it as an argument of its own after the "
            f"script (`sh -c 'agent \"$1\"' sh {placeholder}`), or run the agent without a "
            f"shell, reading {{prompt_file}} or standard input"
        )
    return command
