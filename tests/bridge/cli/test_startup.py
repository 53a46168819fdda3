"""What a command imports to start: only what it runs.

Each command runs in a process of its own, as a user starts it, and writes the modules it
had loaded when it exited. The statistics' libraries (numpy, scipy, statsmodels, pandas:
seconds of imports), the vendors' SDKs, the JSON Schema checker and the price database are
imported only when used; the module counts are budgets with some headroom over what the
commands load now, so a new import at start-up shows here before it shows in a user's
wait (`bench/cold_start.py` times the same run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import embedded_env, one_turn_cases

RECORD_MODULES = """\
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["evalrelay", *sys.argv[2:]]
from evalrelay.bridge.cli.main import main
main()
"""
"""The CLI's own entry point, recording `sys.modules` on the way out (a forked local worker
leaves by `os._exit`, so only the command's process writes)."""

NEVER_AT_START = (
    "numpy",
    "scipy",
    "statsmodels",
    "pandas",
    "openai",
    "anthropic",
    "google.genai",
    "jsonschema",
    "genai_prices",
)
"""Modules no command below loads unless what it does needs them (a graded result's
statistics, a vendor's call, a file with a JSON Schema, `--estimate`'s prices)."""


def modules_of(args: list[str], cwd: Path, env: dict[str, str]) -> set[str]:
    out = cwd / "modules.json"
    subprocess.run(
        [sys.executable, "-c", RECORD_MODULES, str(out), *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return set(json.loads(out.read_text()))


def heavy(modules: set[str], names: tuple[str, ...] = NEVER_AT_START) -> list[str]:
    return sorted(name for name in names if name in modules)


@pytest.fixture
def one_case(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the project's root
    (tmp_path / "one.yaml").write_text(one_turn_cases(1))
    return tmp_path


def test_the_entry_point_imports_no_command(one_case: Path, private_home: Path) -> None:
    """`import evalrelay.bridge.cli.main`: the group, logging and masking; no command's imports."""
    out = one_case / "modules.json"
    code = (
        "import json, sys, evalrelay.bridge.cli.main\n"
        f"open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules)))"
    )
    env = embedded_env(private_home)
    subprocess.run([sys.executable, "-c", code], cwd=one_case, env=env, check=True, timeout=60)
    modules = set(json.loads(out.read_text()))
    assert not heavy(modules, (*NEVER_AT_START, "jinja2", "celery", "redis", "rich.progress"))
    assert "evalrelay.bridge.targets.settings" not in modules  # the key variables come without it
    assert len(modules) <= 300, f"{len(modules)} modules at import (budget 300)"


def test_help_lists_every_command_without_their_heavy_imports(
    one_case: Path, private_home: Path
) -> None:
    modules = modules_of(["--help"], one_case, embedded_env(private_home))
    assert not heavy(modules)
    assert len(modules) <= 1100, f"{len(modules)} modules for --help (budget 1100)"


def test_validate_loads_no_queue_nor_template_engine(one_case: Path, private_home: Path) -> None:
    modules = modules_of(["validate", "one.yaml"], one_case, embedded_env(private_home))
    assert not heavy(modules, (*NEVER_AT_START, "jinja2", "celery", "rich.progress"))
    assert len(modules) <= 460, f"{len(modules)} modules for validate (budget 460)"


def test_a_run_of_an_ungraded_case_never_loads_the_statistics(
    one_case: Path, private_home: Path
) -> None:
    """A one-case mock run, embedded, start to exit: its summary has nothing graded, so no
    statistics' library is loaded, nor any SDK; it writes its HTML report all the same.
    The worker's modules and the HTTP client are the forked worker's own: it imports them
    on the other core while the command imports its own (it was 2,100 modules with the
    statistics, 1,000 with the worker's)."""
    modules = modules_of(
        ["run", "one.yaml", "--target", "mock"], one_case, embedded_env(private_home)
    )
    assert not heavy(modules, (*NEVER_AT_START, "httpx"))
    assert not [name for name in modules if name.startswith("evalrelay.worker")]
    assert len(modules) <= 850, f"{len(modules)} modules for a one-case run (budget 850)"
    assert len(list((one_case / "results").glob("*.html"))) == 1
