"""The task markdown: files first, then the transcript under its heading, then where to answer."""

from __future__ import annotations

from evalrelay.worker.agents.inputs import InputFile
from evalrelay.worker.agents.task import read_first, render_task, strip_echo
from evalrelay.worker.agents.templates import WorkspaceTemplate

TEMPLATE = WorkspaceTemplate.load("vscode").task


def file(path: str, guideline: bool) -> InputFile:
    return InputFile(
        display_path=path, workspace_path=f"inputs/{path}", is_guideline=guideline, text=""
    )


def test_files_to_read_first_put_guidelines_before_attachments() -> None:
    block = read_first(
        [file("a.py", False), file("g.instructions.md", True), file("b c.md", False)]
    )
    assert block == (
        "Before you start, read these files of this workspace, in this order:\n\n"
        "Guidelines:\n- `inputs/g.instructions.md`\n\n"
        "Attached files:\n- `inputs/a.py`\n- `inputs/b c.md`\n\n"
        "If a file is missing, answer only `ERROR: missing-file <path>` and stop.\n\n"
    )


def test_no_files_means_the_task_comes_first() -> None:
    text = render_task(
        TEMPLATE,
        request_id="r1",
        question="[System]: Be brief.\n[User]: Hi",
        inputs=[],
        answer_tmp="/w/messages/r1_res.tmp.md",
        answer="/w/messages/r1_res.md",
    )
    assert text.startswith("[[ ## task ## ]]\n\n[System]: Be brief.\n[User]: Hi\n\n")
    instructions = text.split("[[ ## output_instructions ## ]]")[1]
    assert "`/w/messages/r1_res.tmp.md`" in instructions
    assert "rename `/w/messages/r1_res.tmp.md` to `/w/messages/r1_res.md`" in instructions
    assert "`request: r1`" in instructions


def test_placeholders_inside_the_question_are_left_as_written() -> None:
    text = render_task(
        "${question}|${request_id}", request_id="r", question="cost: ${answer}", inputs=[]
    )
    assert text == "cost: ${answer}|r"


def test_echo_line_is_stripped_only_when_it_names_this_request() -> None:
    assert strip_echo("The answer.\n\nrequest: r1\n", "r1") == ("The answer.", True)
    assert strip_echo("The answer.\n`request: r1`", "r1") == ("The answer.", True)
    assert strip_echo("The answer.\nrequest: r0", "r1") == ("The answer.\nrequest: r0", False)
    assert strip_echo("request: r1", "r1") == ("", True)
