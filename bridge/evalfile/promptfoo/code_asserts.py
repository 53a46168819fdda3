"""promptfoo's `javascript` and `python` assertions as evalrelay `script` evaluators.

The worker runs the script as it runs any grading script (its own process, the job's time
limit, no shell). The runner below gives the code what promptfoo gives it, `output` and a
`context` with `vars` and `prompt`, and reads its return as promptfoo does: a boolean, a
number (the score, a pass when above 0 or at least `threshold`), or a grading result
with its own `pass` and `score`. It prints both; promptfoo grading counts the pass.
"""

from __future__ import annotations

from typing import Any

from evalrelay.bridge.evalfile.promptfoo.functions import RUNNERS, python_runner, split_reference

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


JS_GRADER_RUNNER = (RUNNERS / "provider_grader.js").read_text(encoding="utf-8")
PY_GRADER_RUNNER = python_runner("provider_grader.py")
GRADER_SYSTEM = (
    "You grade an output against a rubric. Reply with one JSON object and nothing else: "
    '{"pass": <true when the output meets the rubric, else false>, "score": <a number '
    'from 0.0 to 1.0>, "reason": "<one or two sentences>"}'
)
"""The system message of the chat prompt a grader provider file is asked with, by either
runner: the user message holds the output and the rubric, as promptfoo's grading prompt
does."""


def provider_graded(entry: dict[str, Any], rubric: str, provider: str, folder: str) -> Any:
    """A model-graded assertion whose grader is a provider file of the config's, as a
    `script` evaluator that loads and asks it on the worker: a JavaScript one
    (`provider: file://providers/judge.js`, `runners/provider_grader.js`) or a Python one
    (`file://judge.py`, `call_api` or the function named, `runners/provider_grader.py`).
    Code run as any script evaluator is, so a file dropped in the inbox needs
    `--allow-code` for it."""
    path, function = split_reference(provider)
    python = path.endswith(".py")
    out: dict[str, Any] = {
        "type": "script",
        "command": ["python3", "-I", "-c", PY_GRADER_RUNNER]
        if python
        else ["node", "-e", JS_GRADER_RUNNER],
        "cwd": folder,
        "pf_vars": "{{ vars }}",
        "pf_rubric": rubric,
        "pf_grader_system": GRADER_SYSTEM,
        "pf_provider": path if path.startswith("/") else f"{folder}/{path}",
    }
    if python and function:
        out["pf_function"] = function
    if entry.get("threshold") is not None:
        out["pf_threshold"] = entry["threshold"]
    for key in ("weight", "metric", "transforms"):
        if key in entry:
            out[key] = entry[key]
    return out
