"""AgentV's `scenarios:` (its July 2026 format): each scenario's `config` rows crossed with
its `tests` rows, every pair one test, as AgentV lowers them.

A pair is the config row overlaid by the test row: `vars`, `metadata`, `options` and
`run` merged (the test's keys win), `assert` lists joined (the config row's first). Its
id is the test's, else the config row's (`<config id>__scenario_test_<n>` when the
scenario has several tests), else `scenario-<s>-<c>-<t>` by place, from 1. A scenario may
be a `file://` reference (a glob too) to YAML or JSON holding a list of scenarios, or
`{scenarios: [...]}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evalrelay.bridge.evalfile.yaml_source import Loc, load_yaml

Fail = Callable[[Loc, str], None]
Inside = Callable[[Path, Loc], bool]
MERGED = ("vars", "metadata", "options", "run")


def scenario_tests(
    raw: Any, folder: Path, inside: Inside, fail: Fail
) -> Iterator[tuple[Loc, dict[str, Any]]]:
    """(where it was written, test) for each config row and test row of each scenario."""
    if not isinstance(raw, list):
        fail(("scenarios",), "scenarios must be a list of scenarios or file:// references")
        return
    scenarios: list[tuple[Loc, Any, bool]] = []
    for i, entry in enumerate(raw):
        if isinstance(entry, str) and entry.startswith("file://"):
            scenarios += [(("scenarios", i), s, False) for s in _from_files(entry, folder, (
                "scenarios", i), inside, fail)]  # fmt: skip
        else:
            scenarios.append((("scenarios", i), entry, True))
    for s, (loc, scenario, written_here) in enumerate(scenarios):
        yield from _pairs(s, loc, scenario, written_here, fail)


def _pairs(
    s: int, loc: Loc, scenario: Any, written_here: bool, fail: Fail
) -> Iterator[tuple[Loc, dict[str, Any]]]:
    configs = scenario.get("config") if isinstance(scenario, dict) else None
    tests = scenario.get("tests") if isinstance(scenario, dict) else None
    if not isinstance(configs, list) or not isinstance(tests, list):
        fail(loc, "a scenario is a mapping with a `config` list and a `tests` list")
        return
    for c, config in enumerate(configs):
        for k, test in enumerate(tests):
            where: Loc = (*loc, "tests", k) if written_here else loc
            if not isinstance(config, dict) or not isinstance(test, dict):
                fail(where, "scenario config rows and tests are mappings")
                continue
            yield where, _merged(config, test, _id(config, test, s, c, k, len(tests)))


def _merged(config: dict[str, Any], test: dict[str, Any], case_id: str) -> dict[str, Any]:
    out = {**config, **test}
    for key in MERGED:
        both = {**_mapping(config.get(key)), **_mapping(test.get(key))}
        if both:
            out[key] = both
    asserts = _listed(config.get("assert")) + _listed(test.get("assert"))
    if asserts:
        out["assert"] = asserts
    return {**out, "id": case_id}


def _id(config: dict[str, Any], test: dict[str, Any], s: int, c: int, k: int, n: int) -> str:
    if isinstance(test.get("id"), str) and test["id"].strip():
        return str(test["id"])
    if isinstance(config.get("id"), str) and config["id"].strip():
        return f"{config['id']}__scenario_test_{k + 1}" if n > 1 else str(config["id"])
    return f"scenario-{s + 1}-{c + 1}-{k + 1}"


def _from_files(reference: str, folder: Path, loc: Loc, inside: Inside, fail: Fail) -> list[Any]:
    """The scenarios in the files a `file://` reference (or glob) names, in path order."""
    pattern = folder / reference.removeprefix("file://")
    globbed = any(ch in str(pattern) for ch in "*?[")
    paths = sorted(pattern.parent.glob(pattern.name)) if globbed else [pattern]
    if not paths:
        fail(loc, f"no scenario file matches {reference}")
    found: list[Any] = []
    for path in paths:
        if not inside(path, loc):
            continue
        if not path.is_file():
            fail(loc, f"scenario file not found: {path}")
            continue
        if path.suffix not in (".yaml", ".yml", ".json"):
            fail(loc, f"scenario file {path.name}: AgentV reads YAML or JSON scenario files")
            continue
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else load_yaml(path, text).data
        listed = data.get("scenarios") if isinstance(data, dict) else data
        if data is None:
            continue  # an empty file, which AgentV skips
        if not isinstance(listed, list):
            fail(loc, f"scenario file {path.name} holds no list of scenarios")
            continue
        found += listed
    return found


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
