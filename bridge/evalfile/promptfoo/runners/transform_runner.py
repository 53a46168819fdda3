"""promptfoo's `transform` from a Python file (`get_transform` unless named), run by
evalrelay's worker before an evaluator grades the answer: {output, prompt, config} on
standard input, {output} (or {error}) on standard output."""

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any


def result_of(data: dict[str, Any]) -> Any:
    cfg = data.get("config") or {}
    vars_ = cfg.get("vars") if isinstance(cfg.get("vars"), dict) else {}
    path = Path(cfg["file"])
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("promptfoo_transform", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = getattr(module, cfg.get("function") or "get_transform")
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
