"""promptfoo's python assertion, run by evalrelay's worker as a script evaluator: the
case on standard input, a {pass, score, reason} verdict on standard output. Sent after
`python_function.py`, which it uses."""

import json
import sys
from typing import Any


def result_of(data: dict[str, Any]) -> Any:
    cfg = data.get("config") or {}
    output = data.get("output") or ""
    pf_vars = cfg.get("pf_vars") if isinstance(cfg.get("pf_vars"), dict) else {}
    prompt = " ".join(str(m.get("content")) for m in data.get("input") or [])
    context = {"vars": pf_vars, "prompt": prompt, "test": {"vars": pf_vars}}
    if cfg.get("pf_file"):
        function = python_function(cfg["pf_file"], cfg.get("pf_function") or "get_assert")
        return function(output, context)
    code = str(cfg["pf_code"]).rstrip()
    lines = code.splitlines() if "\n" in code else [f"return {code}"]
    scope: dict[str, Any] = {}
    exec("def main(output, context):\n" + "\n".join(f"    {line}" for line in lines), scope)
    return scope["main"](output, context)


def verdict(result: Any, threshold: Any, inverse: bool) -> dict[str, Any]:
    """promptfoo's reading of a Python assertion's return: true or false (also as text),
    a number (the score; a pass above 0, or at `threshold`), or a grading result (its own
    pass and score, failed below `threshold`), also as JSON text. `not-python` turns the
    pass around and keeps the score; a return it cannot read fails with score 0."""
    if isinstance(result, str) and result.lower() in ("true", "false"):
        result = result.lower() == "true"
    elif isinstance(result, str) and result.startswith("{"):
        result = json.loads(result)
    if isinstance(result, bool):
        passed = result != inverse
        return {"pass": passed, "score": 1 if passed else 0, "reason": f"returned {result}"}
    if isinstance(result, dict):
        if "pass_" in result and "pass" not in result:
            result = {**result, "pass": result["pass_"]}
        if not (
            isinstance(result.get("pass"), bool)
            and isinstance(result.get("score"), (int, float))
            and isinstance(result.get("reason"), str)
        ):
            raise ValueError("a grading result needs pass, score and reason")
        passed = result["pass"]
        if threshold is not None and result["score"] < threshold:
            passed = False
        return {"pass": passed != inverse, "score": result["score"], "reason": result["reason"]}
    score = float(str(result))  # a number, or text promptfoo reads as one
    raw = score > 0 if threshold is None else score >= threshold
    return {"pass": raw != inverse, "score": score, "reason": f"returned {result}"}


def main() -> None:
    data = json.loads(sys.stdin.read())
    cfg = data.get("config") or {}
    try:
        found = verdict(result_of(data), cfg.get("pf_threshold"), bool(cfg.get("pf_inverse")))
    except Exception as exc:
        reason = f"the code failed: {type(exc).__name__}: {exc}"
        found = {"pass": False, "score": 0, "reason": reason}
    print(json.dumps(found))


main()
