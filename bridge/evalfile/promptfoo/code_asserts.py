"""promptfoo's `javascript` and `python` assertions as evalrelay `script` evaluators.

The worker runs the script as it runs any grading script (its own process, the job's time
limit, no shell). The runner below gives the code what promptfoo gives it, `output` and a
`context` with `vars` and `prompt`, and reads its return as promptfoo does: a boolean, a
number (the score, a pass when above 0 or at least `threshold`), or a grading result
with its own `pass` and `score`. It prints both; promptfoo grading counts the pass.
"""

from __future__ import annotations

from typing import Any

from bridge.evalfile.promptfoo.functions import RUNNERS, python_runner, split_reference

PY_RUNNER = python_runner("assert_runner.py")
JS_RUNNER = (RUNNERS / "assert_runner.js").read_text(encoding="utf-8")
"""Sent as `python3 -c` / `node -e` arguments, so a worker needs no copy of evalrelay's
files beside its own installation to run them."""

CODE_TYPES = ("javascript", "python", "not-javascript", "not-python")


def code_assertion(entry: dict[str, Any], folder: str) -> dict[str, Any]:
    """A `script` evaluator entry for one javascript/python assertion (its `not-` form
    negated). `folder` is the config's folder: a `file://` check is found from there."""
    kind = str(entry["type"])
    language = kind.removeprefix("not-")
    value = entry.get("value")
    argv = ["python3", "-I", "-c", PY_RUNNER] if language == "python" else ["node", "-e", JS_RUNNER]
    out: dict[str, Any] = {
        "type": "script",
        "command": argv,
        "cwd": folder,
        "pf_vars": "{{ vars }}",
    }
    if isinstance(value, str) and value.startswith("file://"):
        path, name = split_reference(value)
        out["pf_file"] = path if path.startswith("/") else f"{folder}/{path}"
        if name:
            out["pf_function"] = name
    else:
        out["pf_code"] = "" if value is None else str(value)
    if entry.get("threshold") is not None:
        out["pf_threshold"] = entry["threshold"]
    if kind.startswith("not-"):
        out["pf_inverse"] = True  # the pass turned around, the score kept, as promptfoo does
    for key in ("weight", "metric", "transforms"):
        if key in entry:
            out[key] = entry[key]
    return out


GRADER_RUNNER = (RUNNERS / "provider_grader.js").read_text(encoding="utf-8")


def provider_graded(entry: dict[str, Any], rubric: str, provider: str, folder: str) -> Any:
    """A model-graded assertion whose grader is a JavaScript provider file of the config's
    (`provider: file://providers/judge.js`), as a `script` evaluator that loads and asks
    it on the worker (`runners/provider_grader.js`): code run as any script evaluator is,
    so a file dropped in the inbox needs `--allow-code` for it."""
    path, _ = split_reference(provider)
    out: dict[str, Any] = {
        "type": "script",
        "command": ["node", "-e", GRADER_RUNNER],
        "cwd": folder,
        "pf_vars": "{{ vars }}",
        "pf_rubric": rubric,
        "pf_provider": path if path.startswith("/") else f"{folder}/{path}",
    }
    if entry.get("threshold") is not None:
        out["pf_threshold"] = entry["threshold"]
    for key in ("weight", "metric", "transforms"):
        if key in entry:
            out[key] = entry[key]
    return out
