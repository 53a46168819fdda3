"""JSON objects within an answer's text, found as promptfoo's `contains-json` finds them."""

from __future__ import annotations

from typing import Any

import yaml

MAX_OBJECT = 100_000
"""promptfoo reads at most this many characters from each `{`."""


class _NoAliases(yaml.SafeLoader):
    """JSON has no aliases: one in an answer is refused, so none can expand without end."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("aliases are not JSON")
        return super().compose_node(parent, index)


def json_objects(text: str) -> list[Any]:
    """Each object that starts at a `{` and runs to its matching `}` (or to the end, the
    missing braces added), read leniently as YAML reads JSON; the search resumes after
    each object found, as promptfoo's `extractJsonObjects` does."""
    found: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] != "{":
            i += 1
            continue
        end = _object_end(text, i)
        if end is not None:
            value, j = end
            found.append(value)
            i = j
        else:
            i += 1
    return found


def _object_end(text: str, start: int) -> tuple[Any, int] | None:
    opened, closed, j = 1, 0, start + 1
    stop = min(start + MAX_OBJECT, len(text))
    while j < stop and opened > closed:
        opened += text[j] == "{"
        closed += text[j] == "}"
        j += 1
        if opened == closed or j in (len(text), start + MAX_OBJECT):
            candidate = text[start:j] + "}" * max(opened - closed, 0)
            try:
                value = yaml.load(candidate, Loader=_NoAliases)
            except yaml.YAMLError:
                if opened == closed:
                    return None
                continue
            if isinstance(value, (dict, list)):
                return value, j
            return None
    return None


def schema_errors(value: Any, schema: dict[str, Any]) -> str | None:
    """Why `value` breaks `schema` (its first error), or None when it conforms."""
    from jsonschema import Draft202012Validator  # a tenth of a second, for these checks only

    error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the object"
    return f"{where}: {error.message}"
