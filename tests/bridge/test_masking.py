"""The secrets a process holds, found in any text: whole, in pieces, behind escapes and in
base64; and log records masked whichever logger makes them."""

from __future__ import annotations

import base64
import html
import json
import logging
import string
import time
from urllib.parse import quote

import pytest

from bridge.masking import MASK, Detector, held_secrets, mask, mask_logs

KEY = "sk-test-Zq81-xK2v9Lm4-Pw7Rt0Yb3-Nc6"


@pytest.fixture
def detector() -> Detector:
    return Detector(frozenset({KEY, "hunter2"}))


def test_the_exact_value_and_any_piece_of_eight_are_masked(detector: Detector) -> None:
    assert detector.mask(f"key {KEY} end") == f"key {MASK} end"
    assert detector.mask(f"cut: {KEY[:8]}… and …{KEY[-9:]}") == f"cut: {MASK}… and …{MASK}"
    assert detector.mask(f"{KEY[3:11]}{KEY[20:30]}") == MASK  # touching pieces: one span


def test_a_piece_shorter_than_eight_is_left(detector: Detector) -> None:
    assert detector.mask(f"only {KEY[:7]} here") == f"only {KEY[:7]} here"


def test_json_escapes_mixed_with_raw_characters(detector: Detector) -> None:
    dashes = f"Bearer {KEY}".replace("-", "\\u002d")
    assert detector.mask(f'{{"auth": "{dashes}"}}') == '{"auth": "Bearer ***"}'
    every = "".join(f"\\u{ord(c):04X}" for c in KEY)
    assert detector.mask(f"[{every}]") == f"[{MASK}]"
    twice = json.dumps(json.dumps({"k": KEY.replace("-", "\u002d")}, ensure_ascii=True))
    assert KEY[:8] not in detector.mask(twice.replace("-", "\\\\u002d"))
    assert detector.mask(f"x{KEY}".replace("-", "\\/")) != f"x{KEY}".replace("-", "\\/")


def test_url_encoding(detector: Detector) -> None:
    assert (
        detector.mask(f"?auth={quote('Bearer ' + KEY, safe='')}&x=1")
        == f"?auth=Bearer%20{MASK}&x=1"
    )
    every = "".join(f"%{ord(c):02x}" for c in KEY)
    assert detector.mask(f"?k={every}") == f"?k={MASK}"


def test_html_numeric_entities(detector: Detector) -> None:
    decimal = "".join(f"&#{ord(c)};" for c in KEY)
    assert detector.mask(f"<p>{decimal}</p>") == f"<p>{MASK}</p>"
    assert detector.mask(f"<p>{KEY.replace('-', '&#x2D;')}</p>") == f"<p>{MASK}</p>"
    assert detector.mask(html.escape("a & b")) == html.escape("a & b")


@pytest.mark.parametrize("before", ["", "u", "us", "user:", "Bearer "])
def test_base64_in_each_alignment(detector: Detector, before: str) -> None:
    encoded = base64.b64encode(f"{before}{KEY}".encode()).decode()
    head, masked, tail = detector.mask(f"Authorization: Basic {encoded}").partition(MASK)
    assert masked
    # Left: the encoding of what came before the key, and the key's edge bits and padding.
    assert len(head) <= len("Authorization: Basic ") + len(before) * 4 // 3 + 2
    assert len(tail) <= 3
    for urlsafe in (base64.urlsafe_b64encode(f"{before}{KEY}".encode()).decode(),):
        assert MASK in detector.mask(urlsafe)


def test_ordinary_text_is_left_alone(detector: Detector) -> None:
    text = (
        "The quick brown fox jumps over the lazy dog; sk-test is a prefix, 12345678, "
        '{"a": "\\u00e9t\\u00e9"} https://example.com/a%20b?x=1&y=2 &#233; dGVzdA== '
        + string.printable
    )
    assert detector.mask(text) == text


def test_a_short_secret_is_masked_only_whole() -> None:
    found = Detector(frozenset({"pw42x"}))
    assert found.mask("password pw42x, and pw42 or w42x") == f"password {MASK}, and pw42 or w42x"
    assert Detector(frozenset({"abc"})).mask("abc") == "abc"  # shorter than 4: no secret


def test_a_megabyte_is_searched_well_under_a_second(detector: Detector) -> None:
    text = ("Lorem ipsum dolor sit amet, caf\\u00e9 %20 &amp; " * 22000)[:1_000_000]
    started = time.perf_counter()
    assert detector.mask(text + KEY) == text + MASK
    assert time.perf_counter() - started < 0.5


def test_the_environment_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_PAT", "ghp_0123456789abcdef")
    monkeypatch.setenv("SERVICE_ACCESS_TOKEN", "tok-0123456789")
    monkeypatch.setenv("MY_PLAIN_SETTING", "not-a-secret-value")
    monkeypatch.setenv("SOME_FLAG_KEY", "true")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:db-pass-4711@db:5432/app")
    monkeypatch.setenv("EVALRELAY_REDIS_URL", "redis://127.0.0.1:6379/0?password=rq-pass-0815")
    held = held_secrets()
    assert {"ghp_0123456789abcdef", "tok-0123456789", "db-pass-4711", "rq-pass-0815"} <= held
    assert "not-a-secret-value" not in held
    assert "true" not in held
    assert "postgres://app:db-pass-4711@db:5432/app" not in held  # only its password


def test_a_variable_listed_in_evalrelay_secret_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VENDOR_ACCOUNT", "acct-998877665544")
    assert mask("account acct-998877665544") == "account acct-998877665544"
    monkeypatch.setenv("EVALRELAY_SECRET_VARS", "OTHER, VENDOR_ACCOUNT")
    assert mask("account acct-998877665544") == f"account {MASK}"


def test_names_passed_in_are_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VENDOR_ACCOUNT", "acct-998877665544")
    assert mask("account acct-998877665544", ["VENDOR_ACCOUNT"]) == f"account {MASK}"


def test_log_records_are_masked_whichever_logger_makes_them(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    factory = logging.getLogRecordFactory()
    try:
        mask_logs()
        # At debug level even when `evalrelay` ran in this process and quieted httpcore2.
        with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, "httpcore2.http11"):
            logging.getLogger("httpcore2.http11").debug("headers %r", [(b"x-echo", KEY.encode())])
            try:
                raise RuntimeError(f"refused {KEY.replace('-', '%2D')}")
            except RuntimeError:
                logging.getLogger("worker.x").exception("failed")
    finally:
        logging.setLogRecordFactory(factory)
    shown = caplog.text
    assert "headers [(b'x-echo', b'***')]" in shown
    assert "refused ***" in shown
    assert KEY[:8] not in shown and KEY[-8:] not in shown


def test_every_occurrence_is_masked(detector: Detector) -> None:
    text = f"{KEY} then hunter2, {KEY[:12]} and {KEY} again, hunter2"
    assert detector.mask(text) == f"{MASK} then {MASK}, {MASK} and {MASK} again, {MASK}"
    assert detector.masked({KEY: [KEY, (f"x{KEY}",)]}) == {MASK: [MASK, (f"x{MASK}",)]}
