"""A promptfoo model-graded assertion whose grader is a Python provider file of the
config's (`provider: file://judge.py`, or `file://judge.py:name`), run by evalrelay's
worker as a script evaluator: the case on standard input, a {pass, score, reason} verdict
on standard output. Sent after `python_function.py`, which it uses. The provider is
called as promptfoo calls one, `call_api(prompt, options, context)` (or the function the
reference names; a coroutine is awaited) with `options` its id and config and `context`
the test's vars, asked with the chat prompt the JavaScript runner sends
(`provider_grader.js`), and its reply read as that runner reads it."""

import asyncio
import inspect
import json
import re
import sys
from typing import Any


def asked(cfg: dict[str, Any], output: str) -> Any:
    """The provider's `output`; an `error` it returns, or no dict, is its failure."""
    pf_vars = cfg.get("pf_vars") if isinstance(cfg.get("pf_vars"), dict) else {}
    rubric = cfg.get("pf_rubric")
    asking = f"<Output>\n{output}\n</Output>\n<Rubric>\n{rubric}\n</Rubric>"
    prompt = json.dumps(  # written as JSON.stringify writes the JavaScript runner's
        [
            {"role": "system", "content": cfg["pf_grader_system"]},
            {"role": "user", "content": asking},
        ],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    call_api = python_function(cfg["pf_provider"], cfg.get("pf_function") or "call_api")
    options = {"id": f"file://{cfg['pf_provider']}", "config": cfg.get("pf_provider_config") or {}}
    result = call_api(prompt, options, {"vars": pf_vars, "prompt": {"raw": prompt}})
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    if not isinstance(result, dict) or ("output" not in result and "error" not in result):
        raise ValueError(f"call_api must return a dict with `output` or `error`, not {result!r}")
    if result.get("error"):
        raise RuntimeError(str(result["error"]))
    return result.get("output")


async def _awaited(result: Any) -> Any:
    return await result


def verdict(reply: Any, threshold: Any) -> dict[str, Any]:
    """A grader's reply as promptfoo reads it: JSON (the object in a text), `pass` true when
    absent, `score` the pass as 1 or 0 when absent, failed below `threshold`."""
    parsed = reply
    if isinstance(reply, str):
        start, end = reply.find("{"), reply.rfind("}")
        try:
            parsed = json.loads(reply[start : end + 1] if 0 <= start < end else reply)
        except ValueError:
            return {"pass": False, "score": 0, "reason": f"grader reply is not JSON: {reply[:200]}"}
    found = parsed if isinstance(parsed, dict) else {}
    passed = found.get("pass")
    if passed is None:
        passed = True
    elif not isinstance(passed, bool):
        passed = re.fullmatch(r"true|yes|pass|y", str(passed), re.IGNORECASE) is not None
    score = found.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        score = int(passed)
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        passed = passed and score >= threshold
    reason = str(found.get("reason") or "")
    return {"pass": passed, "score": min(max(score, 0), 1), "reason": reason}


def main() -> None:
    data = json.loads(sys.stdin.read())
    cfg = data.get("config") or {}
    try:
        reply = asked(cfg, data.get("output") or "")
    except Exception as exc:
        reason = f"grader provider failed: {type(exc).__name__}: {exc}"
        print(json.dumps({"pass": False, "score": 0, "reason": reason}))
        return
    print(json.dumps(verdict(reply, cfg.get("pf_threshold"))))


main()
