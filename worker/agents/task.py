"""The task markdown an agent reads: files to read first, the transcript, where to answer.

The template (`task.md` of the workspace template) holds `${...}` placeholders, filled in
one pass: text in the question that looks like a placeholder is left as written.
"""

from __future__ import annotations

from string import Template

from evalrelay.worker.agents.inputs import InputFile

ECHO_PREFIX = "request: "
"""The agent ends its answer with `request: <id>`, proving which request it answered."""


def render_task(
    template: str, *, request_id: str, question: str, inputs: list[InputFile], **paths: str
) -> str:
    values = {**paths, "files": read_first(inputs), "request_id": request_id, "question": question}
    return Template(template).safe_substitute(values)


def read_first(inputs: list[InputFile]) -> str:
    """The read-first block: guideline files, then the other attached files."""
    guidelines = [f for f in inputs if f.is_guideline]
    others = [f for f in inputs if not f.is_guideline]
    if not inputs:
        return ""
    lines = ["Before you start, read these files of this workspace, in this order:", ""]
    for heading, group in (("Guidelines:", guidelines), ("Attached files:", others)):
        if group:
            lines += [heading, *(f"- `{f.workspace_path}`" for f in group), ""]
    lines += ["If a file is missing, answer only `ERROR: missing-file <path>` and stop.", "", ""]
    return "\n".join(lines)


def strip_echo(answer: str, request_id: str) -> tuple[str, bool]:
    """The answer without its closing `request: <id>` line, and whether that line was there."""
    body = answer.rstrip()
    last_newline = body.rfind("\n")
    last = body[last_newline + 1 :].strip().strip("`")
    if last == f"{ECHO_PREFIX}{request_id}":
        return body[: max(last_newline, 0)].rstrip(), True
    return body, False
