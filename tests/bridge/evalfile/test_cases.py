"""Loading eval files: a case must have something to send (`question` non-empty), and a file
that is no mapping at all says what an eval file needs."""

from __future__ import annotations

import pytest

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.prompt.build import request_for
from tests.conftest import WriteFiles


def test_a_case_whose_messages_are_all_empty_is_rejected_at_its_line(project: WriteFiles) -> None:
    root = project(
        {
            "evals/x.instructions.md": "Be brief\n",
            "evals/empty.yaml": """\
                evalcases:
                  - id: blank
                    input_messages:
                      - {role: system, content: "  "}
                      - role: user
                        content: [{type: file, value: x.instructions.md}]
                """,
        }
    )
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/empty.yaml")
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.case_id) == (4, "blank")
    assert "input_messages has nothing to send" in problem.message


@pytest.mark.parametrize(
    ("content", "question"),
    [
        ("[{type: file, value: x.instructions.md}]", "<Attached: x.instructions.md>"),
        ("[{type: text, value: ' '}, {type: text, value: go}]", " \ngo"),
    ],
)
def test_a_lone_user_turn_with_a_file_or_some_text_loads(
    project: WriteFiles, content: str, question: str
) -> None:
    root = project(
        {
            "evals/x.instructions.md": "Be brief\n",
            "evals/one.yaml": (
                f"evalcases: [{{id: one, input_messages: [{{role: user, content: {content}}}]}}]\n"
            ),
        }
    )
    (case,) = load_eval_file(root / "evals/one.yaml").cases
    assert request_for(case).question == question


NEEDS = "an eval file needs `evalcases:` (or AgentV's `tests:`) with a list of cases"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", (1, 1, f"the file is empty: {NEEDS}")),
        ("# only a comment\n\n# and another\n", (1, 1, f"the file is empty: {NEEDS}")),
        (
            "- id: a\n- id: b\n",
            (
                1,
                1,
                f"the top level must be a mapping (`key: value` lines), but it is a list: {NEEDS}",
            ),
        ),
        (
            "hello\n",
            (
                1,
                1,
                f"the top level must be a mapping (`key: value` lines), but it is text: {NEEDS}",
            ),
        ),
    ],
    ids=["empty", "comments-only", "list", "text"],
)
def test_a_file_that_is_not_a_mapping_says_what_an_eval_file_needs(
    project: WriteFiles, text: str, expected: tuple[int, int, str]
) -> None:
    root = project({"evals/bad.yaml": text})
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/bad.yaml")
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.column, problem.message) == expected


def test_a_case_that_is_not_a_mapping_says_which_keys_it_needs(project: WriteFiles) -> None:
    root = project({"evals/bad.yaml": "evalcases:\n  - just a question\n"})
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/bad.yaml")
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.column, problem.message) == (
        2,
        5,
        "evalcases[0]: must be a mapping (`key: value` lines) with `id:` and "
        "`input_messages:`, but it is text",
    )
