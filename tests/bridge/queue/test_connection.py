"""A Redis URL in a message shows no password, in its userinfo or its query."""

from __future__ import annotations

import pytest

from bridge.errors import PrerequisiteError
from bridge.queue.connection import connect, shown


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
