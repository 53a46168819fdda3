"""Which files are promptfoo configs: the name promptfoo looks for, or its schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROMPTFOO_FORMAT = "promptfoo config (prompts, providers, tests)"


def is_promptfoo(path: Path, data: Any) -> bool:
    """`promptfooconfig*.yaml` (promptfoo's default name and its variants), or a file whose
    `$schema` is promptfoo's. Other suites keep the AgentV reading."""
    if not isinstance(data, dict) or "evalcases" in data:
        return False
    schema = data.get("$schema")
    if isinstance(schema, str) and "promptfoo" in schema:
        return True
    return path.name.lower().startswith("promptfooconfig")
