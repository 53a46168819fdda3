"""The `fleet` fixture: hosts made of network namespaces (see tests/fleet/netns.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet.netns import Fleet


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fleet: tests on hosts made of network namespaces (root, iproute2)"
    )


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    """An empty fleet: the test adds its hosts (and Redis), then starts processes. Every
    namespace, veth, bridge and process is gone after the test, failed or not."""
    missing = [t for t in ("ip", "unshare", "redis-server", "redis-cli") if not shutil.which(t)]
    if os.geteuid() != 0 or missing:
        pytest.fail(
            f"fleet tests need root and {', '.join(missing) or 'network namespaces'}: "
            "run the tests as root on a machine with iproute2 and redis-server"
        )
    made = Fleet(tmp_path / "fleet")
    try:
        yield made
    finally:
        made.close()
