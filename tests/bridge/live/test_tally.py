"""Counting a results file Redis does not describe, reading only what was appended."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from unittest import mock

from evalrelay.bridge.live import tally as tally_module
from evalrelay.bridge.live.lines import Span, read_span
from evalrelay.bridge.live.tally import Tallies
from tests.bridge.reports.reporting import CAMPAIGN, START


def test_counts_grow_with_the_file_and_only_new_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "camp.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in CAMPAIGN[:4]))
    tallies = Tallies()
    first = tallies.of(path)
    assert first is not None and first.lines == 4
    assert dict(first.counts) == {"ok": 2, "infra_error": 1, "model_failure": 1}
    assert first.targets == {"gpt"} and first.first_started == START
    with path.open("a") as out:
        out.write("".join(r.model_dump_json() + "\n" for r in CAMPAIGN[4:]) + '{"torn":')
    reads: list[int] = []
    real = read_span

    def reading(path: Path, after: int, *rest: Any, **named: Any) -> Span | None:
        reads.append(after)
        return real(path, after, *rest, **named)

    with mock.patch.object(tally_module, "read_span", reading):
        second = tallies.of(path)
    assert reads == [first.offset]  # where the first count stopped, not 0
    assert second is not None and second.lines == 6 and second.targets == {"gpt", "claude"}
    assert dict(second.counts) == {"ok": 3, "infra_error": 1, "model_failure": 1, "cancelled": 1}


def test_a_replaced_file_is_counted_again_and_a_gone_one_is_none(tmp_path: Path) -> None:
    path = tmp_path / "camp.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in CAMPAIGN))
    tallies = Tallies()
    assert tallies.of(path).lines == 6  # type: ignore[union-attr]
    new = tmp_path / "new.jsonl"
    new.write_text(CAMPAIGN[0].model_dump_json() + "\nnot json\n")
    os.replace(new, path)
    again = tallies.of(path)
    assert again is not None and again.lines == 2 and dict(again.counts) == {"ok": 1}
    path.unlink()
    assert tallies.of(path) is None
