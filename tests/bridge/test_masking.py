"""The secrets a process holds, found in any text: whole, in pieces, behind escapes and in
base64; and log records masked whichever logger makes them."""

from __future__ import annotations

import base64
import html
import json
import logging
import os
import string
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from pydantic import BaseModel

from evalrelay.bridge.masking import (
    MASK,
    Detector,
    MaskingFilter,
    held_secrets,
    mask,
    mask_logs,
    masked,
    masked_model,
)

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
    assert detector.mask(f"only {KEY[-7:]} here") == f"only {KEY[-7:]} here"


def test_a_secret_only_escapes_reveal(detector: Detector) -> None:
    """Secrets whose raw runs between escapes are too short to be pieces: found only in
    the decoded text, and mapped back to exactly their escaped span."""
    slashed = "ab/cd/ef/gh/ij/kl"  # JSON may write each `/` as `\\/`
    found = Detector(frozenset({slashed, "café-crème-brûlée", "col1\tcol2-secret"}))
    assert found.mask('{"k": "ab\\/cd\\/ef\\/gh\\/ij\\/kl"}') == f'{{"k": "{MASK}"}}'
    escaped = json.dumps("café-crème-brûlée", ensure_ascii=True)  # "caf\\u00e9-cr..."
    assert found.mask(f"[{escaped}]") == f'["{MASK}"]'
    # Hex digits in either case, as encoders write either.
    assert found.mask("caf\\u00E9-cr\\u00e8me-br\\u00FBl\\u00E9e") == MASK
    assert found.mask("caf&#xE9;-cr&#xe8;me-br&#xFB;l&#xE9;e") == MASK
    assert found.mask("<p>col1&#9;col2-secret</p>") == f"<p>{MASK}</p>"
    last = Detector(frozenset({"key-\U0010ffff-end"}))  # the last code point there is
    assert last.mask("<p>key-&#x10FFFF;-end</p>") == f"<p>{MASK}</p>"
    # A raw secret in a text holding escapes after it: masked to its last character.
    assert detector.mask(f"{KEY}! then \\u002d") == f"{MASK}! then \\u002d"


def test_escapes_are_decoded_three_times_over_and_no_more(detector: Detector) -> None:
    """`%252D` is `-` URL-encoded twice; each decoding is one more pass over the whole text,
    so there are three at most: a text of escapes within escapes costs no more."""

    def encoded(times: int) -> str:
        return "".join(f"%{'25' * (times - 1)}{ord(c):02X}" for c in KEY)

    assert detector.mask(f"[{encoded(3)}]") == f"[{MASK}]"
    assert detector.mask(f"[{encoded(4)}]") == f"[{encoded(4)}]"


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
@pytest.mark.parametrize("after", ["", "!", " and more"])
@pytest.mark.parametrize("key", [KEY, KEY[:33]], ids=["35-bytes", "33-bytes"])
def test_base64_in_each_alignment(before: str, after: str, key: str) -> None:
    """Masked: exactly the characters whose 6 bits all come from the key's bytes. Left:
    the encoding of what comes before and after it, and the characters it shares with them."""
    detector = Detector(frozenset({key}))
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(f"{before}{key}{after}".encode()).decode()
        first = -(-8 * len(before) // 6)  # the first character after the bits before the key
        end = 8 * (len(before) + len(key)) // 6  # past the last one holding its bits only
        assert detector.mask(f"Authorization: Basic {encoded}") == (
            f"Authorization: Basic {encoded[:first]}{MASK}{encoded[end:]}"
        )


def test_base64_of_any_piece_of_eight_is_masked(detector: Detector) -> None:
    """The characters that hold 8 bytes' bits only are 10 in the worst alignment."""
    for start in range(len(KEY) - 8 + 1):
        for before in ("", "u", "us"):
            encoded = base64.b64encode(f"{before}{KEY[start : start + 8]}".encode()).decode()
            assert MASK in detector.mask(encoded), (start, before)


def test_base64_with_plus_and_slash_in_both_alphabets() -> None:
    secret = "key-~~~???~~~???"  # its base64 holds '+' and '/', '-' and '_' when URL-safe
    found = Detector(frozenset({secret}))
    for before in ("", "u", "us"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(f"{before}{secret}".encode()).decode()
            assert MASK in found.mask(encoded), (before, encoded)


def test_a_secret_of_eight_characters_is_found_in_base64_too() -> None:
    found = Detector(frozenset({"Zq81xK2v"}))
    for before in ("", "u", "us"):
        encoded = base64.b64encode(f"{before}Zq81xK2vtail".encode()).decode()
        assert MASK in found.mask(encoded), encoded


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
    encoded = base64.b64encode(b"pw42x").decode()  # too few characters to say it is the secret
    assert found.mask(f"Basic {encoded}") == f"Basic {encoded}"
    assert Detector(frozenset({"abc"})).mask("abc") == "abc"  # shorter than 4: no secret


def test_a_text_of_four_characters_can_be_a_secret() -> None:
    assert Detector(frozenset({"pw42"})).mask("pw42") == MASK


def test_a_megabyte_is_searched_well_under_a_second(detector: Detector) -> None:
    text = ("Lorem ipsum dolor sit amet, caf\\u00e9 %20 &amp; " * 22000)[:1_000_000]
    started = time.process_time()  # CPU time: the wall clock of a shared machine is not its own
    assert detector.mask(text + KEY) == text + MASK
    assert time.process_time() - started < 0.5


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


def test_a_secret_changed_or_removed_in_the_environment_is_seen_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process's secrets are cached by the environment's content, not read once."""
    monkeypatch.setenv("ROTATED_API_KEY", "sk-first-0123456789")
    assert "sk-first-0123456789" in held_secrets()
    monkeypatch.setenv("ROTATED_API_KEY", "sk-second-0123456789")
    held = held_secrets()
    assert "sk-second-0123456789" in held and "sk-first-0123456789" not in held
    monkeypatch.delenv("ROTATED_API_KEY")
    assert "sk-second-0123456789" not in held_secrets()


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


def test_which_values_of_secret_named_variables_are_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Four characters and more; not a yes/no word; not the path of a file that exists
    (a credentials file's path would hide every path in a log), relative or not."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "creds.json").write_text("{}")
    (tmp_path / "hunter22").write_text("")  # a secret that happens to name a file here
    (tmp_path / ".hunter23").write_text("")
    values = {
        "A_TOKEN": "ab12",
        "B_TOKEN": "ab1",
        "C_TOKEN": "false",
        "D_TOKEN": "hunter22",
        "E_TOKEN": ".hunter23",
        "F_TOKEN": "/not/a/file/Zq81xK2v",
        "G_CREDENTIALS": str(tmp_path / "creds.json"),
        "H_CREDENTIALS": "./creds.json",
        "I_CREDENTIALS": "~/" + os.path.relpath(tmp_path / "creds.json", Path.home()),
    }
    assert held_secrets(environ=values) == {
        "ab12", "hunter22", ".hunter23", "/not/a/file/Zq81xK2v"
    }  # fmt: skip


def test_only_the_secret_parts_of_a_url_are_secrets() -> None:
    held = held_secrets(
        environ={
            "SERVICE_URL": "https://api.example.com/v1?region=eu-west-1&api_key=ak-55667788",
            "BROKEN_URL": "http://[::1/x?password=never-read",  # urlsplit refuses it
            "DOCS_PAGE": "C:/docs/page?token=placeholder-text",  # a path: no `://`
        }
    )
    assert held == {"ak-55667788"}


def test_masked_goes_through_nested_values_and_keeps_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    value = {"text": f"key {KEY}", "n": 3, "ok": True, "none": None, "list": [KEY, 1.5]}
    assert masked(value) == {
        "text": f"key {MASK}", "n": 3, "ok": True, "none": None, "list": [MASK, 1.5]
    }  # fmt: skip
    assert Detector(frozenset()).masked(value) == value  # nothing to hide: as it was


class Answer(BaseModel):
    text: str
    tokens: int


def test_a_model_is_masked_as_a_copy_or_passed_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALRELAY_SECRET_VARS", raising=False)
    for name, value in list(os.environ.items()):
        if held_secrets(environ={name: value}):
            monkeypatch.delenv(name)
    assert held_secrets() == frozenset()
    plain = Answer(text=f"said {KEY}", tokens=7)
    assert masked_model(plain) is plain  # no secret held: nothing to copy
    monkeypatch.setenv("VENDOR_ACCOUNT", KEY)
    copy = masked_model(plain, ["VENDOR_ACCOUNT"])
    assert copy == Answer(text=f"said {MASK}", tokens=7)
    assert plain.text == f"said {KEY}"


def test_log_records_with_a_bad_format_or_a_stack_are_masked_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    factory = logging.getLogRecordFactory()
    try:
        mask_logs()
        make = logging.getLogRecordFactory()
        bad = make("x", logging.WARNING, "f.py", 1, "got %d", (KEY,), None)
        assert bad.getMessage() == f"'got %d' ('{MASK}',)"
        stack = f'Stack (most recent call last):\n  File "f.py", line 1\n    call("{KEY}")'
        with_stack = make("x", logging.WARNING, "f.py", 1, "m", (), None, sinfo=stack)
        assert with_stack.stack_info == stack.replace(KEY, MASK)
    finally:
        logging.setLogRecordFactory(factory)


def test_mask_logs_again_adds_names_and_wraps_the_first_factory_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VENDOR_ONE", "acct-1111222233")
    monkeypatch.setenv("VENDOR_TWO", "acct-4444555566")
    factory = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)  # as a process starts, whatever ran before
    try:
        mask_logs(["VENDOR_ONE"])
        mask_logs(["VENDOR_TWO"])
        made = logging.getLogRecordFactory()
        assert made.unmasked is logging.LogRecord  # type: ignore[attr-defined]
        record = made(
            "x", logging.INFO, "f.py", 1, "%s %s", ("acct-1111222233", "acct-4444555566"), None
        )
        assert record.getMessage() == f"{MASK} {MASK}"
    finally:
        logging.setLogRecordFactory(factory)


def test_the_masking_filter_keeps_every_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a handler's filter it masks the record, and lets it through."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    record = logging.LogRecord("x", logging.INFO, "f.py", 1, "key %s", (KEY,), None)
    assert MaskingFilter().filter(record) is True
    assert record.getMessage() == f"key {MASK}"


@pytest.mark.parametrize(
    "copy",
    [
        KEY[::-1],
        KEY.upper(),
        KEY.lower(),
        " ".join(KEY),
        "\u200b".join(KEY),
        "-".join(KEY[13:28]),
        KEY.encode().hex(),
        KEY.encode().hex().upper(),
        ":".join(f"{b:02x}" for b in KEY.encode()),
        " ".join(KEY[::-1].upper()),
    ],
    ids=[
        "reversed", "upper", "lower", "spaced", "zero-width", "dashed piece", "hex", "HEX",
        "hex with colons", "reversed upper spaced",
    ],
)  # fmt: skip
def test_a_reversed_hex_recased_or_split_copy_is_masked(detector: Detector, copy: str) -> None:
    """How the watcher's keys left through a template: reversed, so the plain search
    missed them. Each copy is masked where it stands, the words around it kept."""
    masked_text = detector.mask(f"before {copy} after")
    assert masked_text.startswith("before ") and masked_text.endswith(" after"), masked_text
    assert MASK in masked_text
    left = masked_text.removeprefix("before ").removesuffix(" after").replace(MASK, "")
    assert len(left.replace(" ", "").replace("\u200b", "")) < 8, masked_text


def test_the_folded_search_leaves_ordinary_text_alone(detector: Detector) -> None:
    text = "Hunter 2 went home. The KEY-to-success: test it, ship it; ZQ? no."
    assert detector.mask(text) == text
