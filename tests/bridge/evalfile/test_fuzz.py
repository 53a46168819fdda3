"""Fuzzing the loader: whatever bytes an eval file holds, loading it either succeeds or
raises `InvalidFileError` with located diagnostics; never another exception, never a hang."""

from __future__ import annotations

import os
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalrelay.bridge.errors import InvalidFileError
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.evalfile.project import Project

VALID = (
    "evalcases:\n"
    "  - id: a\n"
    "    input_messages:\n"
    "      - {role: system, content: Be brief.}\n"
    "      - role: user\n"
    "        content: [{type: text, value: hi}, {type: file, value: note.txt}]\n"
    "    evaluators: [{type: regex, pattern: 'h.'}]\n"
    "    timeout_seconds: 30\n"
)
"""A good file that the mutations start from, so they reach past the YAML parser."""

PIECES = (
    ["[", "]", "{", "}", ":", "- ", "&a ", "*a", "<<: *a", "!!python/object ", "\t", "\0",
     "\x07", "'", '"', "\\", "\n  ", "id: ", "role: ", "content: ", "type: file",
     "value: ../../etc/passwd", "value: /", "timeout_seconds: .nan", "repeats: -1", "é", "\ufeff"]
)  # fmt: skip
YAML_PIECES = st.sampled_from(PIECES)


def mutations(count: int, seed: int) -> list[bytes]:
    """`count` distinct files from a seed, a quarter of them good (the valid file under
    another case id), the rest mutated the way `mutated` does it: a fixed corpus for tests
    that drive whole processes (the watcher) rather than a call."""
    rng = random.Random(seed)
    found: dict[bytes, None] = {}
    while len(found) < count:
        text = VALID.replace("id: a", f"id: good-{len(found)}")
        if rng.random() < 0.25:
            found[text.encode()] = None
            continue
        for _ in range(rng.randint(1, 6)):
            at, cut = rng.randint(0, len(text)), rng.randint(0, 8)
            text = text[:at] + rng.choice(PIECES) + text[at + cut :]
        raw = text.encode("utf-8", errors="surrogatepass")
        found[raw if rng.random() < 0.7 else raw[: rng.randint(0, len(raw))]] = None
    return list(found)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    text = VALID
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 8))
        piece = draw(st.one_of(YAML_PIECES, st.text(max_size=6)))
        text = text[:at] + piece + text[at + cut :]
    raw = text.encode("utf-8", errors="surrogatepass")
    return draw(st.sampled_from([raw, raw[: draw(st.integers(0, len(raw)))]]))


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")),
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.one_of(mutated(), st.binary(max_size=400)))
def test_any_bytes_load_or_fail_with_located_errors(tmp_path: Path, data: bytes) -> None:
    root = tmp_path / "project"
    (root / "evals").mkdir(parents=True, exist_ok=True)
    (root / "evalrelay.yaml").write_text("max_file_bytes: 1000\n")
    (root / "evals" / "note.txt").write_text("a note\n")
    path = root / "evals" / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_eval_file(path, Project(root))
    except InvalidFileError as exc:
        assert exc.diagnostics
        for problem in exc.diagnostics:
            assert problem.path == path and problem.line >= 1 and problem.column >= 1
            assert problem.message
