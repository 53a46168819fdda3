"""Reading a results file while a collector appends to it: whole lines only, from an
offset, starting over when the file is replaced."""

from __future__ import annotations

import os
from pathlib import Path

from evalrelay.bridge.live.lines import copy_whole_lines, read_span


def test_only_whole_lines_are_read_and_the_next_read_starts_after_them(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    first = read_span(path, 0, None, limit=1 << 20, tail=0)
    assert first is not None
    assert list(first.lines()) == [b'{"a":1}', b'{"b":2}']
    assert (first.start, first.end, first.more) == (0, 16, False)
    with path.open("ab") as out:
        out.write(b'3}\n{"d":4}\n')
    second = read_span(path, first.end, first.identity, limit=1 << 20, tail=0)
    assert second is not None and list(second.lines()) == [b'{"c":3}', b'{"d":4}']
    assert second.end == path.stat().st_size


def test_a_read_stops_near_its_limit_and_says_more_follows(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(b'{"n":%d}\n' % i for i in range(100)))
    seen: list[bytes] = []
    after, reads = 0, 0
    while True:
        span = read_span(path, after, None, limit=50, tail=0)
        assert span is not None
        seen += span.lines()
        after, reads = span.end, reads + 1
        if not span.more:
            break
    assert seen == [b'{"n":%d}' % i for i in range(100)]
    assert reads > 10


def test_a_line_longer_than_the_limit_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    long = b'{"answer":"' + b"x" * 5000 + b'"}'
    path.write_bytes(long + b"\n{}\n")
    span = read_span(path, 0, None, limit=100, tail=0)
    assert span is not None and next(span.lines()) == long


def test_no_offset_reads_the_tail_from_a_line_start(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(b'{"n":%03d}\n' % i for i in range(100)))  # 10 bytes a line
    span = read_span(path, None, None, limit=1 << 20, tail=35)
    assert span is not None and list(span.lines()) == [b'{"n":097}', b'{"n":098}', b'{"n":099}']
    assert span.start == 970


def test_a_replaced_shortened_or_misaligned_file_is_not_read_at_the_old_offset(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"old":1}\n{"old":2}\n')
    first = read_span(path, 0, None, limit=1 << 20, tail=0)
    assert first is not None
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b'{"new":1}\n{"new":2}\n{"new":3}\n')
    os.replace(replacement, path)  # as `retry` rewrites it
    again = read_span(path, first.end, first.identity, limit=1 << 20, tail=1 << 20)
    assert again is not None and again.identity != first.identity
    assert list(again.lines()) == [b'{"new":1}', b'{"new":2}', b'{"new":3}']
    shortened = read_span(path, 10_000, again.identity, limit=1 << 20, tail=1 << 20)
    assert shortened is not None and len(list(shortened.lines())) == 3
    inside = read_span(path, 3, again.identity, limit=1 << 20, tail=0)  # mid-line
    assert inside is not None and list(inside.lines()) == [b'{"new":2}', b'{"new":3}']


def test_no_file_is_none_and_its_copy_is_empty(tmp_path: Path) -> None:
    assert read_span(tmp_path / "none.jsonl", None, None, limit=10, tail=10) is None
    copy = tmp_path / "copy.jsonl"
    copy_whole_lines(tmp_path / "none.jsonl", copy)
    assert copy.read_bytes() == b""


def test_a_copy_holds_the_whole_lines_only(tmp_path: Path) -> None:
    source, copy = tmp_path / "c.jsonl", tmp_path / "copy.jsonl"
    lines = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * 3000) for i in range(1000))
    source.write_bytes(lines + b'{"torn":')
    copy_whole_lines(source, copy)
    assert copy.read_bytes() == lines
