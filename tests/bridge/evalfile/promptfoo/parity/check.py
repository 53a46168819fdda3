"""promptfoo's python assertion file: `get_assert(output, context)` by default."""


def get_assert(output, context):
    return {"pass": "hello" in output, "score": 1.0, "reason": "looked for hello"}


def too_long(output, context):
    return len(output) > 10
