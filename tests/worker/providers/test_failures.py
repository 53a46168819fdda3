"""Cutting a command's standard error to its tail without cutting a key in two."""

from __future__ import annotations

import re

import pytest

from evalrelay.bridge.masking import MASK, Detector
from evalrelay.worker.providers.failures import shorten, tail

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


TOKEN_CHAR = re.compile(r"[A-Za-z0-9_\-+/=.:]")
TEXTS = [f"error: bad key {KEY} sent", f"{KEY} refused", f"key={KEY}", f"x {KEY}"]


def ends_mid_token(text: str, at: int) -> bool:
    """A cut at `at` would split a token (a key) in two."""
    return 0 < at < len(text) and all(TOKEN_CHAR.match(c) for c in text[at - 1 : at + 1])


@pytest.mark.parametrize("text", TEXTS)
def test_the_start_is_the_longest_that_ends_between_tokens_for_every_limit(text: str) -> None:
    """No piece of a key is kept, whatever the limit: only whole tokens, as many as fit."""
    for limit in range(len(text) + 1):
        kept = max(k for k in range(limit + 1) if not ends_mid_token(text, k))
        expected = text if limit >= len(text) else text[:kept] + "…"
        assert shorten(text, limit) == expected, limit


@pytest.mark.parametrize("text", TEXTS)
def test_the_tail_is_the_longest_that_starts_between_tokens_for_every_limit(text: str) -> None:
    for limit in range(len(text) + 1):
        start = min(
            k for k in range(len(text) - limit, len(text) + 1) if not ends_mid_token(text, k)
        )
        expected = text if limit >= len(text) else "…" + text[start:]
        assert tail(text, limit) == expected, limit
