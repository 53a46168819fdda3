"""The vocabulary the allow-list of untrusted files is written in, and its two walks.

A file is checked twice. Before it is translated (a promptfoo config or an AgentV suite
runs templates, reads files and may call functions while it becomes an `evalcases`
document), its keys as written are walked against `Rule`s: a mapping lists the keys it
may hold, and any other key is refused. After it is validated, the `EvalFile` it became is
walked field by field against a table of decisions, one per field of every model: a field
the table does not name is refused, so a field added to the schema is refused until
someone decides about it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel

Lift = Literal["code", "targets"]
"""What an operator's opt-in allows: `code` (`--allow-code`), `targets`
(`--trust-inbox-config`: droppers may define targets and name judges)."""

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Refused:
    """Not for untrusted files, and why; `lifted_by` names the opt-in that allows it."""

    why: str | Callable[[Any], str]
    lifted_by: Lift | None = None

    def reason(self, value: Any) -> str:
        return self.why(value) if callable(self.why) else self.why


class Safe:
    """Data, allowed as it is: a decision of the field table."""

    def __repr__(self) -> str:
        return "SAFE"


SAFE = Safe()
Decision = Safe | Refused


class Data:
    """Any value, read as data only (text, numbers, lists, mappings of them)."""


@dataclass(frozen=True)
class Keys:
    """A mapping holding only these keys; any other is refused with `other`."""

    keys: Mapping[str, Rule]
    other: Refused


@dataclass(frozen=True)
class Each:
    """A list of values under `rule`, or one such value written alone."""

    rule: Rule


@dataclass(frozen=True)
class Text:
    """A string, checked by `check` (None: allowed; else why not)."""

    check: Callable[[str], Refused | None]


@dataclass(frozen=True)
class ByType:
    """A rule for each shape the value may take; a shape not listed is left to the loader."""

    text: Rule | None = None
    mapping: Rule | None = None
    items: Rule | None = None


Rule = Data | Keys | Each | Text | ByType | Refused

DATA = Data()


def raw_refusals(value: Any, rule: Rule, loc: Loc = ()) -> Iterator[tuple[Loc, Refused, Any]]:
    """(where, why, what) for each place of `value` that `rule` does not allow."""
    if isinstance(rule, Data):
        return
    if isinstance(rule, Refused):
        yield loc, rule, value
    elif isinstance(rule, Keys):
        if isinstance(value, dict):
            for key, inner in value.items():
                below = rule.keys.get(str(key))
                if below is None:
                    yield (*loc, key), rule.other, key
                else:
                    yield from raw_refusals(inner, below, (*loc, key))
    elif isinstance(rule, Each):
        if isinstance(value, list):
            for i, inner in enumerate(value):
                yield from raw_refusals(inner, rule.rule, (*loc, i))
        else:
            yield from raw_refusals(value, rule.rule, loc)
    elif isinstance(rule, Text):
        refused = rule.check(value) if isinstance(value, str) else None
        if refused is not None:
            yield loc, refused, value
    elif isinstance(rule, ByType):
        shaped = (
            rule.text if isinstance(value, str)
            else rule.mapping if isinstance(value, dict)
            else rule.items if isinstance(value, list)
            else None
        )  # fmt: skip
        if shaped is not None:
            yield from raw_refusals(value, shaped, loc)


@dataclass
class FieldTable:
    """A decision for each field of each model (by the class that declares it), and for
    whole models that are refused whatever they hold (an evaluator that runs a command)."""

    fields: dict[tuple[type[BaseModel], str], Decision]
    models: dict[type[BaseModel], Refused] = field(default_factory=dict)

    def decision(self, model: type[BaseModel], name: str) -> Decision | None:
        """The decision for `name` of `model`, found on the class that declares it."""
        for klass in model.__mro__:
            found = self.fields.get((klass, name))
            if found is not None:
                return found
        return None

    def model_refusal(self, model: type[BaseModel]) -> Refused | None:
        return next((self.models[k] for k in model.__mro__ if k in self.models), None)


def written_keys(model: type[BaseModel]) -> dict[str, str]:
    """Each key a user may write for `model`, to the field it fills (aliases too)."""
    keys: dict[str, str] = {}
    for name, info in model.model_fields.items():
        keys[name] = name
        if info.alias:
            keys[info.alias] = name
        alias = info.validation_alias
        if isinstance(alias, str):
            keys[alias] = name
        elif isinstance(alias, AliasChoices):
            keys.update({choice: name for choice in alias.choices if isinstance(choice, str)})
    return keys


OTHER_KEY = Refused("is not a key this allow-list lists")


def model_refusals(
    model: BaseModel, written: Any, table: FieldTable, loc: Loc = ()
) -> Iterator[tuple[Loc, Refused, Any]]:
    """(where, why, what) for each refused model or field of a validated `model`, walked
    beside the data it was validated from (`written`), so each place is the one written."""
    whole = table.model_refusal(type(model))
    if whole is not None:
        yield loc, whole, model
        return
    keys = written_keys(type(model))
    if isinstance(written, dict):
        pairs = [(key, keys.get(str(key)), value) for key, value in written.items()]
    else:  # written in a short form (a string, a list): the fields it set
        pairs = [(name, name, None) for name in model.model_fields_set]
    for key, name, value in pairs:
        decision = table.decision(type(model), name) if name else None
        if name is None or decision is None:
            yield (*loc, key), OTHER_KEY, key
        elif isinstance(decision, Refused):
            yield (*loc, key), decision, getattr(model, name)
        else:
            yield from _inner(getattr(model, name), value, table, (*loc, key))


def _inner(held: Any, written: Any, table: FieldTable, loc: Loc) -> Iterator[Any]:
    if isinstance(held, BaseModel):
        yield from model_refusals(held, written, table, loc)
    elif isinstance(held, (list, tuple)):
        items = written if isinstance(written, list) and len(written) == len(held) else None
        for i, inner in enumerate(held):
            where = (*loc, i) if items is not None else loc
            yield from _inner(inner, items[i] if items is not None else None, table, where)
