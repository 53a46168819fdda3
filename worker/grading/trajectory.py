"""`tool_trajectory`: the tools the answer's run called, against what the case expects.

Scoring follows AgentV: `any_order` counts calls per tool against `minimums`; `in_order`
finds the expected calls in order (others may come between); `exact` compares position by
position; `superset`/`subset` compare the sets of tools called. Arguments match when each
expected key is there with an equal value (`args_match: exact`: and no other key). An
expected `output` (evalrelay's addition; AgentV reads the key but never compares it)
matches when the call's reported output holds it.
"""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatchcase
from typing import Any, NamedTuple

from evalrelay.bridge.evalfile.evaluators import (
    ExpectedToolCall,
    ToolTrajectoryEvaluator,
    TrajectoryAssertion,
)
from evalrelay.bridge.results.result import EvaluatorResult
from evalrelay.worker.grading.run_facts import RunFacts


class Call(NamedTuple):
    name: str
    args: dict[str, Any]
    output: Any = None
    """What the tool returned, where the provider reports it."""


def calls_of(run: RunFacts) -> list[Call]:
    return [
        Call(str(c.get("name", "")), c.get("arguments") or {}, c.get("output"))
        for c in run.tool_calls
    ]


def trajectory(spec: ToolTrajectoryEvaluator, name: str, run: RunFacts) -> EvaluatorResult:
    calls = calls_of(run)
    if spec.mode == "any_order":
        hits, misses = _any_order(spec, calls)
        aspects = len(spec.minimums)
    elif not spec.expected:
        hits, misses, aspects = ["No tool sequence specified"], [], 1
    elif spec.mode == "in_order":
        hits, misses = _in_order(spec, calls)
        aspects = len(spec.expected)
    elif spec.mode == "exact":
        hits, misses = _exact(spec, calls)
        aspects = len(spec.expected)
    else:
        hits, misses = _sets(spec, calls)
        aspects = len(hits) + len(misses)
    if not calls and misses:
        misses = ["No tool calls in the run to evaluate", *misses]
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=round(len(hits) / aspects, 6) if aspects else 1.0,
        weight=spec.weight,
        hits=hits,
        misses=misses,
        details={"tool_calls": [c.name for c in calls]},
    )


def call_matches(spec: ToolTrajectoryEvaluator, expected: ExpectedToolCall, call: Call) -> bool:
    """The arguments match (see `args_match`), and the output holds what `output` names."""
    if expected.output is not None and not _partial(expected.output, call.output):
        return False
    return args_match(spec, expected, call.args)


def args_match(spec: ToolTrajectoryEvaluator, expected: ExpectedToolCall, actual: Any) -> bool:
    wanted = expected.args
    if wanted is None or wanted == "any" or spec.args_match == "ignore":
        return True
    if not isinstance(actual, dict):
        return False
    if spec.args_match == "exact":
        return same(wanted, actual)
    return all(k in actual and same(v, actual[k]) for k, v in wanted.items())


def same(a: Any, b: Any) -> bool:
    """JSON equality: `True` is not `1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _any_order(spec: ToolTrajectoryEvaluator, calls: list[Call]) -> tuple[list[str], list[str]]:
    counts = Counter(c.name for c in calls)
    hits: list[str] = []
    misses: list[str] = []
    for tool, required in spec.minimums.items():
        text = f"{tool}: called {counts[tool]} times (required >={required})"
        (hits if counts[tool] >= required else misses).append(text)
    return hits, misses


def _in_order(spec: ToolTrajectoryEvaluator, calls: list[Call]) -> tuple[list[str], list[str]]:
    hits, misses, j = [], [], 0
    for i, expected in enumerate(spec.expected):
        while j < len(calls) and calls[j].name != expected.tool:
            j += 1
        if j == len(calls):
            misses.append(f"Expected {expected.tool} at position {i}, not found in remaining trace")
            continue
        if call_matches(spec, expected, calls[j]):
            hits.append(f"Found {expected.tool} at position {j}")
        else:
            misses.append(
                f"Expected {expected.tool} at position {i}: tool found at {j} but "
                f"{_what_differs(spec, expected, calls[j])} mismatch"
            )
        j += 1
    return hits, misses


def _exact(spec: ToolTrajectoryEvaluator, calls: list[Call]) -> tuple[list[str], list[str]]:
    hits, misses = [], []
    if len(calls) != len(spec.expected):
        misses.append(f"Expected {len(spec.expected)} tool calls, got {len(calls)}")
    for i, expected in enumerate(spec.expected):
        if i >= len(calls):
            misses.append(f"Position {i}: expected {expected.tool}, got nothing")
        elif calls[i].name != expected.tool:
            misses.append(f"Position {i}: expected {expected.tool}, got {calls[i].name}")
        elif call_matches(spec, expected, calls[i]):
            hits.append(f"Position {i}: {expected.tool}")
        else:
            misses.append(
                f"Position {i}: {expected.tool} {_what_differs(spec, expected, calls[i])} mismatch"
            )
    return hits, misses


def _sets(spec: ToolTrajectoryEvaluator, calls: list[Call]) -> tuple[list[str], list[str]]:
    """`superset`: every expected tool was called; `subset`: every call was an expected tool."""
    expected = {e.tool for e in spec.expected}
    called = {c.name for c in calls}
    if spec.mode == "superset":
        return (
            [f"{t} called" for t in sorted(expected & called)],
            [f"{t} expected but not called" for t in sorted(expected - called)],
        )
    return (
        [f"{t} is an expected tool" for t in sorted(called & expected)],
        [f"{t} called but not expected" for t in sorted(called - expected)],
    )


def trajectory_assertion(spec: TrajectoryAssertion, name: str, run: RunFacts) -> EvaluatorResult:
    """One `trajectory:<check>` assertion: a pass (1) or a fail (0), with what was seen."""
    calls = calls_of(run)
    passed, what = _assertion(spec, calls)
    if spec.inverse:
        passed, what = not passed, f"not ({what})"
    if not calls:
        what += " (the run made no tool calls)"
    return EvaluatorResult(
        name=name,
        type=spec.type,
        score=1.0 if passed else 0.0,
        weight=spec.weight,
        hits=[what] if passed else [],
        misses=[] if passed else [what],
        details={"check": spec.check, "tool_calls": [c.name for c in calls]},
    )


def _named(pattern: str, calls: list[Call]) -> list[Call]:
    return [c for c in calls if fnmatchcase(c.name.lower(), pattern.lower())]


def _pattern(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name") or value.get("pattern") or "*")
    return str(value)


def _assertion(spec: TrajectoryAssertion, calls: list[Call]) -> tuple[bool, str]:
    value = spec.value
    if spec.check == "tool-used":
        if isinstance(value, dict):
            return _in_range(_named(_pattern(value), calls), value, f"calls to {_pattern(value)}")
        names = [value] if isinstance(value, str) else [str(v) for v in value or []]
        if spec.inverse:  # none of them may appear
            used = [n for n in names if _named(n, calls)]
            return bool(used), f"tools used: {', '.join(used) or 'none of ' + ', '.join(names)}"
        missing = [n for n in names if not _named(n, calls)]
        return not missing, f"tools used: {', '.join(names)}" + (
            f"; missing {', '.join(missing)}" if missing else ""
        )
    if spec.check == "step-count":
        pattern = (
            _pattern(value)
            if isinstance(value, dict) and (value.get("name") or value.get("pattern"))
            else "*"
        )
        return _in_range(_named(pattern, calls), value if isinstance(value, dict) else {},
                         f"steps matching {pattern}", default_min=0)  # fmt: skip
    if spec.check == "tool-sequence":
        mode = value.get("mode", "in_order") if isinstance(value, dict) else "in_order"
        steps = value.get("steps", []) if isinstance(value, dict) else value or []
        wanted = [_pattern(step) for step in steps]
        names = [c.name for c in calls]
        text = f"tool sequence ({mode}) {' -> '.join(wanted)}; got {' -> '.join(names) or 'none'}"
        if mode == "exact":
            ok = len(names) == len(wanted) and all(
                fnmatchcase(n.lower(), w.lower()) for n, w in zip(names, wanted, strict=True)
            )
            return ok, text
        position = 0
        for name_ in names:
            if position < len(wanted) and fnmatchcase(name_.lower(), wanted[position].lower()):
                position += 1
        return position == len(wanted), text
    spec_value = value if isinstance(value, dict) else {}
    pattern = _pattern(spec_value)
    expected = {
        **spec_value.get("defaults", {}),
        **(spec_value.get("args") or spec_value.get("arguments") or {}),
    }
    ignore = spec_value.get("ignore") or []
    ignore = [ignore] if isinstance(ignore, str) else list(ignore)
    exact = spec_value.get("mode") == "exact"
    for call in _named(pattern, calls):
        actual = {k: v for k, v in call.args.items() if k not in ignore}
        wanted_args = {k: v for k, v in expected.items() if k not in ignore}
        if same(wanted_args, actual) if exact else _partial(wanted_args, actual):
            return True, f"a call to {pattern} has arguments {wanted_args}"
    return False, f"no call to {pattern} has arguments {expected}"


def _what_differs(spec: ToolTrajectoryEvaluator, expected: ExpectedToolCall, call: Call) -> str:
    return "args" if not args_match(spec, expected, call.args) else "output"


def _partial(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _partial(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_partial(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return same(expected, actual)


def _in_range(
    found: list[Call], bounds: dict[str, Any], what: str, default_min: int = 1
) -> tuple[bool, str]:
    low = int(bounds.get("min", default_min))
    high = bounds.get("max")
    ok = len(found) >= low and (high is None or len(found) <= int(high))
    limits = f">= {low}" + (f" and <= {high}" if high is not None else "")
    return ok, f"{what}: {len(found)} (wanted {limits})"
