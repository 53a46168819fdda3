"""What the commands print, with the control characters of case ids, answers and messages
shown as escapes (`\\x1b`), so a file or an agent can never move the cursor, clear the
screen, retitle the window or ring the bell of whoever reads the output.

rich leaves ESC alone (it strips only BEL, BS, VT, FF and CR), and click prints as it
gets: every command prints through `TerminalConsole` or `echo`.

Nor does rich read any of it as markup or emoji codes: a target named `m` printed after a
colon (`g1:m:`) became an emoji, and one named `[red]` would colour the line. The console
reads strings as plain text; what the commands colour, they colour with a `Text` or a
`style`, never with markup around text that came from a user.
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and C1 controls (0x9b is a CSI of its own)."""


def printable(text: str) -> str:
    """The text with each control character written as its Python escape (ESC as `\\x1b`)."""
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


WIDE = 400
"""The width of output that goes to a file or a pipe (tables are only as wide as they need)."""


class TerminalConsole(Console):
    """A rich Console whose output holds no control character but the ones rich writes
    itself (colours, cursor moves of a progress bar): every segment of text goes through
    `printable`, whether it came as a string, markup, a Text, a table cell or a log line.
    A Text built from a file's text is best made with `printable` itself: rich measures a
    Text before it is rendered."""

    def __init__(self, *args: Any, **options: Any) -> None:
        options.setdefault("markup", False)
        options.setdefault("emoji", False)
        super().__init__(*args, **options)
        # Outside a terminal rich would cut every line at 80 columns: a results path broken
        # in two, an interval cut short in a log or a CI page. There, lines are as long as
        # what they show, up to `WIDE`, unless COLUMNS says otherwise.
        if "width" not in options and not self.is_terminal and not os.environ.get("COLUMNS"):
            self.width = WIDE

    def render_str(self, text: str, **options: Any) -> Text:
        """Strings and markup are made printable before rich measures them, so a table
        column is as wide as what it shows."""
        return super().render_str(printable(text), **options)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(printable(segment.text), segment.style, segment.control)


LOG_FORMAT = "[%(asctime)s] %(levelname)-8s %(message)s"
"""A plain log line, shaped as rich's are in a terminal."""


class PrintableFormatter(logging.Formatter):
    """A log line as plain text, its control characters as escapes."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def plain_logs() -> None:
    """Log to stderr as plain lines, written straight to its file descriptor. A prefork
    worker forks its pool children while its other threads log: whatever lock such a
    thread holds at that instant stays held in the child, by a thread the child does not
    have, and the child's first log line waits for ever (one fork in five, with a thread
    logging all the time). rich's console lock and the imports it makes as it renders, and
    the buffer of `sys.stderr`, are such locks; an unbuffered file has none, and `logging`
    makes its own anew in a forked child."""
    try:
        stream: TextIO = io.TextIOWrapper(
            io.FileIO(sys.stderr.fileno(), "w", closefd=False),
            encoding="utf-8",
            errors="backslashreplace",
            write_through=True,
        )
    except (AttributeError, OSError, ValueError):  # a stderr with no descriptor of its own
        stream = sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(PrintableFormatter(LOG_FORMAT, "%X"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)


def echo(message: str, err: bool = False) -> None:
    """`click.echo` of text that may hold a case id, an answer or a message from a file."""
    click.echo(printable(message), err=err)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of plain text and (text, style) parts: the way to colour text that may hold
    a name, an id or a reason, none of it read as markup."""
    return Text.assemble(*parts)


def counted(count: int, noun: str) -> str:
    """`1 job`, `2 jobs`: a count with its noun, singular or plural (a regular plural)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
