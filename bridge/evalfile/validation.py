"""Validate YAML data against a pydantic model and report errors at their line and column.

Pydantic says *what* is wrong at a `loc` such as `('evalcases', 2, 'input_messages', 0,
'user', 'contnet')`; this module says *where*, in the author's words: the key as written,
the case it belongs to, and for an unknown key the nearest known one.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from bridge.errors import Diagnostic, InvalidFileError
from bridge.evalfile.yaml_source import YamlDocument

M = TypeVar("M", bound=BaseModel)
CaseNamer = Callable[[Sequence[str | int]], str | None]


def validate_document(model: type[M], doc: YamlDocument, case_of: CaseNamer | None = None) -> M:
    """The document as `model`, or InvalidFileError listing every problem in it."""
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise InvalidFileError(diagnostics(model, exc, doc, case_of)) from None


def diagnostics(
    model: type[BaseModel],
    exc: ValidationError,
    doc: YamlDocument,
    case_of: CaseNamer | None = None,
) -> list[Diagnostic]:
    found = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        case_id = case_of(loc) if case_of else None
        found.append(
            doc.diagnostic(
                loc, describe(model, error), case_id, key=error["type"] == "extra_forbidden"
            )
        )
    return sorted(set(found), key=lambda d: (d.line, d.column))


def describe(model: type[BaseModel], error: ErrorDetails) -> str:
    """One sentence for one pydantic error, naming the key path as the author wrote it."""
    loc = _written_loc(model, error["loc"])
    where = dotted(loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        known = sorted(_known_keys(model, loc[:-1]))
        parent = dotted(loc[:-1]) or "the top level"
        if key in known:  # allowed on other kinds of this entry (another role, type)
            tag = error["loc"][-2] if len(error["loc"]) > 1 else None
            kind_of = f"a '{tag}' entry" if isinstance(tag, str) else "this kind of entry"
            return f"key '{key}' in {parent} is not allowed on {kind_of}"
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"did you mean '{near[0]}'?" if near else f"allowed keys here: {', '.join(known)}"
        return f"unknown key '{key}' in {parent}; {hint}"
    if kind == "missing":
        parent = dotted(loc[:-1]) or "the top level"
        return f"missing required key '{loc[-1]}' in {parent}"
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        return (
            f"{where}: unknown {ctx.get('discriminator', 'kind').strip(chr(39))} "
            f"'{ctx.get('tag')}'; expected one of {ctx.get('expected_tags')}"
        )
    if kind == "union_tag_not_found":
        return f"{where}: missing required key {error.get('ctx', {}).get('discriminator')}"
    if kind == "too_short" and error.get("ctx", {}).get("min_length") == 1:
        return f"{where}: must not be empty"
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def dotted(loc: Sequence[str | int]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _written_loc(model: type[BaseModel], loc: Sequence[str | int]) -> tuple[str | int, ...]:
    """The loc without pydantic's union tags and function names, which are not in the file."""
    written: list[str | int] = []
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp)
        members = _union_models(tp)
        if members and isinstance(part, str) and part in _tags(members):
            tp = _tags(members)[part]
            continue
        written.append(part)
        tp = _step(tp, part)
    return tuple(written)


def _known_keys(model: type[BaseModel], loc: Sequence[str | int]) -> set[str]:
    tp: Any = model
    for part in loc:
        tp = _step(_unwrap(tp), part)
    tp = _unwrap(tp)
    keys: set[str] = set()
    for member in _union_models(tp) or ([tp] if _is_model(tp) else []):
        for name, field in member.model_fields.items():
            keys.add(field.alias or name)
            alias = field.validation_alias
            if isinstance(alias, str):
                keys.add(alias)
    return keys


def _step(tp: Any, part: str | int) -> Any:
    """The type found one level down from `tp` at key or index `part`."""
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if isinstance(part, int) and origin in (list, tuple, Sequence):
        return typing.get_args(tp)[0]
    if isinstance(part, str) and origin is dict:
        return typing.get_args(tp)[1]
    for member in _union_models(tp) or ([tp] if _is_model(tp) else []):
        for name, field in member.model_fields.items():
            if part in (name, field.alias, field.validation_alias):
                return field.annotation
    return Any


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional so the interesting type is left."""
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if _is_union(tp) and len(args) == 1:
            tp = args[0]
            continue
        return tp


def _union_models(tp: Any) -> list[type[BaseModel]]:
    if not _is_union(tp):
        return []
    members = [_unwrap(a) for a in typing.get_args(tp)]
    models = [m for m in members if _is_model(m)]
    lists = [m for m in members if typing.get_origin(m) is list]
    return models or [m for lst in lists for m in _union_models(_unwrap(typing.get_args(lst)[0]))]


def _tags(members: list[type[BaseModel]]) -> dict[str, type[BaseModel]]:
    tags: dict[str, type[BaseModel]] = {}
    for member in members:
        for field in member.model_fields.values():
            for arg in typing.get_args(field.annotation):
                if typing.get_origin(field.annotation) is typing.Literal and isinstance(arg, str):
                    tags[arg] = member
    return tags


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)
