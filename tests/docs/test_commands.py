"""Every `evalrelay` command the README and the documentation show is one the CLI accepts:
each command line of a code block parses with the real parser, every command and option
named in running text exists, and the usage line of each command on docs/commands.md
names exactly the options it takes."""

from __future__ import annotations

import re

import click
import pytest

from evalrelay.bridge.cli.main import cli
from tests.docs.documented import (
    DOCS,
    README,
    ROOT,
    Block,
    Shown,
    commands_in,
    documents,
    inline_code,
    option_spellings,
    parse,
    shown_commands,
)

SHOWN = shown_commands()
OPTION = re.compile(r"^-{1,2}[A-Za-z][\w-]*")


@pytest.mark.parametrize("shown", SHOWN, ids=[s.where for s in SHOWN])
def test_each_command_line_in_a_code_block_parses_as_the_cli_parses_it(shown: Shown) -> None:
    try:
        parse(shown.argv)
    except click.UsageError as exc:
        pytest.fail(f"{shown.where}: `{shown.line}`: {exc.format_message()}; fix the example")


def test_every_command_is_shown_in_a_code_block_and_the_readme_shows_the_walkthrough() -> None:
    """The extraction finds what is there: an example of every command somewhere, and the
    README's own commands, so an empty list cannot pass the test above."""
    named = {shown.argv[0] for shown in SHOWN}
    commands = set(cli.every_command())
    assert named >= commands, f"no example of {sorted(commands - named)}"
    in_readme = [" ".join(s.argv) for s in shown_commands([README])]
    assert "run examples/evals/quickstart.yaml" in in_readme
    assert "compare first --targets guesser oracle" in in_readme


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["report", "latest", "--htm", "r.html"], "No such option '--htm'"),
        (["rn", "evals"], "No such command 'rn'"),
        (["run", "--target", "mock"], "Missing argument 'PATHS...'"),
        (["compare", "a", "b", "--tolerance", "some"], "Invalid value for '--tolerance'"),
        (["worker", "--pool", "forks"], "Invalid value for '--pool'"),
        (["run", "evals", "--name", "a", "--name", "b"], "--name given twice"),
        (["status", "one", "two"], "unexpected extra argument (two)"),
        (["retry", "latest", "--status"], "Option '--status' requires an argument"),
    ],
)
def test_a_command_the_cli_would_refuse_is_refused(argv: list[str], said: str) -> None:
    with pytest.raises(click.UsageError) as refused:
        parse(argv)
    assert said in refused.value.format_message()


def test_commands_are_found_in_chains_after_assignments_and_as_systemd_lines() -> None:
    text = "\n".join(
        [
            "pip install -e . && evalrelay run examples/evals/quickstart.yaml",
            "EVALRELAY_REDIS_URL=redis://h:6379/0 evalrelay status   # anywhere",
            "ExecStart=/opt/evalrelay/venv/bin/evalrelay collect --out /srv/results",
            "evalrelay report latest \\",
            "    --junit ci/evals.xml",
            "mode: evalrelay",
            "# evalrelay.yaml: the project root",
            "cp my-evals.yaml inbox/",
        ]
    )
    found = commands_in(Block(README, 1, "bash", text + "\n", ""))
    assert [s.argv for s in found] == [
        ["run", "examples/evals/quickstart.yaml"],
        ["status"],
        ["collect", "--out", "/srv/results"],
        ["report", "latest", "--junit", "ci/evals.xml"],
    ]
    assert found[1].comment == "anywhere"


def test_commands_and_options_named_in_running_text_exist() -> None:
    """`evalrelay run --case GLOB` in a sentence, or a usage line with its brackets: the
    command must exist and take every option named."""
    wrong = []
    for path in documents():
        for line, code in inline_code(path):
            words = code.split()
            if len(words) < 2 or words[0] != "evalrelay":
                continue
            where = f"{path.relative_to(ROOT)}:{line}: `{code}`"
            words = words[1:]
            while words and OPTION.match(words[0]):
                words = words[1:]  # the group's own options (-v)
            if not words:
                continue
            command = cli.every_command().get(words[0])
            if command is None:
                wrong.append(f"{where}: no command {words[0]!r}")
                continue
            known = option_spellings(command)
            for word in words[1:]:
                option = OPTION.match(word.strip("[]|,.;:()"))
                if option and option.group(0) not in known:
                    wrong.append(f"{where}: `{words[0]}` has no option {option.group(0)}")
    assert not wrong, "\n".join(wrong)


def usage_lines() -> dict[str, str]:
    """Each `## evalrelay NAME` section of docs/commands.md and its usage line."""
    text = (DOCS / "commands.md").read_text()
    sections = re.findall(r"^## `evalrelay (\w+)`\n\nUsage: `([^`]+)`", text, re.MULTILINE)
    return {name: " ".join(usage.split()) for name, usage in sections}


def test_each_command_has_a_section_whose_usage_names_exactly_its_options() -> None:
    usages = usage_lines()
    assert set(usages) == set(cli.every_command()), "docs/commands.md: a section per command"
    wrong = []
    for name, usage in usages.items():
        command = cli.every_command()[name]
        named = {m.group(0) for w in usage.split() if (m := OPTION.match(w.strip("[]|")))}
        unknown = named - option_spellings(command)
        missing = [
            "/".join(param.opts)
            for param in command.params
            if isinstance(param, click.Option) and not named & set(param.opts)
        ]
        if unknown or missing:
            wrong.append(f"{name}: names {sorted(unknown)} it lacks, misses {missing}")
    assert not wrong, "docs/commands.md usage lines:\n" + "\n".join(wrong)


def test_the_retry_examples_name_the_statuses_retry_runs_again_by_default() -> None:
    default = next(p for p in cli.every_command()["retry"].params if p.name == "statuses").default
    assert default == "infra_error,timeout,rate_limited"
    in_readme = [code for _, code in inline_code(README) if code.startswith("evalrelay retry")]
    in_blocks = [s.line for s in shown_commands() if s.argv[0] == "retry"]
    assert in_readme and in_blocks
    assert all(f"--status {default}" in example for example in [*in_readme, *in_blocks])
