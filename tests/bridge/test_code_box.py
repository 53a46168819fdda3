"""The code box (`bridge.code_box`), with real bubblewrap: what boxed code can and cannot
reach."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evalrelay.bridge.code_box import BOX_HOME, BoxUnavailable, box_mode, boxed, project_folder

PROBE = """
import os, socket, sys
def tried(what, action):
    try:
        action()
        print(what, "yes")
    except OSError:
        print(what, "no")
tried("neighbour", lambda: open("../lib/helper.py").read())
tried("host", lambda: open(sys.argv[1]).read())
tried("write-project", lambda: open("new.txt", "w").write("x"))
tried("write-workspace", lambda: open(sys.argv[2] + "/made.txt", "w").write("x"))
tried("network", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=2))
print("uid", os.getuid())
print("env", sorted(os.environ))
"""


def run_boxed(argv: list[str], cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    command, env = boxed(argv, cwd=cwd, env={"PATH": os.environ["PATH"]}, **kwargs)  # type: ignore[arg-type]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_boxed_code_reads_its_project_writes_what_it_is_given_and_nothing_else(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / "evals").mkdir(parents=True)
    (project / "lib").mkdir()
    (project / "evalrelay.yaml").write_text("")
    (project / "lib" / "helper.py").write_text("X = 1\n")
    (project / "evals" / "probe.py").write_text(PROBE)
    host = tmp_path / "host-only.txt"
    host.write_text("the worker's\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        done = run_boxed(
            [sys.executable, "probe.py", str(host), str(workspace), str(port)],
            project / "evals",
            writable=[workspace],
        )
    assert done.returncode == 0, done.stderr
    seen = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert seen["neighbour"] == "yes"  # the whole project, found by its evalrelay.yaml
    assert seen["host"] == "no"
    assert seen["write-project"] == "no"
    assert seen["write-workspace"] == "yes"
    assert (workspace / "made.txt").read_text() == "x"
    assert seen["network"] == "no"  # the box's loopback is its own
    assert seen["uid"] == "65534"
    assert seen["env"] == str(["HOME", "LC_CTYPE", "PATH", "PWD", "TMPDIR"])


def test_an_inbox_is_the_top_of_what_a_dropped_files_code_reads(tmp_path: Path) -> None:
    """The operator's project around an inbox (its targets file, its results) is out of
    reach of the code in a file dropped there."""
    project = tmp_path / "project"
    inbox = project / "inbox"
    for name in ("queued", "done", "failed"):
        (inbox / name).mkdir(parents=True)
    (project / "evalrelay.yaml").write_text("")
    (project / "targets.yaml").write_text("targets: []\n")
    (inbox / "data.txt").write_text("dropped\n")
    assert project_folder(inbox / "queued") == inbox
    done = run_boxed(["sh", "-c", "cat ../data.txt; cat ../../targets.yaml"], inbox / "queued")
    assert done.stdout == "dropped\n"
    assert "No such file" in done.stderr


def test_memory_past_the_limit_is_refused_and_node_starts_under_it(tmp_path: Path) -> None:
    hog = "x = bytearray(300 * 1024 * 1024); print('held')"
    done = run_boxed([sys.executable, "-c", hog], tmp_path, memory_mb=100)
    assert done.returncode != 0 and "MemoryError" in done.stderr
    node = run_boxed(["node", "-e", "console.log(process.env.HOME)"], tmp_path, memory_mb=256)
    assert node.returncode == 0, node.stderr
    assert node.stdout.strip() == BOX_HOME


def test_processes_past_the_limit_are_refused(tmp_path: Path) -> None:
    forks = "for i in $(seq 40); do sleep 5 & done 2>/dev/null; wait; echo $?"
    done = run_boxed(["sh", "-c", forks + "; ps -e | wc -l"], tmp_path, processes=8)
    assert int(done.stdout.split()[-1]) <= 10, done.stdout  # sh, ps, wc and a few sleeps


def test_none_leaves_the_command_as_it_is_and_other_words_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALRELAY_CODE_BOX", "none")
    assert boxed(["true"], cwd=tmp_path, env={"PATH": "/usr/bin"}) == (
        ["true"],
        {"PATH": "/usr/bin"},
    )
    assert box_mode({"EVALRELAY_CODE_BOX": "bubblewrap"}) == "bubblewrap"
    with pytest.raises(BoxUnavailable, match="not one of bubblewrap, none"):
        box_mode({"EVALRELAY_CODE_BOX": "docker"})


def test_without_bubblewrap_it_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BoxUnavailable, match="apt-get install bubblewrap"):
        boxed(["true"], cwd=tmp_path, env={})
