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


def verdict(result: Any, threshold: Any) -> dict[str, Any]:
    """promptfoo's reading: a boolean, a number (> 0, or >= threshold), or a grading
    result's `pass`."""
    if isinstance(result, bool):
        passed, reason = result, f"returned {result}"
    elif isinstance(result, (int, float)):
        passed = result > 0 if threshold is None else result >= threshold
        reason = f"returned {result}"
    elif isinstance(result, dict) and ("pass" in result or "pass_" in result):
        passed = bool(result.get("pass", result.get("pass_")))
        reason = str(result.get("reason") or f"returned pass={passed}")
    else:
        passed = False
        reason = f"returned {type(result).__name__}: not a boolean, number or grading result"
    return {"pass": passed, "score": 1 if passed else 0, "reason": reason}


def main() -> None:
    data = json.loads(sys.stdin.read())
    try:
        result = result_of(data)
    except Exception as exc:
        reason = f"the code raised {type(exc).__name__}: {exc}"
        print(json.dumps({"pass": False, "score": 0, "reason": reason}))
        return
    print(json.dumps(verdict(result, (data.get("config") or {}).get("pf_threshold"))))


main()
