"""A grader given as a Python provider file, for test_parity.py: it passes an output
holding the rubric's first word (score 0.8), else fails it (score 0.3)."""

import json


def call_api(prompt, options, context):
    user = next(m for m in json.loads(prompt) if m["role"] == "user")["content"]
    output = user.split("<Output>\n")[1].split("\n</Output>")[0]
    wanted = user.split("<Rubric>\n")[1].split(" ")[0]
    passed = wanted in output
    reply = {"pass": passed, "score": 0.8 if passed else 0.3, "reason": f"looked for {wanted}"}
    return {"output": json.dumps(reply)}


async def strict(prompt, options, context):
    """Named by `file://judge_provider.py:strict`: a coroutine, failing what it passes."""
    reply = json.loads(call_api(prompt, options, context)["output"])
    return {"output": {**reply, "pass": not reply["pass"]}}
