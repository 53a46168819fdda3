"""`--case` and `--tag`: which cases of loaded files run, and a clear error for none."""

from __future__ import annotations

import pytest

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.selection import select_cases
from tests.conftest import WriteFiles

CASES = """\
evalcases:
  - {id: geo-paris, metadata: {tags: [geo, smoke]}, input_messages: [{role: user, content: a}]}
  - {id: geo-rome, metadata: {tags: [geo]}, input_messages: [{role: user, content: b}]}
  - {id: math-sum, input_messages: [{role: user, content: c}]}
"""


def test_case_globs_and_tags_choose_cases_and_drop_empty_files(project: WriteFiles) -> None:
    root = project({"a.yaml": CASES, "b.yaml": CASES.replace("geo-", "other-")})
    files = [load_eval_file(root / "a.yaml"), load_eval_file(root / "b.yaml")]

    def ids(patterns: list[str], tags: list[str]) -> list[str]:
        return [c.id for f in select_cases(files, patterns, tags) for c in f.cases]

    assert ids(["geo-*"], []) == ["geo-paris", "geo-rome"]
    assert ids(["math-sum", "other-rome"], []) == ["math-sum", "other-rome", "math-sum"]
    assert ids([], ["smoke"]) == ["geo-paris", "other-paris"]
    assert ids(["geo-*"], ["smoke"]) == ["geo-paris"]
    assert len(select_cases(files, ["geo-*"], [])) == 1  # b.yaml has no geo- case


def test_nothing_chosen_is_an_error_naming_the_cases_and_tags(project: WriteFiles) -> None:
    root = project({"a.yaml": CASES})
    files = [load_eval_file(root / "a.yaml")]
    with pytest.raises(EvalrelayError) as caught:
        select_cases(files, ["nope*"], ["slow"])
    assert str(caught.value) == (
        "no case matches --case nope* and --tag slow; the cases are geo-paris, geo-rome, "
        "math-sum; the tags are geo, smoke"
    )
