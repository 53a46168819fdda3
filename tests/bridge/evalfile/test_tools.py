"""`tools:` and `tool_choice:` of an eval file: merged per case, and every mistake an error
at its line, column and case, in one pass."""

from __future__ import annotations

import pytest

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.tools import NamedToolChoice
from evalrelay.bridge.prompt.build import request_for
from tests.conftest import WriteFiles

MERGED = """\
tools:
  - name: weather
    description: Current weather in a city
    parameters:
      type: object
      properties: {city: {type: string}}
      required: [city]
  - {name: clock}
tool_choice: auto
evalcases:
  - id: inherits
    input_messages: [{role: user, content: Weather in Paris?}]
  - id: extends-and-replaces
    input_messages: [{role: user, content: Weather in Paris?}]
    tools:
      - type: function
        function:
          name: weather
          description: Weather, in Fahrenheit
          parameters: {type: object, properties: {town: {type: string}}}
      - {name: search, description: Search the web}
    tool_choice: {type: function, function: {name: search}}
  - id: forbids
    input_messages: [{role: user, content: Hello}]
    tool_choice: none
"""


def test_a_cases_tools_extend_the_files_and_replace_one_of_the_same_name(
    project: WriteFiles,
) -> None:
    root = project({"evals/tools.yaml": MERGED})
    inherits, extends, forbids = (
        request_for(c) for c in load_eval_file(root / "evals/tools.yaml").cases
    )
    assert [t.name for t in inherits.tools or ()] == ["weather", "clock"]
    assert inherits.tool_choice == "auto"
    assert (inherits.tools or [])[1].parameters == {"type": "object", "properties": {}}
    # The case's weather takes the file's place; its search comes after the file's tools.
    assert [t.name for t in extends.tools or ()] == ["weather", "clock", "search"]
    assert (extends.tools or [])[0].description == "Weather, in Fahrenheit"
    assert extends.tool_choice == NamedToolChoice(name="search")
    assert (forbids.tool_choice, len(forbids.tools or ())) == ("none", 2)


BAD = """\
tool_choice: {name: nowhere}
evalcases:
  - id: bad-schema
    input_messages: [{role: user, content: hi}]
    tools:
      - name: weather
        parameters:
          type: object
          properties: {city: {type: strin}}
      - name: "two words"
      - name: flat
        parameters: {type: string}
  - id: twice
    input_messages: [{role: user, content: hi}]
    tools: [{name: a}, {name: a}]
  - id: unknown-mode
    input_messages: [{role: user, content: hi}]
    tool_choice: always
  - id: unknown-name
    input_messages: [{role: user, content: hi}]
    tools: [{name: a}]
    tool_choice: {name: b}
  - id: no-tools
    input_messages: [{role: user, content: hi}]
"""


def test_every_tool_mistake_is_an_error_at_its_place_in_one_pass(project: WriteFiles) -> None:
    root = project({"evals/bad.yaml": BAD})
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/bad.yaml")
    found = {(d.line, d.column, d.case_id): d.message for d in caught.value.diagnostics}
    assert found == {
        # The schema as a whole is placed; the message says where in it the mistake is.
        (8, 11, "bad-schema"): "evalcases[0].tools[0].parameters: not a valid JSON Schema at "
        "properties.city.type: 'strin' is not valid under any of the given schemas",
        (10, 15, "bad-schema"): "evalcases[0].tools[1].name: tool name 'two words' is not one "
        "every vendor accepts: use 1 to 64 letters, digits, _ or -",
        (12, 21, "bad-schema"): "evalcases[0].tools[2].parameters: the arguments' schema needs "
        "`type: object` at its top: every vendor passes a function's arguments as one object",
        (15, 12, "twice"): "evalcases[1].tools: tool 'a' is defined twice; a name may appear "
        "once in a list (a case's tool of the file's name replaces the file's)",
        (18, 18, "unknown-mode"): "evalcases[2].tool_choice: tool_choice must be auto, none, "
        "required or {name: <one of the tools>}, not 'always'",
        (22, 18, "unknown-name"): "tool_choice names 'b', which is not among the tools (a)",
        # The file's choice reaches the one case whose own keys are right, which has no tools.
        (1, 14, "no-tools"): "tool_choice needs tools: add `tools:` to the case or the file, "
        "or drop tool_choice",
    }


def test_a_file_choice_naming_a_file_tool_is_not_flagged_when_another_case_fails(
    project: WriteFiles,
) -> None:
    """A failed file is still checked case by case; those cases keep the file's tools."""
    root = project(
        {
            "evals/one-bad.yaml": """\
                tools: [{name: weather}]
                tool_choice: {name: weather}
                evalcases:
                  - {id: good, input_messages: [{role: user, content: hi}]}
                  - {id: bad, input_messages: [{role: user, content: hi}], repeets: 2}
                """,
        }
    )
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/one-bad.yaml")
    assert [(d.case_id, d.line) for d in caught.value.diagnostics] == [("bad", 5)]
