"""The functions a case offers an API target (`tools:`) and how it may use them (`tool_choice:`).

Written once, neutrally (a name, a description, a JSON Schema for the arguments), and
sent in each vendor's own shape by `worker.providers`. A schema is checked against the
JSON Schema meta-schema at load, so a typo in it is an error at its line, not a 400 from
the vendor in the middle of a campaign.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    field_validator,
)

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What OpenAI, Anthropic and Gemini all accept as a function's name."""

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


class _Written(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _tool_name(name: str) -> str:
    if not TOOL_NAME.fullmatch(name):
        raise ValueError(
            f"tool name {name!r} is not one every vendor accepts: use 1 to 64 letters, "
            "digits, _ or -"
        )
    return name


ToolName = Annotated[str, AfterValidator(_tool_name)]


def _unwrapped(value: Any) -> Any:
    """OpenAI's Chat shape `{type: function, function: {...}}` is accepted as written there,
    so a tool copied from an OpenAI request works unchanged."""
    if isinstance(value, dict) and value.get("type") == "function" and "function" in value:
        rest = {k: v for k, v in value.items() if k not in ("type", "function")}
        inner = value["function"]
        return {**inner, **rest} if isinstance(inner, dict) else value
    return value


class ToolDefinition(_Written):
    """One function the model may call."""

    name: ToolName
    description: str | None = None
    """What the function does; the model reads it to decide whether to call it."""
    parameters: dict[str, Any] = Field(default_factory=lambda: dict(NO_ARGUMENTS))
    """A JSON Schema of type object for the arguments (default: no arguments)."""

    @field_validator("parameters")
    @classmethod
    def _a_json_schema_of_an_object(cls, schema: dict[str, Any]) -> dict[str, Any]:
        # Imported here: a tenth of a second that only cases with tools need.
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import Draft202012Validator, validator_for

        try:
            validator_for(schema, default=Draft202012Validator).check_schema(schema)
        except SchemaError as exc:
            where = ".".join(str(p) for p in exc.absolute_path)
            raise ValueError(
                f"not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message}"
            ) from None
        if schema.get("type") != "object":
            raise ValueError(
                "the arguments' schema needs `type: object` at its top: every vendor "
                "passes a function's arguments as one object"
            )
        return schema


def _unique_names(tools: list[ToolDefinition]) -> list[ToolDefinition]:
    names = [tool.name for tool in tools]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(
            f"tool {', '.join(repr(n) for n in twice)} is defined twice; a name may appear "
            "once in a list (a case's tool of the file's name replaces the file's)"
        )
    return tools


ToolList = Annotated[
    list[Annotated[ToolDefinition, BeforeValidator(_unwrapped)]], AfterValidator(_unique_names)
]


class NamedToolChoice(_Written):
    """The model must call this one function."""

    name: ToolName


ToolChoiceMode = Literal["auto", "none", "required"]
MODES: tuple[ToolChoiceMode, ...] = ("auto", "none", "required")


def _tool_choice(value: Any) -> ToolChoiceMode | NamedToolChoice:
    """One form or the other, with one error that names both. `{type: function, function:
    {name}}` (OpenAI Chat) and `{type: function, name}` (Responses) are accepted as `{name}`."""
    if isinstance(value, NamedToolChoice):
        return value
    for mode in MODES:
        if value == mode:
            return mode
    if isinstance(value, dict) and value.get("type") == "function":
        inner = value.get("function")
        value = {"name": inner.get("name") if isinstance(inner, dict) else value.get("name")}
    if isinstance(value, dict) and set(value) == {"name"} and isinstance(value["name"], str):
        return NamedToolChoice(name=_tool_name(value["name"]))
    raise ValueError(
        f"tool_choice must be auto, none, required or {{name: <one of the tools>}}, not {value!r}"
    )


def _choice_json(choice: ToolChoiceMode | NamedToolChoice) -> str | dict[str, str]:
    return choice if isinstance(choice, str) else {"name": choice.name}


ToolChoice = Annotated[
    ToolChoiceMode | NamedToolChoice,
    PlainValidator(_tool_choice),
    PlainSerializer(_choice_json),
]
"""`auto` (the model decides), `none` (no call), `required` (at least one call) or one
named function."""


def merged_tools(
    file_tools: Sequence[ToolDefinition] | None, case_tools: Sequence[ToolDefinition] | None
) -> list[ToolDefinition]:
    """The file's tools, then the case's: a case's tool of a name the file has replaces it
    in place. A file holds the toolbox its cases share; a case adds what it is about."""
    by_name = {tool.name: tool for tool in file_tools or ()}
    for tool in case_tools or ():
        by_name[tool.name] = tool
    return list(by_name.values())


def choice_problem(choice: ToolChoice | None, tools: Sequence[ToolDefinition]) -> str | None:
    """Why this choice cannot be sent with these tools, or None."""
    if choice is None:
        return None
    if not tools:
        return "tool_choice needs tools: add `tools:` to the case or the file, or drop tool_choice"
    if isinstance(choice, NamedToolChoice) and choice.name not in {t.name for t in tools}:
        known = ", ".join(t.name for t in tools)
        return f"tool_choice names '{choice.name}', which is not among the tools ({known})"
    return None
