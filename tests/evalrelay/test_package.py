"""What `pip install .` installs: one top-level package, `evalrelay`, holding `bridge`,
`worker` and `workspace_templates` (the repository's folders, linked under `evalrelay/`)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built as `pip install .` builds it."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    (built,) = out.glob("evalrelay-*.whl")
    return built


def test_the_wheel_installs_one_package_named_evalrelay(wheel: Path) -> None:
    """Every file it installs is under `evalrelay/` or its dist-info (what `pip show -f`
    lists): no top-level `bridge`, `worker` or `workspace_templates` to clash with."""
    with zipfile.ZipFile(wheel) as built:
        names = built.namelist()
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        installed = [row[0] for row in csv.reader(built.read(record).decode().splitlines())]
    assert sorted(installed) == sorted(names)
    tops = {name.split("/")[0] for name in installed}
    assert tops == {"evalrelay", record.split("/")[0]}
    for needed in (
        "evalrelay/__init__.py",
        "evalrelay/api.py",
        "evalrelay/py.typed",
        "evalrelay/bridge/cli/main.py",
        "evalrelay/worker/app.py",
        "evalrelay/bridge/reports/report.html.j2",
        "evalrelay/bridge/evalfile/agentv_ts/read_eval.js",
        "evalrelay/worker/agents/sandbox.Dockerfile",
        "evalrelay/workspace_templates/codex/AGENTS.md",
    ):
        assert needed in installed, needed


def test_the_installed_package_imports_and_documents_run(wheel: Path, tmp_path: Path) -> None:
    """Installed apart from the repository, `import evalrelay` finds the installed copy, and
    `help(evalrelay.run)` and `python -m evalrelay --help` work."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
         str(wheel)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    env = os.environ | {"PYTHONPATH": str(target), "PAGER": "cat"}
    program = "import evalrelay; print(evalrelay.__file__); help(evalrelay.run)"
    shown = subprocess.run(
        [sys.executable, "-c", program], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == str(target / "evalrelay" / "__init__.py")
    assert "run(paths" in shown.stdout and "targets" in shown.stdout  # run's own, not a stand-in
    assert "wait for every job's line" in shown.stdout
    command = subprocess.run(
        [sys.executable, "-m", "evalrelay", "--help"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60,
    )
    assert command.returncode == 0, command.stderr
    assert "validate" in command.stdout and "run" in command.stdout
