"""A Redis client across a partition (`bridge.connection`): a command sent while the link
is cut, and given up on, must not run once the link heals besides the copy sent again."""

from __future__ import annotations

import sys
import time

import pytest

from tests.conftest import wait_for
from tests.fleet.netns import Fleet

pytestmark = pytest.mark.fleet

# On the cut host: two clients with connections open before the cut, one from `client_for`
# and one from redis-py with the same timeouts and retries but its own connection class;
# once told the link is cut, each increments a counter of its own (INCR).
CLIENTS = """
import os, pathlib, threading, time
import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry
from evalrelay.bridge.connection import RECONNECT_TRIES, client_for

url = os.environ["EVALRELAY_REDIS_URL"]
ours = client_for(url, reply_timeout=2.0)
plain = redis.Redis.from_url(
    url, decode_responses=True, socket_connect_timeout=5, socket_timeout=2.0,
    retry=Retry(ExponentialBackoff(cap=2.0, base=0.1), RECONNECT_TRIES),
    retry_on_error=[redis.ConnectionError, redis.TimeoutError],
)
for client in (ours, plain):
    client.ping()
print("connected", flush=True)
while not pathlib.Path("cut").exists():  # written once the link is cut
    time.sleep(0.05)

def increment(client, key):
    print(key, client.incr(key), flush=True)

threads = [
    threading.Thread(target=increment, args=(ours, "ours")),
    threading.Thread(target=increment, args=(plain, "plain")),
]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("done", flush=True)
"""


def test_a_command_given_up_on_in_a_partition_does_not_run_again_when_it_heals(
    fleet: Fleet,
) -> None:
    """Each client's first send goes into a connection whose peer is cut off; after its
    2-s reply timeout it closes that connection and retries on new ones, which fail until
    the link heals (8 s), then succeed. redis-py's own connection, closed gracefully, keeps
    retransmitting the first copy, and Redis runs it too once the link is back: its counter
    ends at 2, which shows the harness makes the fault. `client_for`'s connection is reset
    when closed, so its first copy is dropped: its counter ends at 1, and so does its reply."""
    redis = fleet.add_redis()
    host = fleet.add_host("client")
    redis.start()
    clients = host.spawn([sys.executable, "-c", CLIENTS], name="clients")
    wait_for(lambda: "connected" in clients.log(), 30, "the clients to connect")
    fleet.cut(host)
    (host.work / "cut").touch()
    time.sleep(8)
    fleet.heal(host)
    wait_for(lambda: "done" in clients.log(), 60, "both increments")
    time.sleep(5)  # a retransmission of a first copy left behind arrives by now
    said = dict(
        line.split() for line in clients.log().splitlines() if line[:5] in ("ours ", "plain")
    )
    counted = {key: redis.cli("GET", key).strip() for key in ("ours", "plain")}
    assert counted["plain"] == "2", f"the fault did not happen: {counted}, {clients.log()}"
    assert counted["ours"] == "1", counted
    assert said["ours"] == "1", said
