"""Where a key of a TOML file is written: its line and column, for errors.

`tomllib` gives values without places. The places come from the text itself: table
headers (`[a.b]`, `[[steps]]`, each array entry numbered) and `key =` lines, which is
how task.toml files are written. A key written some other way (inside an inline table)
is placed at the nearest enclosing key that was found.
"""

from __future__ import annotations

import re

Loc = tuple[str | int, ...]

_ARRAY_HEADER = re.compile(r"^(\s*)\[\[\s*([^\]]+?)\s*\]\]")
_TABLE_HEADER = re.compile(r"^(\s*)\[\s*([^\]]+?)\s*\]")
_KEY = re.compile(
    r"""^(\s*)((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
)


def _parts(dotted: str) -> list[str]:
    return [
        p.strip().strip("\"'") for p in re.split(r"\.(?=(?:[^\"']|\"[^\"]*\"|'[^']*')*$)", dotted)
    ]


class Places:
    """The line and column (both from 1) of each key and table of one TOML text."""

    def __init__(self, text: str) -> None:
        self.at: dict[Loc, tuple[int, int]] = {}
        counts: dict[Loc, int] = {}
        current: Loc = ()
        for number, line in enumerate(text.splitlines(), start=1):
            if match := _ARRAY_HEADER.match(line):
                array = self._resolved(_parts(match.group(2)), counts)
                index = counts.get(array, -1) + 1
                counts[array] = index
                current = (*array, index)
                self.at.setdefault(array, (number, len(match.group(1)) + 1))
                self.at[current] = (number, len(match.group(1)) + 1)
            elif match := _TABLE_HEADER.match(line):
                current = self._resolved(_parts(match.group(2)), counts)
                self.at.setdefault(current, (number, len(match.group(1)) + 1))
            elif match := _KEY.match(line):
                key = (*current, *_parts(match.group(2)))
                self.at.setdefault(key, (number, len(match.group(1)) + 1))

    @staticmethod
    def _resolved(parts: list[str], counts: dict[Loc, int]) -> Loc:
        """A header's path, each array on the way at its latest entry (`[steps.agent]`
        after the second `[[steps]]` is `steps, 1, agent`)."""
        path: Loc = ()
        for i, part in enumerate(parts):
            path = (*path, part)
            if path in counts and i < len(parts) - 1:
                path = (*path, counts[path])
        return path

    def written(self, loc: Loc) -> Loc:
        """`loc` less what pydantic adds past the key written (a union's member names)."""
        for end in range(len(loc), 0, -1):
            if loc[:end] in self.at:
                return loc[:end]
        return loc

    def of(self, loc: Loc) -> tuple[int, int]:
        """The place of `loc`, else of its nearest enclosing key found; 1:1 for none."""
        for end in range(len(loc), 0, -1):
            if loc[:end] in self.at:
                return self.at[loc[:end]]
        return (1, 1)
