"""promptfoo's `transform` from a Python file (`get_transform` unless named), run by
evalrelay's worker before an evaluator grades the answer: {output, prompt, config} on
standard input, {output} (or {error}) on standard output. Sent after
`python_function.py`, which it uses."""

import json
import sys
from typing import Any


def result_of(data: dict[str, Any]) -> Any:
    cfg = data.get("config") or {}
    vars_ = cfg.get("vars") if isinstance(cfg.get("vars"), dict) else {}
    function = python_function(cfg["file"], cfg.get("function") or "get_transform")
    return function(data.get("output"), {"vars": vars_, "prompt": data.get("prompt")})


def main() -> None:
    data = json.loads(sys.stdin.read())
    try:
        result = result_of(data)
    except Exception as exc:
        print(json.dumps({"error": f"the transform raised {type(exc).__name__}: {exc}"}))
        return
    if result is None:
        print(json.dumps({"error": "the transform returned no value"}))
        return
    print(json.dumps({"output": result}))


main()
