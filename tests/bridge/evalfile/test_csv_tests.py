"""AgentV's CSV tests files: each column's meaning, read through a suite as a user writes it."""

from __future__ import annotations

import pytest

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.planning.campaigns import plan_jobs
from tests.conftest import WriteFiles

TARGETS = "targets:\n  - {name: llm, provider: mock, judge_target: llm}\n"
SUITE = 'providers: [llm]\nprompts: ["{{ input }} ({{ tone.style }}, {{ locale }})"]\n'
SUITE += "tests:\n  - file://cases/rows.csv\n"

CSV = (
    "\ufeffid,input,vars.tone.style,locale,__prefix,__suffix,__expected,__expected2,"
    "__expected3,__metric,__threshold,__metadata:source,__metadata:tags[],"
    "__config:__expected2:threshold,__description\n"
    'greet,say hi,warm,en-US,Please: ,!,icontains:hello,"not-contains:bye, now",'
    'grade:Is polite,polite,0.6,csv,"a,b\\,c",0.9,Greets the user\n'
    ",plain,cool,fr-FR,,,Bonjour,,,,,,,,\n"
)


def test_every_column_of_a_csv_tests_file_means_what_agentv_reads(
    project: WriteFiles,
) -> None:
    root = project(
        {"targets.yaml": TARGETS, "evals/suite.yaml": SUITE, "evals/cases/rows.csv": CSV}
    )
    loaded = load_eval_file(root / "evals/suite.yaml")
    first, second = plan_jobs("c", [loaded], None, None)

    assert [first.case_id, second.case_id] == ["greet", "row-2"]
    assert first.request.question == "Please: say hi! (warm, en-US)"
    assert second.request.question == "plain (cool, fr-FR)"
    contains, negated, rubric = first.evaluators
    assert (contains.type, contains.value, contains.name) == ("icontains", "hello", "polite-1")
    assert (negated.type, negated.value, negated.negate) == ("contains", "bye, now", True)
    assert negated.min_score == 0.9  # __config:__expected2:threshold
    assert (rubric.type, rubric.criteria) == ("llm_judge", "Is polite")
    assert first.pass_threshold == 0.6
    assert first.outcome == "Greets the user"
    assert first.metadata == {"source": "csv", "tags": ["a", "b,c"]}
    (equals,) = second.evaluators  # a cell that names no type must equal the answer
    assert (equals.type, equals.value) == ("equals", "Bonjour")


@pytest.mark.parametrize(
    ("header", "cell", "message"),
    [
        ("__expected", "shout:LOUD", "row 2, column __expected: unknown assertion type 'shout'"),
        ("__expected", "latency", "row 2, column __expected: latency needs its limit"),
        ("__provider_output", "x", "row 2: column __provider_output is no longer read"),
        ("__config:__expected:weight", "1", "write __config:__expectedN:threshold"),
    ],
)
def test_a_bad_csv_cell_is_an_error_naming_the_suite_line_row_and_column(
    project: WriteFiles, header: str, cell: str, message: str
) -> None:
    root = project(
        {
            "targets.yaml": TARGETS,
            "evals/suite.yaml": SUITE,
            "evals/cases/rows.csv": f"id,input,{header}\na,hi,{cell}\n",
        }
    )
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "evals/suite.yaml")
    (problem,) = caught.value.diagnostics
    assert (problem.line, problem.column) == (4, 5)
    assert message in problem.message and "rows.csv" in problem.message
