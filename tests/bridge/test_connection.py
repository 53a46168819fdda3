"""A Redis URL in a message shows no password, in its userinfo or its query."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis
from redis.connection import parse_url

from evalrelay.bridge.connection import (
    RideOut,
    client_for,
    configured_url,
    connect,
    shown,
    with_password,
)
from evalrelay.bridge.errors import PrerequisiteError
from tests.conftest import HoldingRelay


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://:hunter2@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        (
            "redis://127.0.0.1:6379/0?password=s3cret-pw&db=2",
            "redis://127.0.0.1:6379/0?password=***&db=2",
        ),
        (
            "rediss://u:p4ss@h/0?ssl_cert_reqs=none&token=abc",
            "rediss://u:***@h/0?ssl_cert_reqs=none&token=***",
        ),
        ("unix:///run/redis.sock?password=s3cret-pw", "unix:///run/redis.sock?password=***"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ],
)
def test_shown_masks_the_password_in_userinfo_and_query(url: str, expected: str) -> None:
    assert shown(url) == expected


def test_an_unreachable_redis_is_named_without_its_query_password() -> None:
    with pytest.raises(PrerequisiteError) as raised:
        connect("redis://127.0.0.1:1/0?password=s3cret-pw")
    assert "redis://127.0.0.1:1/0?password=***" in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_a_connection_gone_silent_is_given_up_and_the_command_sent_on_a_new_one(
    redis_url: str,
) -> None:
    """The connection a client holds stops answering, with no word (Redis moved to another
    host, a partition that does not heal): the next command waits its reply timeout, not
    for ever, and is answered on a new connection."""
    relay = HoldingRelay(redis_url, b"evalrelay-test-silence", later_pass=True)
    try:
        client = client_for(relay.url, reply_timeout=1.0)
        client.set("evalrelay-test-silent-key", "answered")
        client.get("evalrelay-test-silence")  # passed, answered; then the connection is held
        got: list[object] = []
        started = time.monotonic()
        asking = threading.Thread(
            target=lambda: got.append(client.get("evalrelay-test-silent-key"))
        )
        asking.start()
        asking.join(20)
        took = time.monotonic() - started
    finally:
        relay.close()
    assert not asking.is_alive(), "the command waited on the silent connection for ever"
    assert got == ["answered"]
    assert 1.0 <= took < 5, f"answered after {took:.1f} s"


def test_the_password_file_fills_the_urls_user_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mounted secret read by the process: the URL in the environment holds no password."""
    password = 'p@ss/w:rd#?%"\\end'
    (tmp_path / "pw").write_text(password + "\n")
    monkeypatch.setenv("EVALRELAY_REDIS_URL", "redis://evalrelay@redis:6379/0")
    monkeypatch.setenv("EVALRELAY_REDIS_PASSWORD_FILE", str(tmp_path / "pw"))
    url = configured_url()
    assert url is not None
    assert parse_url(url) == {
        "username": "evalrelay", "password": password, "host": "redis", "port": 6379, "db": 0
    }  # fmt: skip
    assert with_password("rediss://h:1/2", "x y") == "rediss://:x%20y@h:1/2"
    monkeypatch.setenv("EVALRELAY_REDIS_PASSWORD_FILE", str(tmp_path / "missing"))
    with pytest.raises(PrerequisiteError, match="EVALRELAY_REDIS_PASSWORD_FILE names"):
        configured_url()


def test_riding_out_an_outage_names_where_redis_was_without_its_password() -> None:
    said: list[str] = []
    ride_out = RideOut(said.append, client_for("redis://:s3cret-pw@127.0.0.1:1/4"))
    calls = iter([redis.ConnectionError("Error 111 connecting"), None])

    def step() -> str:
        if failure := next(calls):
            raise failure
        return "done"

    assert ride_out(step) == "done"
    assert said[0].startswith("Redis is out of reach at redis://127.0.0.1:1/4 (")
    assert "s3cret" not in " ".join(said)
