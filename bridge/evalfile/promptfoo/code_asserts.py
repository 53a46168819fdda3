"""promptfoo's `javascript` and `python` assertions as evalrelay `script` evaluators.

The worker runs the script as it runs any grading script (its own process, the job's time
limit, no shell). The runner below gives the code what promptfoo gives it, `output` and a
`context` with `vars` and `prompt`, and reads its return as promptfoo does: a boolean, a
number (a pass when above 0, or at least `threshold`), or a grading result with `pass`.
It prints the pass as a score of 1 or 0, so the case passes exactly when promptfoo's would.
"""

from __future__ import annotations

from typing import Any

from bridge.evalfile.promptfoo.functions import split_reference

PY_RUNNER = r"""
import importlib.util, json, sys
from pathlib import Path
data = json.loads(sys.stdin.read())
cfg = data.get("config") or {}
output = data.get("output") or ""
pf_vars = cfg.get("pf_vars") if isinstance(cfg.get("pf_vars"), dict) else {}
prompt = " ".join(str(m.get("content")) for m in data.get("input") or [])
context = {"vars": pf_vars, "prompt": prompt, "test": {"vars": pf_vars}}
try:
    if cfg.get("pf_file"):
        path = Path(cfg["pf_file"])
        sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location("promptfoo_assert", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result = getattr(module, cfg.get("pf_function") or "get_assert")(output, context)
    else:
        code = cfg["pf_code"].rstrip()
        if "\n" in code:
            body = "\n".join("    " + line for line in code.splitlines())
        else:
            body = "    return " + code
        scope = {}
        exec("def main(output, context):\n" + body, scope)
        result = scope["main"](output, context)
except Exception as exc:
    print(json.dumps({"pass": False, "score": 0, "reason": f"the code raised {type(exc).__name__}: {exc}"}))
    sys.exit(0)
threshold = cfg.get("pf_threshold")
if isinstance(result, bool):
    passed, reason = result, f"returned {result}"
elif isinstance(result, (int, float)):
    passed = result > 0 if threshold is None else result >= threshold
    reason = f"returned {result}"
elif isinstance(result, dict) and ("pass" in result or "pass_" in result):
    passed = bool(result.get("pass", result.get("pass_")))
    reason = str(result.get("reason") or f"returned pass={passed}")
else:
    passed, reason = False, f"returned {type(result).__name__}, not a boolean, number or grading result"
print(json.dumps({"pass": passed, "score": 1 if passed else 0, "reason": reason}))
"""

JS_RUNNER = r"""
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", async () => {
  const data = JSON.parse(Buffer.concat(chunks).toString());
  const cfg = data.config || {};
  const output = data.output || "";
  const vars = cfg.pf_vars && typeof cfg.pf_vars === "object" ? cfg.pf_vars : {};
  const prompt = (data.input || []).map((m) => String(m.content)).join(" ");
  const context = { vars, prompt, test: { vars } };
  let result;
  try {
    if (cfg.pf_file) {
      const mod = require(cfg.pf_file);
      const fn = cfg.pf_function ? mod[cfg.pf_function] : typeof mod === "function" ? mod : mod.default;
      result = await fn(output, context);
    } else {
      let code = cfg.pf_code.trimEnd();
      if (!code.includes("\n")) {
        const t = code.trim().replace(/;+\s*$/, "");
        code = /^(const|let|var)\s/.test(t) ? t : `return ${t}`;
      }
      result = await new Function("output", "context", code)(output, context);
    }
  } catch (err) {
    process.stdout.write(JSON.stringify({ pass: false, score: 0, reason: `the code threw: ${err.message}` }));
    return;
  }
  const threshold = cfg.pf_threshold;
  let pass;
  if (typeof result === "boolean") pass = result;
  else if (typeof result === "number") pass = threshold === undefined || threshold === null ? result > 0 : result >= threshold;
  else if (result && typeof result === "object" && "pass" in result) pass = Boolean(result.pass);
  else pass = false;
  process.stdout.write(JSON.stringify({ pass, score: pass ? 1 : 0, reason: `returned ${JSON.stringify(result)}` }));
});
"""

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
        out["negate"] = True
    for key in ("weight", "metric"):
        if key in entry:
            out[key] = entry[key]
    return out
