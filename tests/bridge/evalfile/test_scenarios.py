"""AgentV's `scenarios:` (July 2026): config rows crossed with test rows, merged and named
as AgentV lowers them, from the suite or `file://` globs; a look-alike of AgentV's
`examples/features/scenarios` runs on the mock target, one result per row and test."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from tests.bridge.cli.test_run import run
from tests.conftest import WriteFiles, embedded_env, read_jsonl

MATRIX = """\
- description: Languages crossed with shared phrase tests
  config:
    - id: spanish
      vars: {language: Spanish, expected_hello: hola, expected_thanks: gracias}
    - id: french
      vars: {language: French, expected_hello: bonjour, expected_thanks: merci}
      assert:
        - {type: icontains, value: "{{ expected_hello }}"}
    - id: german
      vars: {language: German, expected_hello: hallo, expected_thanks: danke}
  tests:
    - description: translates a greeting
      vars: {phrase: hello}
      assert:
        - {type: equals, value: "{{ expected_hello }}"}
    - description: translates a courtesy phrase
      vars: {phrase: thank you}
      assert:
        - {type: equals, value: "{{ expected_thanks }}"}
"""

SUITE = """\
name: scenarios-demo
prompts:
  - "Translate '{{ phrase }}' to {{ language }}."
scenarios:
  - file://scenarios/*.yaml
  - config:
      - {vars: {language: Italian}}
    tests:
      - {id: italian-hello, vars: {phrase: hello}}
      - {vars: {phrase: bye}, assert: [{type: contains, value: ciao}]}
"""

TARGETS = """\
targets:
  - name: translator
    provider: mock
    responses:
      spanish__scenario_test_1: hola
      spanish__scenario_test_2: gracias
      french__scenario_test_1: bonjour
      french__scenario_test_2: merci
      german__scenario_test_1: hallo
      german__scenario_test_2: dankeschön
"""


def suite(project: WriteFiles) -> Path:
    root = project(
        {
            "targets.yaml": TARGETS,
            "evals/suite.yaml": SUITE,
            "evals/scenarios/translation-matrix.yaml": MATRIX,
        }
    )
    return root


def test_each_config_row_times_each_test_row_merged_and_named_as_agentv(
    project: WriteFiles,
) -> None:
    loaded = load_eval_file(suite(project) / "evals" / "suite.yaml")
    ids = [c.id for c in loaded.cases]
    assert ids == [
        "spanish__scenario_test_1", "spanish__scenario_test_2",
        "french__scenario_test_1", "french__scenario_test_2",
        "german__scenario_test_1", "german__scenario_test_2",
        "italian-hello", "scenario-2-1-2",
    ]  # fmt: skip
    prompts = [c.messages[0].parts[0].value for c in loaded.cases]  # type: ignore[union-attr]
    assert prompts[2] == "Translate 'hello' to French." and prompts[7].endswith("to Italian.")
    french = loaded.cases[2].case.evaluator_specs() or []
    assert [(e.type, getattr(e, "value", None)) for e in french] == [
        ("icontains", "bonjour"),  # the config row's assertions first
        ("equals", "bonjour"),
    ]


def test_a_scenario_without_config_rows_is_named_at_its_line(project: WriteFiles) -> None:
    root = project(
        {
            "suite.yaml": """\
            prompts: ["{{ x }}"]
            scenarios:
              - tests: [{vars: {x: 1}}]
            """
        }
    )
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "suite.yaml")
    (problem,) = caught.value.diagnostics
    assert problem.line == 3 and "`config` list and a `tests` list" in problem.message


def test_the_scenarios_example_runs_one_line_per_row_and_test(
    project: WriteFiles, private_home: Path
) -> None:
    root = suite(project)
    done = run(
        "evals/suite.yaml", "--target", "translator", "--out", "out",
        env=embedded_env(private_home), cwd=root,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the german courtesy phrase fails, as it must
    lines = read_jsonl(next((root / "out").glob("*.jsonl")))
    by_id = {str(line["case_id"]): line for line in lines}
    assert len(lines) == len(by_id) == 8
    assert by_id["spanish__scenario_test_1"]["passed"] is True
    assert by_id["french__scenario_test_1"]["passed"] is True
    assert by_id["german__scenario_test_2"]["passed"] is False
