"""A corpus of hostile eval files: each must be refused with a located error, quickly."""

from __future__ import annotations

import os
from pathlib import Path

ONE_CASE = (
    "evalcases:\n  - id: h\n    input_messages:\n      - {{role: user, content: {content}}}\n"
)

BOMB = "\n".join(
    ["evalcases:", "  - id: bomb", "    input_messages:", "      - role: assistant",
     "        content: x", "        tool_calls:", "          - id: c", "            name: n",
     "            arguments:", "              a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol]",
     *(f"              a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, "
       f"*a{i-1}, *a{i-1}]" for i in range(1, 9)),
     "      - {role: user, content: go}"]
)  # fmt: skip
"""Nine levels of eight aliases: 8**9 values (134 million) once expanded."""

HOSTILE: dict[str, bytes] = {
    "nul-byte.yaml": ONE_CASE.format(content="'a\0b'").encode(),
    "bell-char.yaml": ONE_CASE.format(content="hi\x07").encode(),
    "brackets.yaml": b"evalcases: " + b"[" * 20_000,
    # Well formed, so only the nesting bound stops it: libyaml's own composer would
    # recurse on this until the process crashes.
    "closed-brackets.yaml": b"evalcases: " + b"[" * 200_000 + b"]" * 200_000,
    "deep-mapping.yaml": "".join(f"{'  ' * i}k{i}:\n" for i in range(300)).encode(),
    "alias-bomb.yaml": BOMB.encode(),
    "recursive-alias.yaml": b"evalcases: &cases [*cases]\n",
    "latin1.yaml": ONE_CASE.format(content="caf\xe9").encode("latin-1"),
    "long-name.yaml": ONE_CASE.format(content=f"[{{type: file, value: {'n' * 300}.txt}}]").encode(),
    **{
        name: (ONE_CASE.format(content="hi") + f"    {extra}\n").encode()
        for name, extra in {
            "bad-regex.yaml": 'evaluators: [{type: regex, pattern: "(["}]',
            "empty-script.yaml": 'evaluators: [{type: code, script: ""}]',
            "huge-repeats.yaml": "repeats: 100000000",
            "endless-timeout.yaml": "timeout_seconds: .inf",
            "over-cap-timeout.yaml": "timeout_seconds: 1e9",
        }.items()
    },
}  # fmt: skip
"""File name → bytes. Each is refused; none may crash, hang or take a process down."""


def write_hostile(folder: Path) -> list[Path]:
    """The corpus in `folder`, plus `fifo.yaml`, a named pipe (reading it would block)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in HOSTILE.items():
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    os.mkfifo(folder / "fifo.yaml")
    return [*paths, folder / "fifo.yaml"]
