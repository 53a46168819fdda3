"""AgentV's CSV tests files (promptfoo's columns): one test per row.

`id` and `input` are the test's own; `vars.a.b` (or any plain column) is a var;
`__expected`, `__expected2`, ... hold assertions written as `type:value`,
`not-type:value`, `type(threshold):value`, `grade:criterion` or `python:file.py`; a cell
that is none of those must equal the answer. `__prefix`/`__suffix` wrap the input,
`__description` is the criterion, `__metric` names the assertions, `__threshold` is the
pass score, `__metadata:key` (a list with `key[]`) goes to the results, and
`__config:__expectedN:threshold` sets one assertion's `min_score`.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

SHORT_TYPES = frozenset(
    {
        "contains",
        "contains-any",
        "contains-all",
        "icontains",
        "icontains-any",
        "icontains-all",
        "starts-with",
        "ends-with",
        "regex",
        "is-json",
        "equals",
        "latency",
        "cost",
    }
)
"""The types a cell may name, as AgentV reads them."""
DEFAULT_THRESHOLD = {"starts-with": 0.75}
SHORT_FORM = re.compile(r"^((?:not-)?[a-z][a-z0-9-]*)(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")
EXPECTED_KEY = re.compile(r"^__expected(\d*)$")


class CsvTestsError(ValueError):
    """A row or column AgentV would refuse; the message names the row and column."""


def read_csv_tests(path: Path) -> list[dict[str, Any]]:
    """The file's tests, as a suite writes them inline (`id`, `input`, `vars`, `assert`)."""
    text = path.read_text(encoding="utf-8-sig")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    rows = [row for row in rows if any(cell for cell in row)]
    if not rows:
        return []
    header = [name.strip() for name in rows[0]]
    return [
        _test(dict(zip(header, row, strict=False)), number, path)
        for number, row in enumerate(rows[1:], start=1)
    ]


def _test(row: dict[str, str], number: int, path: Path) -> dict[str, Any]:
    where = f"row {number + 1}"  # the header is row 1
    test: dict[str, Any] = {}
    vars_: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    asserts: dict[int, dict[str, Any]] = {}
    thresholds: dict[int, float] = {}
    prefix = suffix = ""
    metric: str | None = None
    for key, value in row.items():
        if not key:
            continue
        expected = EXPECTED_KEY.match(key)
        if key in ("id", "input"):
            test[key] = value
        elif expected:
            if value.strip():
                index = int(expected.group(1) or 1) - 1
                asserts[index] = _assertion(value.strip(), path, f"{where}, column {key}")
        elif key == "__prefix":
            prefix = value
        elif key == "__suffix":
            suffix = value
        elif key == "__description":
            if value:
                test["criteria"] = value
        elif key in ("__provider_output", "__providerOutput"):
            raise CsvTestsError(
                f"{where}: column {key} is no longer read (AgentV removed it); "
                "use a mock target with a fixed answer instead"
            )
        elif key == "__metric":
            metric = value or None
        elif key == "__threshold":
            number_ = _number(value)
            if number_ is not None:
                test["threshold"] = number_
        elif key.startswith("__metadata:"):
            name = key.removeprefix("__metadata:")
            if value.strip():
                listed = name.endswith("[]")
                metadata[name.removesuffix("[]")] = (
                    [item.strip().replace("\\,", ",") for item in re.split(r"(?<!\\),", value)]
                    if listed
                    else value
                )
        elif key.startswith("__config:"):
            index, limit = _config(key, value, where)
            if limit is not None:
                thresholds[index] = limit
        else:
            _set_var(vars_, key, value)
    if "input" in test:
        test["input"] = f"{prefix}{test['input']}{suffix}"
    if not test.get("id", "").strip():
        test["id"] = f"row-{number}"
    ordered = [asserts[i] for i in sorted(asserts)]
    for i, assertion in enumerate(ordered):
        if metric:
            assertion["metric"] = metric if len(ordered) == 1 else f"{metric}-{i + 1}"
    for index, limit in thresholds.items():
        if index in asserts:
            asserts[index]["min_score"] = limit
    if ordered:
        test["assert"] = ordered
    if vars_:
        test["vars"] = vars_
    if metadata:
        test["metadata"] = metadata
    return test


def _assertion(cell: str, path: Path, where: str) -> dict[str, Any]:
    for prefix in ("grade:", "llm-rubric:"):
        if cell.startswith(prefix):
            return {"type": "llm-rubric", "value": cell.removeprefix(prefix).strip()}
    for prefix in ("javascript:", "fn:", "eval:"):
        if cell.startswith(prefix):
            return {"type": "javascript", "value": cell.removeprefix(prefix).strip()}
    if cell.startswith("python:"):
        return {"type": "script", "command": ["uv", "run", "python", cell[7:].strip()]}
    if cell.startswith("file://"):
        script = cell.removeprefix("file://").strip()
        if not script.endswith(".py"):
            raise CsvTestsError(f"{where}: {cell!r}: only file://*.py graders can be named here")
        return {"type": "script", "command": ["uv", "run", "python", str(path.parent / script)]}
    match = SHORT_FORM.match(cell)
    if not match:
        return {"type": "equals", "value": cell}
    written, limit_text, value = match.groups()
    kind = written.removeprefix("not-")
    if kind not in SHORT_TYPES:
        if value is not None or limit_text is not None:
            known = ", ".join(sorted(SHORT_TYPES))
            raise CsvTestsError(f"{where}: unknown assertion type {kind!r}; use one of {known}")
        return {"type": "equals", "value": cell}
    limit = float(limit_text) if limit_text else DEFAULT_THRESHOLD.get(kind)
    if kind in ("latency", "cost") and limit is None:
        raise CsvTestsError(f"{where}: {kind} needs its limit, e.g. {kind}(1)")
    assertion: dict[str, Any] = {"type": kind}
    if written.startswith("not-"):
        assertion["negate"] = True
    if value is not None:
        stripped = value.strip()
        listed = kind.endswith(("-any", "-all"))
        assertion["value"] = [v.strip() for v in stripped.split(",")] if listed else stripped
    if limit is not None:
        assertion[{"latency": "threshold", "cost": "budget"}.get(kind, "min_score")] = limit
    return assertion


def _config(key: str, value: str, where: str) -> tuple[int, float | None]:
    """Which assertion a `__config` column sets, and its threshold (None: an empty cell)."""
    expected_key, _, setting = key.removeprefix("__config:").partition(":")
    which = EXPECTED_KEY.match(expected_key)
    if setting != "threshold" or not which:
        raise CsvTestsError(
            f"{where}: column {key}: write __config:__expectedN:threshold (N: which assertion)"
        )
    limit = _number(value)
    if limit is None and value.strip():
        raise CsvTestsError(f"{where}: column {key}: {value!r} is not a number")
    return int(which.group(1) or 1) - 1, limit


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _set_var(vars_: dict[str, Any], key: str, value: str) -> None:
    """`vars.a.b` sets `a.b`; any other column is a var of its own name."""
    path = [part.strip() for part in key.removeprefix("vars.").split(".") if part.strip()]
    if not key.startswith("vars.") or not path:
        vars_[key] = value
        return
    here = vars_
    for part in path[:-1]:
        if not isinstance(here.get(part), dict):
            here[part] = {}
        here = here[part]
    here[path[-1]] = value
