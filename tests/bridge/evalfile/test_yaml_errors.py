"""YAML mistakes said in plain words, at the place to fix, with what to do: no PyYAML jargon."""

from __future__ import annotations

import pytest

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from tests.conftest import WriteFiles

CASE = "evalcases:\n  - id: a\n    input_messages:\n      - role: user\n"

INDENTED = (
    "this line is indented unlike the lines above it: line it up with the keys it belongs "
    "with, using spaces (a key that holds nested keys has nothing after its ':')"
)
STRAY_COLON = (
    "a ':' here cannot start a key: if the value holds ': ', put the whole value in "
    "quotes; if this line starts a new key, line it up with the keys above it"
)
NO_COLON = (
    "this line has no ':' after its key; write `key: value` (a line that continues "
    "the value above must be indented further than that value's key)"
)


def problem_in(project: WriteFiles, text: str) -> tuple[int, int, str]:
    """The one problem of an eval file holding `text`, as (line, column, message)."""
    root = project({})
    (root / "bad.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InvalidFileError) as raised:
        load_eval_file(root / "bad.yaml")
    (problem,) = raised.value.diagnostics
    return problem.line, problem.column, problem.message


def test_an_unclosed_quote_is_reported_where_it_opens_not_at_the_end_of_the_file(
    project: WriteFiles,
) -> None:
    text = (
        CASE
        + '        content: "hello\n  - id: b\n    input_messages: [{role: user, content: hi}]\n'
    )
    assert problem_in(project, text) == (
        5,
        18,
        "a quoted string that starts here is never closed; add the closing quote",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            CASE + "        content: hi\n     extra: 1\n", (6, 6, INDENTED), id="block-end"
        ),
        pytest.param(CASE + "        content: hi: there\n", (5, 20, STRAY_COLON), id="colon"),
        pytest.param(
            "evalcases:\n  - id: a\n    input_messages\n      - role: user\n",
            (3, 5, NO_COLON),
            id="missing-colon",
        ),
        pytest.param(
            "evalcases:\n\t- id: a\n",
            (
                2,
                1,
                "a tab is used for indentation here, but YAML indents with spaces only; "
                "replace the tab with spaces",
            ),
            id="tab",
        ),
        pytest.param(
            CASE + "        content: @mention\n",
            (5, 18, "a value cannot start with '@'; put the value in quotes"),
            id="stray-character",
        ),
        pytest.param(
            "evalcases:\n  - id: [1, 2\n    input_messages: x\n",
            (
                2,
                9,
                "the [ list that starts here is not closed; add the closing ']', "
                "or a ',' between its items",
            ),
            id="unclosed-list",
        ),
        pytest.param(
            "evalcases:\n  - id: a\n  input_messages: []\n",
            (
                3,
                3,
                "this key is lined up with the '- ' items of the list above; indent it "
                "like the keys of the item it belongs to (or less, if the list ends here)",
            ),
            id="key-in-list",
        ),
        pytest.param(
            "evalcases: x\n- id: a\n",
            (
                2,
                1,
                "a list item ('- ') is lined up with keys here; indent the list under the "
                "key it belongs to, and leave that key's value empty",
            ),
            id="list-under-valued-key",
        ),
        pytest.param(
            CASE + '        content: "hi" there\n',
            (
                5,
                23,
                "more text after a finished value (a closing quote, ']' or '}'); put the "
                "whole value in quotes, or move the text to a line of its own",
            ),
            id="text-after-quote",
        ),
        pytest.param(
            CASE + "        content: {{ question }}\n",
            (
                5,
                19,
                "a key cannot be a list or a mapping; if this value is text starting with "
                "'{' or '[' (a {{ template }}, say), put it in quotes",
            ),
            id="template-braces",
        ),
        pytest.param(
            CASE + "        content: *greeting\n",
            (
                5,
                18,
                "'*greeting' refers to an anchor '&greeting' that is not defined above "
                "it; define the anchor first, or put the value in quotes if it is text",
            ),
            id="undefined-alias",
        ),
        pytest.param(
            CASE + "        content: hi\n---\nevalcases: []\n",
            (
                6,
                1,
                "a second YAML document starts here ('---'), but the file must hold one; "
                "remove this line or split the file",
            ),
            id="two-documents",
        ),
    ],
)
def test_yaml_parser_jargon_is_said_in_plain_words_at_its_place(
    project: WriteFiles, text: str, expected: tuple[int, int, str]
) -> None:
    assert problem_in(project, text) == expected


def test_an_unknown_yaml_problem_keeps_pyyamls_words_after_yaml_syntax_error(
    project: WriteFiles,
) -> None:
    assert problem_in(project, "%YAML 2.0\n---\nevalcases: []\n") == (
        1,
        1,
        "YAML syntax error: found incompatible YAML document (version 1.* is required)",
    )


def test_a_misspelt_evaluator_type_gets_the_nearest_one_and_never_unsupported(
    project: WriteFiles,
) -> None:
    text = (
        "evalcases:\n  - id: a\n    input_messages: [{role: user, content: Hi}]\n"
        "    evaluators:\n      - {name: has, type: contians, value: x}\n"
    )
    line, column, message = problem_in(project, text)
    assert (line, column) == (5, 9)
    assert message.startswith(
        "evalcases[0].evaluators[0]: unknown type 'contians'; did you mean 'contains'? "
        "expected one of "
    )
    assert "'contains'" not in message.split("expected one of ")[1]  # listed bare, with commas
    assert "unsupported" not in message
    _, _, far = problem_in(project, text.replace("contians", "zzzz"))
    assert "did you mean" not in far and "unsupported" not in far
