"""An evalrelay process's environment is out of reach of the programs it runs: a
host-runtime agent, running as the same user, looks for a key in every process's
`/proc/<pid>/environ` and finds it nowhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import WriteFiles, embedded_env, read_jsonl

SECRET = "sk-private-0123456789abcdef"

SNOOP = (
    "for f in /proc/[0-9]*/environ; do "
    f"grep -q {SECRET} $f 2>/dev/null && echo found:$f; done; "
    "cat /proc/$PPID/environ >/dev/null 2>&1 && echo parent:read || echo parent:refused; "
    "echo done"
)
"""What the agent runs: every environment it can read, searched for the key."""


UNPRIVILEGED = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]
"""Run without any capability, as an ordinary user runs: with CAP_SYS_PTRACE (root's) a
process reads any other's environment, whatever it marks."""


def test_an_agent_reads_no_key_from_any_evalrelay_process(
    project: WriteFiles, private_home: Path
) -> None:
    """A real `evalrelay run` on the embedded default (its worker in-process, its own
    redis-server and the keeper of it) holding a key; the agent, run on the host by the
    same user, searches every process's environment for the key."""
    root = project(
        {
            "evalrelay.yaml": "",
            "targets.yaml": (
                "targets:\n"
                "  - name: snoop\n"
                "    provider: cli\n"
                f"    command: [sh, -c, {json.dumps(SNOOP)}]\n"
            ),
            "evals.yaml": (
                "evalcases:\n  - id: a\n    input_messages: [{role: user, content: hi}]\n"
            ),
        }
    )
    done = subprocess.run(
        [*UNPRIVILEGED, sys.executable, "-m", "evalrelay", "run", "evals.yaml",
         "--target", "snoop"],
        cwd=root,
        env=embedded_env(private_home) | {"OPENAI_API_KEY": SECRET},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = read_jsonl(next((root / "results").glob("*.jsonl")))
    answer = str(result["answer"])
    assert answer.endswith("done"), answer
    assert "found:" not in answer, answer
    assert "parent:refused" in answer, answer


PROBE = r"""
import os, subprocess, sys
from evalrelay.bridge.private import keep_private
if sys.argv[1] == "private":
    keep_private()
child = subprocess.run(
    ["sh", "-c", "cat /proc/$PPID/environ | tr '\\0' '\\n' | grep -c KEY_HELD || echo refused"],
    env={"PATH": os.environ["PATH"]}, capture_output=True, text=True,
)
print(child.stdout.strip().splitlines()[-1])
"""


def test_a_child_of_the_same_user_reads_the_environment_only_of_a_process_not_private() -> None:
    """The mechanism on its own, both ways: the same probe, made private or not."""
    said = {}
    for mode in ("private", "plain"):
        done = subprocess.run(
            [*UNPRIVILEGED, sys.executable, "-c", PROBE, mode],
            env={**os.environ, "KEY_HELD": SECRET},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        said[mode] = done.stdout.strip()
    assert said == {"private": "refused", "plain": "1"}


def test_a_worker_process_is_private_and_its_children_are_not(tmp_path: Path) -> None:
    """The flag holds in the process that sets it; a program it executes starts over."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import subprocess, sys\n"
        "from evalrelay.bridge.private import is_private, keep_private\n"
        "print(keep_private(), is_private())\n"
        "child = subprocess.run([sys.executable, '-c', "
        "'from evalrelay.bridge.private import is_private; print(is_private())'], "
        "capture_output=True, text=True)\n"
        "print(child.stdout.strip())\n"
    )
    done = subprocess.run(
        [sys.executable, str(probe)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "True", "False"]
