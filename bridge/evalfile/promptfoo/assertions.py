"""promptfoo's assertion types, as the entries the shared `assert` reader takes
(bridge/evalfile/assertions.py): code assertions become script evaluators, `not-` forms
of deterministic checks the check negated, the model-graded types a judge's criteria (or
a script asking the config's own grader provider file, JavaScript or Python), `similar`
an embedding check, `assert-set` a composite graded as promptfoo grades a set, and each
read as promptfoo reads it (a regex without flags, `cost` and `latency` limits as
`threshold`).
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import yaml

from evalrelay.bridge.evalfile.assertions import RENAMED
from evalrelay.bridge.evalfile.promptfoo.code_asserts import (
    CODE_TYPES,
    code_assertion,
    provider_graded,
)
from evalrelay.bridge.evalfile.promptfoo.functions import split_reference
from evalrelay.bridge.evalfile.promptfoo.providers import DEFAULT_EMBEDDING
from evalrelay.bridge.evalfile.promptfoo.transforms import options_transforms, with_transforms

JUDGED = {
    "g-eval": "{value}",
    "model-graded-closedqa": "{value}",
    "factuality": "The answer is consistent with these facts: {value}",
    "answer-relevance": "The answer is relevant to the question that was asked.",
    "context-faithfulness": "The answer keeps to the context it was given.",
}
"""Model-graded types evalrelay's judge grades as criteria (promptfoo's own grading
prompts differ; the judge's verdict is evalrelay's)."""


SIMILAR_METRICS = {
    "similar": "cosine",
    "similar:cosine": "cosine",
    "similar:dot": "dot_product",
    "similar:euclidean": "euclidean",
}
"""promptfoo's `similar` types (each also as `not-`) and the measure each compares by."""


def promptfoo_asserts(entries: Any, folder: str, options: dict[str, Any] | None = None) -> Any:
    """One assert list rewritten, the test's `options.transform` put before each
    assertion's own; what is not a list is left for the reader to report."""
    if not isinstance(entries, list):
        return entries
    before = options_transforms(options or {})
    embedder = (options or {}).get("embedding_provider") or DEFAULT_EMBEDDING
    grader = (options or {}).get("provider")
    return [_one(entry, folder, before, embedder, grader) for entry in entries]


def _one(
    entry: Any, folder: str, before: list[dict[str, Any]], embedder: str, grader_file: Any = None
) -> Any:
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        return entry
    entry = with_transforms(entry, before)
    kind: str = entry["type"]
    if kind in CODE_TYPES:
        return code_assertion(entry, folder)
    if kind == "assert-set":
        return _assert_set(entry, folder, embedder, grader_file)
    if kind.removeprefix("not-") in SIMILAR_METRICS:
        return _similar(entry, kind, embedder)
    if kind in ("cost", "latency") and "threshold" in entry:
        return _run_limit(entry, kind)
    if kind.removeprefix("not-") == "regex":  # promptfoo's `new RegExp(value)`: no flags,
        entry = {**entry, "flags": ""}  # `^` and `$` at the ends of the whole answer
    if kind.startswith("not-") and kind.removeprefix("not-") in RENAMED:
        return {**entry, "type": kind.removeprefix("not-"), "negate": True}
    if kind.removeprefix("not-") in ("contains-json", "levenshtein"):
        return _own_check(entry, kind)
    if kind in JUDGED or kind == "llm-rubric":
        value = entry.get("value")
        if isinstance(value, list):
            value = "; ".join(str(v) for v in value)
        rubric = JUDGED[kind].format(value=value) if kind in JUDGED else value
        grader = entry.get("provider") or grader_file
        if isinstance(grader, str) and _is_provider_file(grader) and isinstance(rubric, str):
            return provider_graded(entry, rubric, grader, folder)
        if kind == "llm-rubric":
            return entry
        rest = {k: v for k, v in entry.items() if k not in ("type", "value")}
        return {"type": "llm-rubric", "value": rubric, **rest}
    return entry


def _is_provider_file(name: str) -> bool:
    """A grader given as a JavaScript or Python provider file (`file://providers/judge.js`,
    `file://judge.py`)."""
    path = split_reference(name)[0]
    return name.startswith("file://") and path.endswith((".js", ".cjs", ".mjs", ".py"))


def _assert_set(entry: dict[str, Any], folder: str, embedder: str, grader: Any) -> dict[str, Any]:
    """promptfoo's `assert-set`: its members' weighted mean is its score; it passes when
    each member passes, or at its own `threshold` when it has one."""
    threshold = entry.get("threshold")
    rest = {k: v for k, v in entry.items() if k not in ("threshold", "assert")}
    aggregator: dict[str, Any] = {"type": "weighted_average"}
    if threshold is not None:
        aggregator["threshold"] = threshold
    members = entry.get("assert")
    if isinstance(members, list):
        members = [_one(member, folder, [], embedder, grader) for member in members]
    return {**rest, "assert": members, "aggregator": aggregator}


def _similar(entry: dict[str, Any], kind: str, embedder: str) -> dict[str, Any]:
    """`similar` with its measure (`similar:dot`, `similar:euclidean`; cosine else), asked
    of the assertion's own `provider`, else the test's embedding provider
    (`options.provider.embedding`), else promptfoo's default, OpenAI's
    text-embedding-3-large."""
    rest = {k: v for k, v in entry.items() if k not in ("type", "provider")}
    out = {
        **rest,
        "type": "embedding_similar",
        "target": entry.get("provider") or embedder,
        "measure": SIMILAR_METRICS[kind.removeprefix("not-")],
    }
    return {**out, "negate": True} if kind.startswith("not-") else out


def _run_limit(entry: dict[str, Any], kind: str) -> dict[str, Any]:
    """`cost` and `latency` take their limit as `threshold` in promptfoo (dollars,
    milliseconds); a `value` is not read there."""
    rest = {k: v for k, v in entry.items() if k not in ("threshold", "value")}
    if kind == "cost":
        return {**rest, "budget": entry["threshold"]}
    return {**rest, "threshold": entry["threshold"]}


def _own_check(entry: dict[str, Any], kind: str) -> dict[str, Any]:
    """`contains-json` (its `value` a JSON Schema, as YAML text or a mapping) and
    `levenshtein` (`threshold` edits, 5 when not given), `not-` forms negated."""
    base = kind.removeprefix("not-")
    rest = {k: v for k, v in entry.items() if k not in ("type", "value")}
    out: dict[str, Any] = {"type": base.replace("-", "_"), **rest}
    if kind.startswith("not-"):
        out["negate"] = True
    value = entry.get("value")
    if base == "levenshtein":
        return {**out, "value": value}
    if isinstance(value, str) and value.startswith("file://"):
        return entry  # loads as unsupported, saying why
    if isinstance(value, str) and value.strip():
        with suppress(yaml.YAMLError):  # else the text, which loading refuses as no schema
            value = yaml.safe_load(value)
    return {**out, "schema": value} if value else out
