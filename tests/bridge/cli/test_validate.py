"""`evalrelay validate`: each error as path:line:column with its case, exit 1; else exit 0."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from evalrelay.bridge.cli.main import cli
from tests.conftest import WriteFiles

GOOD = """\
evalcases:
  - id: hello
    input_messages:
      - {role: user, content: Hi}
  - id: review
    expected_outcome: Names the bug
    input_messages:
      - role: user
        content: [{type: text, value: Review}, {type: file, value: /src/app.py}]
"""


def validate(*paths: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["validate", *map(str, paths)])
    return result.exit_code, result.stdout.splitlines()


def test_good_files_print_a_count_each_and_exit_0(project: WriteFiles) -> None:
    root = project(
        {
            "src/app.py": "print(1)\n",
            "evals/a.yaml": GOOD,
            "evals/sub/b.yml": "evalcases: [{id: x, input_messages: [{role: user, content: y}]}]\n",
        }
    )
    code, lines = validate(root / "evals")
    assert code == 0
    assert lines == [
        f"{root}/evals/a.yaml: 2 cases OK (AgentV evalcases with execution blocks)",
        f"{root}/evals/sub/b.yml: 1 case OK (evalcases)",
    ]


def test_yaml_syntax_error_names_line_and_column(project: WriteFiles) -> None:
    root = project({"bad.yaml": "evalcases:\n  - id: [1, 2\n    input_messages: x\n"})
    code, lines = validate(root / "bad.yaml")
    assert code == 1
    assert lines == [
        f"{root}/bad.yaml:2:9: the [ list that starts here is not closed; add the closing ']', "
        "or a ',' between its items"
    ]


def test_duplicate_key_is_an_error(project: WriteFiles) -> None:
    root = project({"dup.yaml": "evalcases:\n  - id: a\n    id: b\n    input_messages: []\n"})
    code, lines = validate(root / "dup.yaml")
    assert code == 1
    assert lines == [
        f"{root}/dup.yaml:3:5: duplicate key 'id': each key may appear once; remove or rename one"
    ]


def test_unknown_key_suggests_the_nearest_known_one(project: WriteFiles) -> None:
    root = project(
        {
            "typo.yaml": """\
        evalcases:
          - id: greet
            input_mesages:
              - {role: user, content: Hi}
        """
        }
    )
    code, lines = validate(root / "typo.yaml")
    assert code == 1
    assert lines == [
        f"{root}/typo.yaml:2:5: case 'greet': missing required key 'input_messages' "
        "in evalcases[0]",
        f"{root}/typo.yaml:3:5: case 'greet': unknown key 'input_mesages' in evalcases[0]; "
        "did you mean 'input_messages'?",
    ]


def test_missing_id_names_the_case_by_position(project: WriteFiles) -> None:
    root = project(
        {
            "noid.yaml": """\
        evalcases:
          - id: first
            input_messages: [{role: user, content: Hi}]
          - input_messages: [{role: user, content: Hi}]
        """
        }
    )
    code, lines = validate(root / "noid.yaml")
    assert code == 1
    assert lines == [f"{root}/noid.yaml:4:5: case '#2': missing required key 'id' in evalcases[1]"]


def test_missing_file_is_an_error_never_a_silent_drop(project: WriteFiles) -> None:
    root = project(
        {
            "evals/m.yaml": """\
        evalcases:
          - id: m
            input_messages:
              - role: user
                content: [{type: file, value: ./nowhere.md}]
        """
        }
    )
    code, lines = validate(root / "evals/m.yaml")
    assert code == 1
    assert lines == [
        f"{root}/evals/m.yaml:5:39: case 'm': file './nowhere.md' not found "
        "(looked for evals/nowhere.md, nowhere.md); create it or fix the path "
        "(a leading '/' means the project root)"
    ]


def test_path_escaping_the_root_is_refused(project: WriteFiles, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    root = project(
        {
            "e.yaml": """\
        evalcases:
          - id: escape
            input_messages:
              - role: user
                content: [{type: file, value: ../secret.txt}]
        """
        }
    )
    code, lines = validate(root / "e.yaml")
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(
        f"{root}/e.yaml:5:39: case 'escape': file '../secret.txt' resolves to"
    )
    assert "outside the project root" in lines[0]


def test_symlink_escaping_the_root_is_refused(project: WriteFiles, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    root = project(
        {
            "e.yaml": """\
        evalcases:
          - id: link
            input_messages:
              - role: user
                content: [{type: file, value: innocent.txt}]
        """
        }
    )
    os.symlink(tmp_path / "secret.txt", root / "innocent.txt")
    code, lines = validate(root / "e.yaml")
    assert code == 1
    assert "file 'innocent.txt' resolves to" in lines[0]
    assert "outside the project root" in lines[0]


def test_binary_and_oversized_files_are_refused(project: WriteFiles) -> None:
    root = project(
        {
            "evalrelay.yaml": "max_file_bytes: 10\n",
            "big.txt": "x" * 11,
            "e.yaml": """\
        evalcases:
          - id: files
            input_messages:
              - role: user
                content: [{type: file, value: blob.bin}, {type: file, value: big.txt}]
        """,
        }
    )
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    code, lines = validate(root / "e.yaml")
    assert code == 1
    assert lines == [
        f"{root}/e.yaml:5:39: case 'files': file 'blob.bin' is binary; "
        "only text files can be attached",
        f"{root}/e.yaml:5:70: case 'files': file 'big.txt' is 11 bytes, over the 10-byte limit; "
        "attach a smaller file or raise max_file_bytes in evalrelay.yaml",
    ]


def test_all_errors_of_a_file_are_reported_at_once(project: WriteFiles) -> None:
    root = project(
        {
            "many.yaml": """\
        evalcases:
          - id: a
            input_messages: [{role: robot, content: x}]
          - id: a
            repeats: 0
            input_messages: [{role: user, content: [{type: file, value: gone.md}]}]
          - id: answered
            input_messages:
              - {role: tool, tool_call_id: call_9, content: "21"}
              - {role: user, content: go on}
        """
        }
    )
    code, lines = validate(root / "many.yaml")
    assert code == 1
    assert [line.split(": ", 1)[0] for line in lines] == [
        f"{root}/many.yaml:3:22",
        f"{root}/many.yaml:4:9",
        f"{root}/many.yaml:5:14",
        f"{root}/many.yaml:6:65",
        f"{root}/many.yaml:9:36",
    ]
    # What only a case whose shape is valid can show comes in the same pass.
    assert "case 'answered': tool_call_id 'call_9' matches no tool call" in lines[4]


def test_unknown_target_name_is_a_note_at_its_key(project: WriteFiles) -> None:
    """As in AgentV, a file naming a target this project lacks is valid: `run --target`
    chooses where it runs, and the note says so."""
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: fast, provider: mock}\n",
            "t.yaml": """\
        target: fast
        evalcases:
          - id: a
            execution: {target: slow}
            input_messages: [{role: user, content: x}]
        """,
        }
    )
    code, lines = validate(root / "t.yaml")
    assert code == 0
    assert lines == [
        f"{root}/t.yaml: 1 case OK (AgentV evalcases with execution blocks)",
        f"{root}/t.yaml:4:25: note: case 'a': unknown target 'slow' in {root}/targets.yaml; "
        "available: fast, mock, mock-judge, nop, oracle; run it with --target NAME, or define "
        "the target",
    ]


def test_one_bad_file_does_not_hide_the_good_ones(project: WriteFiles) -> None:
    root = project({"src/app.py": "x", "ok.yaml": GOOD, "bad.yaml": "evalcases: []\n"})
    code, lines = validate(root / "bad.yaml", root / "ok.yaml")
    assert code == 1
    assert lines == [
        f"{root}/bad.yaml:1:12: evalcases: must not be empty",
        f"{root}/ok.yaml: 2 cases OK (AgentV evalcases with execution blocks)",
    ]


PLAIN = "evalcases: [{id: x, input_messages: [{role: user, content: y}]}]\n"


def test_validate_names_each_format_it_reads(
    project: WriteFiles,
) -> None:
    root = project(
        {
            "src/app.py": "x",
            "v2.yaml": "$schema: agentv-eval-v2\n" + PLAIN,
            "jan.yaml": "execution: {target: mock}\n" + PLAIN,
            "later.yaml": "name: later\nprompts: ['{{ input }}']\ntests:\n  - vars: {input: hi}\n",
            "fixed.yaml": "prompts: ['{{ input }}']\ntests:\n  - {id: a, vars: {input: hi}}\n",
        }
    )
    code, lines = validate(
        root / "v2.yaml", root / "jan.yaml", root / "later.yaml", root / "fixed.yaml"
    )
    assert code == 1
    assert lines[0] == f"{root}/v2.yaml: 1 case OK (AgentV agentv-eval-v2)"
    assert lines[1] == f"{root}/jan.yaml: 1 case OK (AgentV evalcases with execution blocks)"
    assert lines[2] == f"{root}/later.yaml:4:5: a test needs an `id`; add one"
    assert lines[3] == f"{root}/fixed.yaml: 1 case OK (AgentV suite (tests, prompts, assert))"
    assert len(lines) == 4


def test_a_target_of_a_kind_evalrelay_cannot_run_is_a_note_not_an_error(
    project: WriteFiles,
) -> None:
    root = project(
        {
            ".agentv/targets.yaml": "targets:\n  - {name: pi, provider: pi-agent-sdk}\n",
            "a.yaml": "execution: {target: pi}\n" + PLAIN,
        }
    )
    code, lines = validate(root / "a.yaml")
    assert code == 0
    assert lines[0] == f"{root}/a.yaml: 1 case OK (AgentV evalcases with execution blocks)"
    assert "uses provider 'pi-agent-sdk', which evalrelay cannot run" in lines[1]
    assert lines[1].startswith(f"{root}/a.yaml:1:21: note: ")
    assert lines[1].endswith("run it with --target NAME, or define the target")


def test_a_judge_prompt_file_that_is_missing_fails_validate_at_its_key(
    project: WriteFiles,
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: fast, provider: mock}\n",
            "t.yaml": """\
        evaluators:
          - {name: j, type: llm_judge, target: fast, prompt: file://prompts/judge.md}
        evalcases:
          - {id: a, input_messages: [{role: user, content: x}]}
        """,
        }
    )
    code, lines = validate(root / "t.yaml")
    assert code == 1
    assert lines == [
        f"{root}/t.yaml:2:54: judge prompt file prompts/judge.md not found (looked for "
        f"{root}/prompts/judge.md); create it or write the prompt inline"
    ]
    (root / "prompts").mkdir()
    (root / "prompts/judge.md").write_text("Grade {{ candidate_answer }}")
    assert validate(root / "t.yaml")[0] == 0


def test_a_judging_evaluator_without_a_judge_fails_validate_at_the_evaluator(
    project: WriteFiles,
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: cx, provider: codex}\n",
            "t.yaml": """\
        target: cx
        evalcases:
          - id: a
            input_messages: [{role: user, content: x}]
            rubrics: [Says x]
            evaluators:
              - {name: j, type: llm_judge}
        """,
        }
    )
    code, lines = validate(root / "t.yaml")
    assert code == 1
    why = (
        "has no judge: target 'cx' is an agent and has no judge_target; set `target:` on "
        "this evaluator, `judge_target:` on 'cx', or `default_judge:` in evalrelay.yaml"
    )
    assert lines == [
        f"{root}/t.yaml:5:14: case 'a': rubric {why}",
        f"{root}/t.yaml:7:9: case 'a': llm_judge {why}",
    ]
    (root / "targets.yaml").write_text("targets:\n  - {name: cx, provider: openai, model: m}\n")
    assert validate(root / "t.yaml")[0] == 0  # an API target grades itself


def test_million_case_file_is_refused_by_the_case_limit_within_seconds(
    project: WriteFiles,
) -> None:
    root = project({"evalrelay.yaml": ""})
    path = root / "million.yaml"
    with path.open("w") as out:
        out.write("evalcases:\n")
        out.writelines(f"  - {{id: c{i}, input: q}}\n" for i in range(1_000_000))
    # The bound is on the command's CPU time: its wall time on a shared machine measures
    # the other processes as much as the refusal.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert cpu < 15, (cpu, done.stdout)
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        f"{path}:100002:5: more than 100000 cases (this is case 100001); split the file, or "
        "raise `load_limits: {cases: ...}` in evalrelay.yaml if the file really needs more"
    )


def test_suite_with_more_tests_than_the_limit_is_refused(project: WriteFiles) -> None:
    tests = "".join(f"  - {{id: t{i}, vars: {{q: x}}}}\n" for i in range(4))
    suite = f"prompts: [a, b]\ntests:\n{tests}"
    root = project({"evalrelay.yaml": "load_limits: {cases: 5}\n", "s.yaml": suite})
    code, lines = validate(root / "s.yaml")
    assert code == 1
    assert lines == [
        f"{root}/s.yaml:5:5: more than 5 cases (tests times prompts times providers); split the "
        "file, or raise `load_limits: {cases: ...}` in evalrelay.yaml if the file really needs more"
    ]


def test_file_over_the_size_limit_is_refused_before_it_is_read(project: WriteFiles) -> None:
    root = project({"evalrelay.yaml": "load_limits: {bytes: 100}\n", "a.yaml": GOOD})
    code, lines = validate(root / "a.yaml")
    assert code == 1
    assert lines == [
        f"{root}/a.yaml:1:1: the file is {len(GOOD)} bytes, more than the 100 an eval file may "
        "be; split it, or raise `load_limits: {bytes: ...}` in evalrelay.yaml if the file "
        "really needs more"
    ]


def test_file_needing_more_memory_than_the_limit_is_an_error(project: WriteFiles) -> None:
    prompt = (
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
        "{% set ns.l = ns.l + ['x'.ljust(1000000)] %}{% endfor %}{{ ns.l|length }}"
    )
    root = project(
        {
            "evalrelay.yaml": "load_limits: {memory_mb: 768}\n",
            "a.yaml": f"prompts: [{json.dumps(prompt)}]\ntests:\n  - id: t1\n",
        }
    )
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "validate", str(root / "a.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{root}/a.yaml:1:1: loading it needed more than 768 MB of memory; split the file, or "
        "raise `load_limits: {memory_mb: ...}` in evalrelay.yaml if the file really needs more"
    ]


UNKNOWN_JUDGE_FILES = {
    "targets.yaml": "targets:\n  - {name: judge, provider: mock, judge: true}\n",
    "evals.yaml": (
        "evalcases:\n"
        "  - id: c\n"
        "    input_messages: [{role: user, content: hi}]\n"
        "    evaluators:\n"
        "      - {type: llm_judge, target: judge}\n"
        "      - {type: llm_judge, target: jduge}\n"
    ),
}


def test_an_unknown_judge_target_is_a_note_at_its_line_in_an_operators_file(
    project: WriteFiles,
) -> None:
    """AgentV resolves a judge when it grades, so the file is valid; the note says where,
    and that `run` ends that evaluator's jobs as infra errors."""
    root = project(UNKNOWN_JUDGE_FILES)
    code, lines = validate(root / "evals.yaml")
    assert code == 0, lines
    assert lines[0] == f"{root}/evals.yaml: 1 case OK (evalcases)"
    (note,) = [line for line in lines if "jduge" in line]
    assert note.startswith(
        f"{root}/evals.yaml:6:35: note: case 'c': judge unknown target 'jduge' in "
        f"{root}/targets.yaml; available: judge, mock, mock-judge, nop, oracle; `run` ends its "
        "jobs as infra errors: define the target, or name another"
    ), note
    assert "evals.yaml:5:" not in "\n".join(lines)  # the judge that exists is fine


def test_an_unknown_judge_target_is_an_error_in_an_untrusted_file(project: WriteFiles) -> None:
    """The inbox refuses a dropped file naming a judge the operator lacks: no job of it runs."""
    root = project(UNKNOWN_JUDGE_FILES)
    result = CliRunner().invoke(cli, ["validate", "--untrusted", str(root / "evals.yaml")])
    assert result.exit_code == 1
    assert f"{root}/evals.yaml:6:35: case 'c': judge unknown target 'jduge'" in result.stdout


def test_an_unknown_judge_is_noted_beside_the_files_other_errors_in_one_pass(
    project: WriteFiles,
) -> None:
    """A file with a shape error still has its judges checked: the author fixes all at once."""
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: judge, provider: mock, judge: true}\n",
            "evals.yaml": (
                "evaluators:\n"
                "  - {type: llm_judge, target: jugde}\n"
                "evalcases:\n"
                "  - id: broken\n"
                "    input_messages: [{role: robot, content: hi}]\n"
                "  - id: c\n"
                "    input_messages: [{role: user, content: hi}]\n"
                "    evaluators:\n"
                "      - type: composite\n"
                "        evaluators:\n"
                "          - {type: llm_judge, target: judge}\n"
                "          - {type: llm_judge, target: jduge}\n"
            ),
        }
    )
    code, lines = validate(root / "evals.yaml")
    assert code == 1
    said = [line for line in lines if line.startswith(f"{root}/evals.yaml:")]
    assert len(said) == 3, lines
    assert said[0].startswith(f"{root}/evals.yaml:5:22: case 'broken':") and "robot" in said[0]
    assert said[1].startswith(f"{root}/evals.yaml:2:31: note: judge unknown target 'jugde'")
    assert said[2].startswith(
        f"{root}/evals.yaml:12:39: note: case 'c': judge unknown target 'jduge'"
    ), lines


def test_the_memory_bound_is_lifted_once_the_files_are_checked(project: WriteFiles) -> None:
    """Invoked in a process that goes on (a test runner, which then starts a browser), the
    bound on the address space must not outlive the check."""
    before = resource.getrlimit(resource.RLIMIT_AS)
    root = project(
        {"evals.yaml": "evalcases: [{id: x, input_messages: [{role: user, content: y}]}]\n"}
    )
    code, _ = validate(root / "evals.yaml")
    assert code == 0
    assert resource.getrlimit(resource.RLIMIT_AS) == before
