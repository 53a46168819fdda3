"""Loading eval files: a case must have something to send (`question` non-empty)."""

from __future__ import annotations

import pytest

from bridge.errors import InvalidFileError
from bridge.evalfile.cases import load_eval_file
from bridge.prompt.build import request_for
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
