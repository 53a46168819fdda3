"""promptfoo's `transform` (an assertion's) and `options.transform` (a test's, or the
default test's) as the answer transforms evalrelay's evaluators take: each a command the
worker runs before the evaluator grades, in the config's folder, bounded as the
`javascript` assertions' scripts are. promptfoo applies the test's transform first, then
the assertion's, each to what the one before returned."""

from __future__ import annotations

from typing import Any

from evalrelay.bridge.evalfile.promptfoo.functions import RUNNERS, python_runner, split_reference

JS_TRANSFORM = (RUNNERS / "transform_runner.js").read_text(encoding="utf-8")
PY_TRANSFORM = python_runner("transform_runner.py")


def options_transforms(options: dict[str, Any]) -> list[dict[str, Any]]:
    """The test's transform (`options.transform`, or its older name `postprocess`)."""
    value = options.get("transform") or options.get("postprocess")
    return [transform_step(value)] if isinstance(value, str) and value.strip() else []


def with_transforms(entry: dict[str, Any], before: list[dict[str, Any]]) -> dict[str, Any]:
    """`entry` with `before` and its own `transform` as its answer transforms."""
    own = entry.get("transform")
    steps = before + ([transform_step(own)] if isinstance(own, str) and own else [])
    rest = {k: v for k, v in entry.items() if k != "transform"}
    return {**rest, "transforms": steps} if steps else rest


def transform_step(value: str) -> dict[str, Any]:
    """One transform: inline JavaScript, or a `file://` JavaScript or Python function. It
    runs in the config's folder (the job's evaluators are resolved from there)."""
    config: dict[str, Any] = {"vars": "{{ vars }}"}
    command = ["node", "-e", JS_TRANSFORM]
    if value.startswith("file://"):
        path, name = split_reference(value)
        config["file"] = path  # found from the config's folder, where it runs
        if name:
            config["function"] = name
        if path.endswith(".py"):
            command = ["python3", "-I", "-c", PY_TRANSFORM]
    else:
        config["code"] = value.strip()
    return {"command": command, "config": config}
