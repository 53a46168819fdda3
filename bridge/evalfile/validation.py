"""Validate YAML data against a pydantic model and report errors at their line and column.

Pydantic says *what* is wrong at a `loc` such as `('evalcases', 2, 'input_messages', 0,
'user', 'contnet')`; this module says *where*, in the author's words: the key as written,
the case it belongs to, and for an unknown key the nearest known one.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import AliasChoices, BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.yaml_source import YamlDocument

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
        return _unknown_key(model, error, loc)
    if kind == "model_type":
        return _not_a_mapping(model, error, loc)
    if kind == "missing":
        parent = dotted(loc[:-1]) or "the top level"
        return f"missing required key '{loc[-1]}' in {parent}"
    if kind == "union_tag_invalid":
        return _unknown_tag(where, error.get("ctx", {}))
    if kind == "union_tag_not_found":
        return f"{where}: missing required key {error.get('ctx', {}).get('discriminator')}"
    if kind == "too_short" and error.get("ctx", {}).get("min_length") == 1:
        return f"{where}: must not be empty"
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


INTERNAL_TAGS = frozenset({"unsupported"})
"""Kinds the loader makes itself (an AgentV evaluator it cannot run), never written."""


def _unknown_tag(where: str, ctx: dict[str, Any]) -> str:
    """An unknown `type` (or `provider`), with the nearest one that exists."""
    tags = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
    tags = [tag for tag in tags if tag not in INTERNAL_TAGS]
    tag, key = str(ctx.get("tag")), str(ctx.get("discriminator", "kind")).strip("'")
    near = difflib.get_close_matches(tag, tags, n=1, cutoff=0.6)
    hint = f"did you mean '{near[0]}'? " if near else ""
    return f"{where}: unknown {key} '{tag}'; {hint}expected one of {', '.join(tags)}"


def _unknown_key(model: type[BaseModel], error: ErrorDetails, loc: Sequence[str | int]) -> str:
    """An unknown key, with the nearest key that this very entry allows: on an entry of a
    tagged union (a target's `provider`), those of its own kind, so `modle` on an openai
    target is `model`, not a vscode target's `mode`."""
    key = str(loc[-1])
    parent = dotted(loc[:-1]) or "the top level"
    own = sorted(_keys_of(_type_at(model, error["loc"][:-1])))
    near = [k for k in difflib.get_close_matches(key, own, n=2, cutoff=0.6) if k != key][:1]
    if key in _known_keys(model, loc[:-1]):  # allowed on other kinds of this entry (a role)
        tag = error["loc"][-2] if len(error["loc"]) > 1 else None
        kind_of = f"a '{tag}' entry" if isinstance(tag, str) else "this kind of entry"
        hint = f"; did you mean '{near[0]}'?" if near else ""
        return f"key '{key}' in {parent} is not allowed on {kind_of}{hint}"
    hint = f"did you mean '{near[0]}'?" if near else f"allowed keys here: {', '.join(own)}"
    return f"unknown key '{key}' in {parent}; {hint}"


def _not_a_mapping(model: type[BaseModel], error: ErrorDetails, loc: Sequence[str | int]) -> str:
    """A value that must be a mapping, said with what it must hold; at the top level, what
    the whole document must be (an empty file, or a list, is no mapping)."""
    tp = _type_at(model, error["loc"])
    shape = _shape(error["input"])
    required = _required_keys(tp)
    if loc:
        holding = f" with {required}" if required else ""
        return f"{dotted(loc)}: must be a mapping (`key: value` lines){holding}, but it is {shape}"
    # A model says what its document must hold when its required keys do not tell it all.
    needs = getattr(tp, "DOCUMENT_NEEDS", None) or (f"it needs {required}" if required else "")
    said = (
        "the file is empty"
        if error["input"] is None
        else f"the top level must be a mapping (`key: value` lines), but it is {shape}"
    )
    return f"{said}: {needs}" if needs else said


def _required_keys(tp: Any) -> str:
    """The keys a model requires, as written: "`id:` and `input_messages:`"."""
    if not _is_model(tp):
        return ""
    keys = [f"`{f.alias or name}:`" for name, f in tp.model_fields.items() if f.is_required()]
    return " and ".join(keys)


def _shape(value: Any) -> str:
    """What a value is, in the author's words."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "a mapping"


def dotted(loc: Sequence[str | int]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _written_loc(model: type[BaseModel], loc: Sequence[str | int]) -> tuple[str | int, ...]:
    """The loc without pydantic's union tags and function names, which are not in the file."""
    return _walk(model, loc)[0]


def _type_at(model: type[BaseModel], loc: Sequence[str | int]) -> Any:
    """The type validated at pydantic's `loc`: a tagged union narrowed to the tag's member."""
    return _unwrap(_walk(model, loc)[1])


def _walk(model: type[BaseModel], loc: Sequence[str | int]) -> tuple[tuple[str | int, ...], Any]:
    """The loc as written, and the type found at its end."""
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
    return tuple(written), tp


def _known_keys(model: type[BaseModel], loc: Sequence[str | int]) -> set[str]:
    """The keys allowed at the written `loc`, on any kind of entry that may be there."""
    tp: Any = model
    for part in loc:
        tp = _step(_unwrap(tp), part)
    return _keys_of(_unwrap(tp))


def _keys_of(tp: Any) -> set[str]:
    """The keys a model (or any model of a union) reads."""
    keys: set[str] = set()
    for member in _union_models(tp) or ([tp] if _is_model(tp) else []):
        for name, field in member.model_fields.items():
            keys |= _field_keys(member, name, field)
    return keys


def _field_keys(model: type[BaseModel], name: str, field: FieldInfo) -> set[str]:
    """The keys that set a field: its aliases, and its name where the model reads it."""
    alias = field.validation_alias
    choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
    keys = {choice for choice in choices if isinstance(choice, str)}
    config = model.model_config
    if not keys or config.get("populate_by_name") or config.get("validate_by_name"):
        keys.add(name)
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
            if part in _field_keys(member, name, field) | {name}:
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
