"""The bounds an eval file may ask for, at their edges: the maximum itself is accepted, one
past it and a zero time limit are refused, each with the line of the value."""

from __future__ import annotations

import pytest

from bridge.errors import InvalidFileError
from bridge.evalfile.cases import LoadedEvalFile, load_eval_file
from bridge.evalfile.limits import MAX_JOB_SECONDS, MAX_REPEATS, LoadLimits, TemplateLimits
from tests.conftest import WriteFiles

CASE = "input_messages: [{role: user, content: q}]"


def test_the_limits_are_the_documented_ones() -> None:
    """The boundary tests below follow the constants; these are the values promised."""
    assert (MAX_REPEATS, MAX_JOB_SECONDS) == (1000, 4 * 3600)
    # As docs/configuration.md's evalrelay.yaml example writes them out.
    assert TemplateLimits().model_dump() == {
        "iterations": 100000,
        "output_bytes": 1048576,
        "seconds": 5,
    }
    assert LoadLimits().model_dump() == {
        "bytes": 67108864,
        "cases": 100000,
        "seconds": 120,
        "memory_mb": 4096,
    }


def load(project: WriteFiles, field: str, value: object, where: str) -> LoadedEvalFile:
    if where == "case":
        text = f"evalcases:\n  - id: c\n    {field}: {value}\n    {CASE}\n"
    else:
        text = f"{field}: {value}\nevalcases:\n  - id: c\n    {CASE}\n"
    root = project({"evals.yaml": text})
    return load_eval_file(root / "evals.yaml")


def refused(project: WriteFiles, field: str, value: object, where: str) -> str:
    with pytest.raises(InvalidFileError) as caught:
        load(project, field, value, where)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.line == (3 if where == "case" else 1)
    return diagnostic.message


@pytest.mark.parametrize("where", ["case", "file"])
def test_the_maximum_repeats_are_accepted_and_one_more_refused(
    project: WriteFiles, where: str
) -> None:
    loaded = load(project, "repeats", MAX_REPEATS, where)
    owner = loaded.cases[0].case if where == "case" else loaded.spec
    assert owner.repeats == MAX_REPEATS
    assert f"less than or equal to {MAX_REPEATS}" in refused(
        project, "repeats", MAX_REPEATS + 1, where
    )
    assert "greater than or equal to 1" in refused(project, "repeats", 0, where)


@pytest.mark.parametrize("where", ["case", "file"])
def test_the_maximum_timeout_is_accepted_and_a_moment_more_refused(
    project: WriteFiles, where: str
) -> None:
    loaded = load(project, "timeout_seconds", MAX_JOB_SECONDS, where)
    owner = loaded.cases[0].case if where == "case" else loaded.spec
    assert owner.timeout_seconds == MAX_JOB_SECONDS
    assert "less than or equal to 14400" in refused(
        project, "timeout_seconds", MAX_JOB_SECONDS + 0.5, where
    )


@pytest.mark.parametrize("where", ["case", "file"])
@pytest.mark.parametrize("value", [0, "0.0", -1])
def test_a_timeout_of_zero_or_less_is_refused(
    project: WriteFiles, where: str, value: object
) -> None:
    assert "greater than 0" in refused(project, "timeout_seconds", value, where)
    assert load(project, "timeout_seconds", 0.001, where) is not None  # any positive time is one
