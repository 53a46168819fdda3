"""What the README and the pages under docs/ show: their code blocks, the `evalrelay`
command lines in them, and those lines parsed by the real command's own parser.

A command in the documentation is a promise to a reader who will paste it; parsing it
with the parser `evalrelay` itself uses means a renamed or removed option breaks the
tests, not the reader's first try.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
from markdown_it import MarkdownIt

from evalrelay.bridge.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

SEPARATORS = {"&&", "||", ";", "|"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
NAMES_EVALRELAY = re.compile(r"(?<![\w.-])evalrelay\b(?![.'-])")
"""The word `evalrelay` as a program, not `evalrelay.yaml`, `evalrelay's` or a path part."""


def documents() -> list[Path]:
    """The README and every page of the documentation site."""
    return [README, *sorted(DOCS.glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """A fenced code block: where it is, its language, its text."""

    path: Path
    line: int
    """The line of its first content line (1-based)."""
    info: str
    text: str
    section: str
    """The heading it sits under."""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Shown:
    """One `evalrelay` command line shown in a code block."""

    where: str
    line: str
    argv: list[str]
    """The arguments after `evalrelay`."""
    comment: str
    """The shell comment after it, if any (`# exits 1: ...`)."""


def blocks(path: Path) -> list[Block]:
    """Every fenced code block of a Markdown file, with the heading above it."""
    found = []
    section = ""
    tokens = MarkdownIt("commonmark").parse(path.read_text())
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[index + 1].content
        elif token.type == "fence" and token.map is not None:
            found.append(Block(path, token.map[0] + 2, token.info.strip(), token.content, section))
    return found


def inline_code(path: Path) -> Iterator[tuple[int, str]]:
    """Every inline code span, with the line of the paragraph it is in."""
    tokens = MarkdownIt("commonmark").parse(path.read_text())
    for token in tokens:
        if token.type == "inline" and token.map is not None:
            for child in token.children or []:
                if child.type == "code_inline":
                    yield token.map[0] + 1, child.content


def commands_in(block: Block) -> list[Shown]:
    """The `evalrelay` commands of a code block: each line (continued by a trailing
    backslash) split as a shell would, then into simple commands at `&&`, `;` and pipes;
    a command is `evalrelay ARGS`, after any `NAME=value` assignments (or as the value of
    one, like systemd's `ExecStart=/path/to/evalrelay ARGS`)."""
    shown = []
    text = block.text.replace("\\\n", " ")
    for offset, line in enumerate(text.splitlines()):
        if not NAMES_EVALRELAY.search(line.split("#", 1)[0]):
            continue
        where = f"{block.path.relative_to(ROOT)}:{block.line + offset}"
        line = line.strip().removeprefix("$ ")
        comment = line.partition(" #")[2].strip() if " #" in line else ""
        words = shlex.split(line, comments=True)
        for simple in _split(words):
            argv = _evalrelay_args(simple)
            if argv is not None:
                shown.append(Shown(where, line, argv, comment))
    return shown


def _split(words: list[str]) -> Iterator[list[str]]:
    current: list[str] = []
    for word in words:
        if word in SEPARATORS:
            yield current
            current = []
        else:
            current.append(word)
    yield current


def _evalrelay_args(words: list[str]) -> list[str] | None:
    for index, word in enumerate(words):
        if ASSIGNMENT.match(word):
            if Path(word.split("=", 1)[1]).name == "evalrelay":
                return words[index + 1 :]
            continue
        return words[index + 1 :] if Path(word).name == "evalrelay" else None
    return None


def shown_commands(paths: list[Path] | None = None) -> list[Shown]:
    """Every `evalrelay` command line in the code blocks of the documents."""
    return [
        shown
        for path in paths or documents()
        for block in blocks(path)
        for shown in commands_in(block)
    ]


def parse(argv: list[str]) -> None:
    """Parse `evalrelay ARGV` as the command line would, without running it: the group's
    options, the command's name, then its options and arguments, with the group's check
    that no single-value option is given twice. Raises click.UsageError (or a subclass)
    for an unknown command or option, a missing value or argument, or a bad choice."""
    first = next((i for i, word in enumerate(argv) if not word.startswith("-")), len(argv))
    with click.Context(cli, info_name="evalrelay") as group:
        if first:
            cli.parse_args(group, argv[:first])
        name, command, rest = cli.resolve_command(group, argv[first:])
        if command is None or name is None:
            raise click.UsageError(f"no command in {argv}")
        with _paths_unchecked(command).make_context(f"evalrelay {name}", rest, parent=group):
            pass


def _paths_unchecked(command: click.Command) -> click.Command:
    """The command with its path arguments' existence checks off: a path in an example is
    the reader's file, which need not exist here. Every other check stays."""
    params = []
    for param in command.params:
        if isinstance(param.type, click.Path) and param.type.exists:
            param = copy.copy(param)
            param.type = copy.copy(param.type)
            param.type.exists = False
        params.append(param)
    clone = copy.copy(command)
    clone.params = params
    return clone


def option_spellings(command: click.Command) -> set[str]:
    """Every spelling of every option of a command, and `-h`/`--help`."""
    return {"-h", "--help"} | {
        spelling
        for param in command.params
        if isinstance(param, click.Option)
        for spelling in (*param.opts, *param.secondary_opts)
    }
