"""The collector's set of written job ids: a set's answers, in 16 bytes an id."""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrelay.bridge.contract.job import job_id
from evalrelay.bridge.results import job_ids as module
from evalrelay.bridge.results.job_ids import JobIds

HEX_IDS = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)
ANY_IDS = st.one_of(HEX_IDS, st.text(max_size=40))


@given(added=st.lists(ANY_IDS, max_size=200), asked=st.lists(ANY_IDS, max_size=50))
def test_it_answers_as_a_set_of_the_same_ids(added: list[str], asked: list[str]) -> None:
    """Across merges (a few recent ids at a time here), whatever the ids' shape: upper
    case hexadecimal, or not 32 digits, is kept as written."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "RECENT", 4)
        ids, expected = JobIds(), set()
        for one in added:
            ids.add(one)
            expected.add(one)
        assert len(ids) == len(expected)
        assert sorted(ids) == sorted(expected)
        for one in [*asked, *added]:
            assert (one in ids) == (one in expected)


def test_the_ids_of_real_jobs_are_kept_packed() -> None:
    ids = JobIds(job_id("camp", "data", f"c{i}", "mock", 0) for i in range(1000))
    assert len(ids) == 1000
    assert job_id("camp", "data", "c999", "mock", 0) in ids
    assert job_id("camp", "data", "c1000", "mock", 0) not in ids
    assert job_id("camp", "data", "c1", "mock", 0).upper() not in ids


def test_each_id_takes_about_16_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a collector keeps for a campaign grows by 16 bytes an id (the sorted buffer),
    and by as much again for a moment while the recent ids are merged into it; the ids
    kept apart are at most `RECENT` (a Python set of the strings took 120 bytes an id)."""
    monkeypatch.setattr(module, "RECENT", 128)  # fewer apart: the buffer's share shows
    count = 10_000
    ids = (hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(count))
    tracemalloc.start()
    try:
        kept = JobIds(ids)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    apart = module.RECENT * 120  # the set of recent ids, at its fullest
    assert held < 18 * count + apart, f"{held / count:.0f} bytes an id"
    assert peak < 2 * 18 * count + apart, f"{peak / count:.0f} bytes an id at the peak"
