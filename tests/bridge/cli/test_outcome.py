"""What `evalrelay run` says and exits with when it ends: the failed cases and why, the
ungraded results counted, and an exit status a CI job can act on."""

from __future__ import annotations

from pathlib import Path

from tests.bridge.cli.test_run import run
from tests.conftest import WriteFiles, embedded_env

TARGETS = """\
targets:
  - {name: right, provider: mock, response: Paris is the capital}
  - {name: wrong, provider: mock, response: "Lyon, I think"}
  - {name: gpt, provider: openai, model: gpt-5-mini}
"""
CASES = """\
evaluators:
  - {name: says-paris, type: contains, value: Paris}
evalcases:
  - {id: capital, input_messages: [{role: user, content: "Capital of France?"}]}
  - {id: again, input_messages: [{role: user, content: "And the capital of France?"}]}
"""


def _run(root: Path, home: Path, *args: str) -> tuple[int, str]:
    env = embedded_env(home, "OPENAI_API_KEY")
    done = run("evals/c.yaml", *args, env=env, cwd=root)
    return done.returncode, " ".join(done.stderr.split())  # rich wraps to the terminal


def test_all_cases_passing_exits_0(project: WriteFiles, private_home: Path) -> None:
    root = project({"targets.yaml": TARGETS, "evals/c.yaml": CASES})
    code, said = _run(root, private_home, "--target", "right")
    assert code == 0, said
    assert "failed" not in said


def test_failed_cases_exit_1_and_are_listed_with_their_misses(
    project: WriteFiles, private_home: Path
) -> None:
    root = project({"targets.yaml": TARGETS, "evals/c.yaml": CASES})
    code, said = _run(root, private_home, "--target", "wrong")
    assert code == 1
    assert "2 failed" in said and "capital" in said and "again" in said
    assert "score 0.00" in said
    assert "│ capital │ wrong │ failed │ score 0.00" in said  # its outcome, not status ok
    assert "exit 1: 2 of 2 results failed" in said


def test_jobs_without_an_answer_exit_2_and_say_why_in_the_terminal(
    project: WriteFiles, private_home: Path
) -> None:
    root = project({"targets.yaml": TARGETS, "evals/c.yaml": CASES})
    code, said = _run(root, private_home, "--target", "gpt")
    assert code == 2
    assert "infra_error" in said and "OPENAI_API_KEY" in said  # the missing key, named
    assert "2 of 2 results were not graded (2 without an answer)" in said
    assert "exit 2: 2 of 2 jobs ended without an answer to grade" in said


def test_min_score_decides_the_exit_and_says_why(project: WriteFiles, private_home: Path) -> None:
    root = project({"targets.yaml": TARGETS, "evals/c.yaml": CASES})
    code, said = _run(root, private_home, "--target", "wrong", "--min-score", "0.5")
    assert code == 1
    assert "exit 1: mean score 0.000 is below --min-score 0.500" in said
    code, said = _run(root, private_home, "--target", "right", "--min-score", "0.5")
    assert code == 0, said


def test_the_summary_shows_intervals_and_under_github_annotates_failed_cases(
    project: WriteFiles, private_home: Path, tmp_path: Path
) -> None:
    """The pass rate with its Wilson interval (0 of 2: 0% to 66%); on GitHub Actions, an
    `::error` on stdout at the line of each failed case's `id`."""
    root = project({"targets.yaml": TARGETS, "evals/c.yaml": CASES})
    step_summary = tmp_path / "summary.md"
    env = {
        **embedded_env(private_home, "OPENAI_API_KEY"),
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(step_summary),
    }
    done = run("evals/c.yaml", "--target", "wrong", env=env, cwd=root)
    assert done.returncode == 1, done.stderr
    assert "0% [0%\u201366%]" in done.stderr
    assert sorted(done.stdout.splitlines()) == [  # in the order the results came
        "::error file=evals/c.yaml,line=4,title=capital failed (wrong)::score 0.00; "
        "answer does not contain 'Paris'",
        "::error file=evals/c.yaml,line=5,title=again failed (wrong)::score 0.00; "
        "answer does not contain 'Paris'",
    ]
    assert not step_summary.exists()  # one target: no pair to show
