"""Cutting a command's standard error to its tail without cutting a key in two."""

from __future__ import annotations

from bridge.masking import MASK, Detector
from worker.providers.failures import shorten, tail

KEY = "sk-test-Zq81xK2v9Lm4Pw7R"


def test_the_tail_starts_after_a_key_it_would_cut() -> None:
    stderr = f"error: bad key {KEY} sent\n"
    cut = tail(stderr, len(" sent") + 5)  # the limit falls inside the key
    assert cut == "… sent"
    assert tail(stderr, 100) == stderr.strip()
    # Cut mid-key, the kept piece would be too short to be masked (under 8 characters):
    assert Detector(frozenset({KEY})).mask(KEY[-5:]) == KEY[-5:] != MASK


def test_the_start_ends_before_a_key_it_would_cut() -> None:
    assert shorten(f"error: {KEY} refused", len("error: ") + 5) == "error: …"
    assert shorten("short", 100) == "short"
