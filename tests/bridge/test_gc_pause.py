"""The cycle collector is held off for a bulk step and on again after, however nested."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.gc_pause import gc_paused
from tests.conftest import one_turn_cases


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_off_inside_and_on_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer hold still holds
    assert gc.isenabled()


def test_it_stays_off_when_it_was_off_before() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_holds_in_two_threads_end_in_either_order() -> None:
    first_in, second_out = threading.Event(), threading.Event()

    def first() -> None:
        with gc_paused():
            first_in.set()
            second_out.wait(5)
            assert not gc.isenabled()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's hold goes on
    second_out.set()
    thread.join(5)
    assert gc.isenabled()


def test_loading_a_file_leaves_the_collector_on_even_when_it_fails(tmp_path: Path) -> None:
    (tmp_path / "evalrelay.yaml").write_text("")
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(one_turn_cases(3))
    bad.write_text("evalcases:\n  - {id: x}\n")
    assert len(load_eval_file(good).cases) == 3
    assert gc.isenabled()
    with pytest.raises(Exception, match="input_messages"):
        load_eval_file(bad)
    assert gc.isenabled()
