"""AgentV's July 2026 `assert` entries as evalrelay evaluator entries.

Plain strings are criteria of one rubric (weighted by how many there are), `metric` is
the name, `not-<type>` and `negate` turn a check around. A type evalrelay cannot run
becomes an `unsupported` evaluator: the file loads, and the cases using it say why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from evalrelay.bridge.evalfile.yaml_source import Loc

Fail = Callable[[Loc, str, str | None], None]
Read = Callable[[str, Loc], str | None]
"""The text of a project file named in the suite, or None (the failure already reported)."""

RENAMED = {
    "contains": "contains",
    "icontains": "icontains",
    "starts-with": "starts_with",
    "ends-with": "ends_with",
    "contains-any": "contains_any",
    "contains-all": "contains_all",
    "icontains-any": "icontains_any",
    "icontains-all": "icontains_all",
    "equals": "equals",
    "regex": "regex",
    "is-json": "json_valid",
    "latency": "latency",
    "cost": "cost",
    "token-usage": "token_usage",
    "execution-metrics": "execution_metrics",
    "field-accuracy": "field_accuracy",
}
"""AgentV's type to ours, where only the spelling differs."""

OWN_CHECKS = ("contains_json", "levenshtein", "embedding_similar")
"""evalrelay's spelling of checks promptfoo configs use (bridge/evalfile/promptfoo), taken
as written."""

COMMON = ("weight", "required", "min_score", "negate", "transforms")
UNSUPPORTED = {
    "skill-used": "skill calls are not reported by evalrelay's providers",
    "not-skill-used": "skill calls are not reported by evalrelay's providers",
    "trajectory:goal-success": "goal success needs AgentV's agent grader",
    "javascript": "JavaScript assertions run inside AgentV",
    "python": "inline Python assertions run inside AgentV; use a `script`",
    "webhook": "webhook assertions are not supported; use a `script`",
    "similar": "embedding similarity is not supported",
    "contains-json": "a JSON Schema in a file is not read; write the schema in the config",
    "not-contains-json": "a JSON Schema in a file is not read; write the schema in the config",
    "agent-rubric": "agent rubrics need AgentV's agent grader; use llm-rubric",
}


def to_evaluators(
    entries: Any, where: Loc, judge: str | None, read: Read, fail: Fail, case_id: str
) -> Iterator[tuple[dict[str, Any], Loc]]:
    """(evaluator entry, where it was written) for each assertion of a list."""
    if not isinstance(entries, list):
        fail(where, "assert must be a list of assertions", case_id)
        return
    criteria = [(i, e) for i, e in enumerate(entries) if isinstance(e, str) and e.strip()]
    for i, entry in enumerate(entries):
        loc = (*where, i)
        if isinstance(entry, str):
            if criteria and i == criteria[0][0]:
                rubric: dict[str, Any] = {
                    "type": "rubric",
                    "name": "criteria",
                    "rubrics": [text for _, text in criteria],
                    "weight": len(criteria),
                }
                yield ({**rubric, "target": judge} if judge else rubric), loc
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            fail(loc, "an assertion is a string (a criterion) or a mapping with `type`", case_id)
            continue
        converted = _one(entry, loc, judge, read, fail, case_id)
        if converted is not None:
            yield converted, loc


def _one(
    entry: dict[str, Any], loc: Loc, judge: str | None, read: Read, fail: Fail, case: str
) -> dict[str, Any] | None:
    kind: str = entry["type"]
    common = {k: entry[k] for k in COMMON if k in entry}
    if "metric" in entry:
        common["name"] = str(entry["metric"])
    rest = {k: v for k, v in entry.items() if k not in (*COMMON, "type", "metric")}
    if kind in RENAMED:
        ours = RENAMED[kind]
        if ours == "execution_metrics" and "target_exploration_ratio" in rest:
            why = "the exploration ratio needs AgentV's trace of file reads"
            return {"type": "unsupported", "written_type": kind, "why": why, **common}
        if ours in ("latency", "cost", "token_usage", "execution_metrics", "field_accuracy"):
            return {"type": ours, **common, **_known(rest, ours)}
        if ours == "json_valid":
            return {"type": ours, **common}
        if "value" not in rest:
            fail(loc, f"{kind} needs a `value`", case)
            return None
        value = rest["value"]
        if ours == "regex":
            return {
                "type": "regex",
                "pattern": str(value),
                "flags": rest.get("flags", ""),
                **common,
            }
        if ours in ("contains_any", "contains_all", "icontains_any", "icontains_all"):
            return {"type": ours, "value": value, **common}
        return {"type": ours, "value": str(value), **common}
    if kind in ("llm-rubric", "rubrics"):
        return _rubric(kind, rest, common, loc, judge, read, case)
    if kind in OWN_CHECKS:
        return {"type": kind, **common, **rest}
    if kind == "script":  # one asking for AgentV's LLM proxy loads as unsupported
        return {"type": "script", **common, **rest}
    if kind == "assert-set":
        members = [
            member
            for member, _ in to_evaluators(
                rest.get("assert"), (*loc, "assert"), judge, read, fail, case
            )
        ]
        threshold = rest.get("threshold")
        aggregator = rest.get("aggregator") or (  # a dialect's own (promptfoo's)
            {"type": "threshold", "threshold": threshold}
            if threshold is not None
            else {"type": "weighted_average"}
        )
        if not members:
            fail(loc, "assert-set needs a non-empty `assert` list", case)
            return None
        return {"type": "composite", "evaluators": members, "aggregator": aggregator, **common}
    trajectory = kind.removeprefix("not-")
    if trajectory.startswith("trajectory:") and trajectory in (
        "trajectory:tool-used",
        "trajectory:tool-sequence",
        "trajectory:tool-args-match",
        "trajectory:step-count",
    ):
        inverse = kind.startswith("not-") or bool(common.pop("negate", False))
        return {
            "type": "trajectory",
            "check": trajectory.removeprefix("trajectory:"),
            "value": rest.get("value"),
            "inverse": inverse,
            **common,
        }
    why = UNSUPPORTED.get(kind) or (
        f"'{kind}' is a custom assertion (AgentV looks for .agentv/assertions/{kind}.ts and "
        "runs it with bun); write it as a `script` for evalrelay"
    )
    return {"type": "unsupported", "written_type": kind, "why": why, **common}


def _known(rest: dict[str, Any], ours: str) -> dict[str, Any]:
    """Keys the evaluator reads; AgentV's `value` carries latency and cost limits too."""
    if ours == "latency" and "threshold" not in rest and "value" in rest:
        return {"threshold": rest["value"]}
    if ours == "cost" and "budget" not in rest and "value" in rest:
        return {"budget": rest["value"]}
    return rest


def _rubric(
    kind: str,
    rest: dict[str, Any],
    common: dict[str, Any],
    loc: Loc,
    judge: str | None,
    read: Read,
    case: str,
) -> dict[str, Any] | None:
    """`llm-rubric`: a text is the criteria, a list the rubric items; `rubrics` (AgentV's
    older spelling) has them under `criteria`."""
    target = rest.get("provider") or rest.get("target") or judge
    base: dict[str, Any] = {**common, **({"target": target} if target else {})}
    threshold = rest.get("threshold", (rest.get("config") or {}).get("threshold"))
    if threshold is not None and "min_score" not in base:
        base["min_score"] = threshold
    items = rest.get("value", rest.get("criteria") if kind == "rubrics" else None)
    if isinstance(items, list):
        return {"type": "rubric", "rubrics": items, **base}
    prompt = rest.get("prompt")
    entry: dict[str, Any] = {"type": "llm_judge", **base}
    if isinstance(items, str):
        entry["criteria"] = items
    if isinstance(prompt, str):
        if prompt.startswith("file://"):
            text = read(prompt, (*loc, "prompt"))
            if text is None:
                return None
            entry["prompt"] = text
        else:
            entry["prompt"] = prompt
    elif prompt is not None:
        why = "a judge prompt made by a command runs inside AgentV; write it as text or file://"
        return {"type": "unsupported", "written_type": kind, "why": why, **common}
    return entry
