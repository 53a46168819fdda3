"""The bounds an eval file may ask for, at their edges: the maximum itself is accepted, one
past it and a zero time limit are refused, each with the line of the value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalrelay.bridge.errors import Diagnostic, InvalidFileError
from evalrelay.bridge.evalfile.cases import LoadedEvalFile, load_eval_file
from evalrelay.bridge.evalfile.limits import (
    MAX_JOB_SECONDS,
    MAX_REPEATS,
    LoadLimits,
    TemplateLimits,
)
from evalrelay.bridge.evalfile.project import ProjectConfig, load_config
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


@pytest.mark.parametrize("where", ["case", "file"])
@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused_as_such(
    project: WriteFiles, where: str, value: str
) -> None:
    assert "finite number" in refused(project, "timeout_seconds", value, where)


def config_refusal(project: WriteFiles, config: str) -> Diagnostic:
    root = project({"evalrelay.yaml": config})
    with pytest.raises(InvalidFileError) as caught:
        load_config(root)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.path == root / "evalrelay.yaml"
    return diagnostic


def config_of(project: WriteFiles, config: str) -> ProjectConfig:
    return load_config(project({"evalrelay.yaml": config}))


def test_template_seconds_go_up_to_an_hour_and_must_be_some_time(project: WriteFiles) -> None:
    assert config_of(project, "template_limits: {seconds: 3600}").template_limits.seconds == 3600
    assert config_of(project, "template_limits: {seconds: 0.5}").template_limits.seconds == 0.5
    for value, says in [
        ("3600.5", "less than or equal to 3600"),
        ("0", "greater than 0"),
        (".nan", "finite number"),
    ]:
        diagnostic = config_refusal(project, f"template_limits:\n  seconds: {value}\n")
        assert says in diagnostic.message, diagnostic.message
        assert (diagnostic.line, diagnostic.column) == (2, 12), diagnostic


def test_the_loader_may_have_256_mb_and_no_less(project: WriteFiles) -> None:
    assert config_of(project, "load_limits: {memory_mb: 256}").load_limits.memory_mb == 256
    diagnostic = config_refusal(project, "load_limits:\n  memory_mb: 255\n")
    assert "greater than or equal to 256" in diagnostic.message
    assert diagnostic.line == 2


@pytest.mark.parametrize("section", ["template_limits", "load_limits"])
def test_a_misspelt_limit_is_refused_at_its_line(project: WriteFiles, section: str) -> None:
    diagnostic = config_refusal(project, f"{section}:\n  secconds: 10\n")
    assert diagnostic.message == f"unknown key 'secconds' in {section}; did you mean 'seconds'?"
    assert (diagnostic.line, diagnostic.column) == (2, 3)


def test_the_limits_a_project_was_loaded_with_stay_as_they_are() -> None:
    """One project's limits bound every file it loads: none may change them on the way."""
    for limits in (TemplateLimits(), LoadLimits()):
        with pytest.raises(ValidationError, match="frozen"):
            limits.seconds = 1.0


def test_an_exceeded_limit_says_which_setting_raises_it(project: WriteFiles) -> None:
    cases = "".join(f"  - id: c{i}\n    {CASE}\n" for i in range(3))
    root = project(
        {"evalrelay.yaml": "load_limits: {cases: 2}\n", "e.yaml": f"evalcases:\n{cases}"}
    )
    with pytest.raises(InvalidFileError) as caught:
        load_eval_file(root / "e.yaml")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.message.endswith(
        "raise `load_limits: {cases: ...}` in evalrelay.yaml if the file really needs more"
    ), diagnostic.message
