"""The details of the HTML report's rows, in parts that the page reads only when one of
their rows is opened.

A part holds the details of consecutive rows, about `PART_BYTES` of JSON. A report under
`SINGLE_FILE_BYTES` keeps its parts inline, as JSON elements the page parses on demand:
one file that can be mailed. A bigger one writes them as scripts in a folder beside the
page (`camp.html.parts/0000.js`), since a page opened from disk may load a script next to
it but may not fetch a file; each script hands its part to the page's `evalrelayPart`.
Either way the page asks for a part by its number and gets the same JSON.
"""

from __future__ import annotations

import secrets
from bisect import bisect_right

from markupsafe import Markup

from evalrelay.bridge.reports.html_cases import detail_row
from evalrelay.bridge.reports.html_folder import PartsFolder
from evalrelay.bridge.reports.html_texts import SharedTexts, script_json
from evalrelay.bridge.results.result import Result

PART_BYTES = 256 * 1024
"""About this much JSON per part: opening a row reads one part (and those whose shared
texts it uses), a few milliseconds of parsing; 100,000 results make some 400 files."""

SINGLE_FILE_BYTES = 5_000_000
"""The largest report kept as one file: 5,000 results of a short answer each (the
benchmark's 1 KB of details), fewer of agents' transcripts. It stays under 7 MB in base64,
below the 10 MB that strict mail servers accept, and opens in a browser at once."""


class Parts:
    """Details of rows, taken in the page's order, into parts inline or in files."""

    def __init__(self, folder: PartsFolder | None) -> None:
        """`folder`: where parts go once the report outgrows one file; none: the page holds
        every part, however big."""
        self.folder = folder
        self.token = secrets.token_hex(8)
        """Names this writing of the report in its part files: a page never takes the parts
        of another one (an older folder, a browser's cache)."""
        self.shared = SharedTexts()
        self.rows: list[str] = []
        self.size = 0
        self.starts: list[int] = []
        """The first row of each part."""
        self.text_starts: list[int] = []
        """The number of the first shared text each part brings."""
        self.inline: list[str] | None = []
        self.page_bytes = 0

    def add(self, result: Result, row: int) -> None:
        if not self.rows:
            self.starts.append(row)
            self.text_starts.append(self.shared.first_new)
        self.rows.append(script_json(detail_row(result, self.shared)))
        self.size += len(self.rows[-1]) + 1
        if self.size >= PART_BYTES:
            self._close()

    def count(self, index: str) -> None:
        """The page grew by this piece of index: may move the parts to files."""
        if self.inline is not None:
            self.page_bytes += len(index.encode())
            self._spill()

    def finish(self) -> None:
        if self.rows:
            self._close()

    @property
    def in_files(self) -> bool:
        return self.inline is None

    def inline_parts(self) -> list[tuple[int, Markup]]:
        return list(enumerate(Markup(part) for part in self.inline or []))

    def layout(self) -> Markup:
        """What the page needs to find a row's part, once every row has been added."""
        folder = self.folder.name if self.folder and self.in_files else None
        return Markup(script_json({"token": self.token, "folder": folder, "starts": self.starts}))

    def _close(self) -> None:
        """`[first text, texts, parts whose texts it uses, rows]`."""
        needs = {bisect_right(self.text_starts, n) - 1 for n in self.shared.take_old()}
        head = script_json([self.shared.first_new, self.shared.take_new(), sorted(needs)])
        part = f"{head[:-1]},[{','.join(self.rows)}]]"
        self.rows, self.size = [], 0
        if self.inline is None:
            self._write(len(self.starts) - 1, part)
        else:
            self.inline.append(part)
            self.page_bytes += len(part.encode())
            self._spill()

    def _spill(self) -> None:
        if self.folder is None or self.inline is None or self.page_bytes <= SINGLE_FILE_BYTES:
            return
        inline, self.inline = self.inline, None
        for number, part in enumerate(inline):
            self._write(number, part)

    def _write(self, number: int, part: str) -> None:
        assert self.folder is not None
        self.folder.write(number, f'evalrelayPart("{self.token}",{number},{part});\n')
