"""40 real promptfoo configs from public repositories (fixtures/README.md says which
commit) validate in place, unchanged: at least 90% of those whose files are all there."""

from __future__ import annotations

from pathlib import Path

from evalrelay.bridge.cli.validate import check_file

FIXTURES = Path(__file__).parent / "fixtures"

INCOMPLETE = {
    "Antonio-Bellifemine+generative-ai-testing/chatbot-testing/promptfooconfig.yaml": (
        "a template: `file://path/to/file` does not exist and every `assert` has an empty `type:`",
        "an assertion is a string (a criterion) or a mapping with `type`",
    ),
    "BillReyor+lmstudio-promptfoo-chatbot/promptfooconfig.yaml": (
        "a red-team config: its tests are the redteam.yaml promptfoo generates, not committed",
        "a red-team config has no tests until promptfoo generates them",
    ),
    "ChristianCiappina+ai-safety-chatbot-sunny/promptfooconfig.yaml": (
        "a red-team config: its tests are the redteam.yaml promptfoo generates, not committed",
        "a red-team config has no tests until promptfoo generates them",
    ),
    **{
        f"AlqarniMohammed+prompt-eval-engine/{name}": (
            "test generators importing the repository's `src` package (not named by the "
            "config) and reading datasets it does not commit (folders of .gitkeep only)",
            "test generator pf_tests.py",
        )
        for name in (
            "promptfooconfig.yaml",
            "promptfooconfig.offline.yaml",
            "promptfooconfig.graded.yaml",
            "promptfooconfig.compare.yaml",
        )
    },
}
"""Configs whose referenced files are not all in their repository, with why, and what
validate says of them."""

FAILING = {
    "Cody2504+Promptfoo-Learning/test_cases/promptfooconfig.yaml": (
        "an `image_url` part in a chat prompt: evalrelay sends text and files",
        "unknown type 'image_url'",
    ),
}
"""Complete configs evalrelay refuses, with why."""


def configs() -> list[str]:
    rows = (FIXTURES / "SOURCES.tsv").read_text(encoding="utf-8").splitlines()
    return [
        f"{repo.replace('/', '+')}/{path}" for repo, _, path in (row.split("\t") for row in rows)
    ]


def test_the_sample_holds_40_configs_from_public_repositories() -> None:
    found = configs()
    assert len(found) >= 40
    assert all((FIXTURES / name).is_file() for name in found)


def test_at_least_90_percent_of_complete_configs_validate_unchanged() -> None:
    outcomes = {name: check_file(FIXTURES / name) for name in configs()}
    complete = [name for name in outcomes if name not in INCOMPLETE]
    valid = [name for name in complete if not outcomes[name].problems]
    failed = {
        name: [p.message for p in outcomes[name].problems]
        for name in complete
        if outcomes[name].problems
    }
    assert len(valid) / len(complete) >= 0.9, failed
    assert set(failed) == set(FAILING), failed
    for name, (_, said) in {**INCOMPLETE, **FAILING}.items():
        messages = " ".join(p.message for p in outcomes[name].problems)
        assert said in messages, (name, messages)
    for name in valid:
        assert outcomes[name].cases > 0
        assert outcomes[name].shape.startswith("promptfoo config")
