"""Shared fixtures: projects on disk, a real Redis, real worker processes.

Tests that need Redis use the machine's server on 127.0.0.1:6379 (database 13, flushed
before and after each test) and fail loudly when it is not there; run in parallel
(`pytest -n 3`), each pytest-xdist worker starts a redis-server of its own instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from evalrelay.bridge.connection import connect
from evalrelay.bridge.contract.job import Job, TargetRef
from evalrelay.bridge.keys import epoch_key, workers_key
from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.targets.interpolation import OneTarget
from evalrelay.bridge.targets.settings import QUEUE_FOR_KIND

WriteFiles = Callable[[dict[str, str]], Path]

TEST_REDIS_URL = os.environ.get("EVALRELAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")


@pytest.fixture
def project(tmp_path: Path) -> WriteFiles:
    """A project root (it holds evalrelay.yaml) into which a test writes the files it needs."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "evalrelay.yaml").write_text('guideline_patterns: ["**/*.instructions.md"]\n')

    def write(files: dict[str, str]) -> Path:
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        return root

    return write


HOMES = Path.home() / ".cache" / "evalrelay-test-homes"
"""Where the tests' EVALRELAY_HOMEs go: not under the temporary folder, where Codex refuses
to set up the helper its own sandbox needs (bubblewrap present), as an agent home there
would be."""


@pytest.fixture(autouse=True)
def private_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own EVALRELAY_HOME and no cluster URL unless it sets one."""
    HOMES.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(dir=HOMES)) / "home"
    monkeypatch.setenv("EVALRELAY_HOME", str(home))
    monkeypatch.delenv("EVALRELAY_REDIS_URL", raising=False)
    yield home
    shutil.rmtree(home.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def session_redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Redis this test process uses: the machine's (database 13) in a plain run; under
    pytest-xdist (`-n`), a redis-server of each worker's own, since two workers flushing
    one database, or seeing each other's pub/sub, would share state."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield TEST_REDIS_URL
        return
    server = PrivateRedis(tmp_path_factory.mktemp("redis"), keep=False, port=free_port())
    server.start()
    yield server.url
    server.stop()


@pytest.fixture
def redis_url(session_redis_url: str) -> Iterator[str]:
    """The test database, empty before and after the test."""
    client = connect(session_redis_url)  # raises, naming the URL, when Redis is down
    client.flushdb()
    yield session_redis_url
    client.flushdb()


@pytest.fixture
def client(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url, decode_responses=True)


class Processes:
    """Real evalrelay processes started by a test, each in its own process group."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.started: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        *args: str,
        name: str,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "evalrelay", *args],
            env={**self.env, **(extra_env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.started.append(process)
        return process

    def worker(
        self, client: redis.Redis, name: str, *args: str, extra_env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """A worker process, returned once it has reported itself ready."""
        process = self.start("worker", "--name", name, *args, name=name, extra_env=extra_env)
        wait_for(
            lambda: any(n == name for n in client.hkeys(workers_key())),
            30,
            f"worker {name} to start (log: {self.logs / name}.log)",
        )
        return process

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        """Ask each process to stop (so it stops what it started), then make sure."""
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.started:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


@pytest.fixture
def processes(redis_url: str, tmp_path: Path, private_home: Path) -> Iterator[Processes]:
    running = processes_on(redis_url, private_home, tmp_path / "logs")
    yield running
    running.stop_all()


def processes_on(
    url: str, home: Path, logs: Path, extra_env: dict[str, str] | None = None
) -> Processes:
    """Processes on the Redis at `url`, with their own EVALRELAY_HOME, logs in `logs`."""
    env = {
        **os.environ,
        "EVALRELAY_REDIS_URL": url,
        "EVALRELAY_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    logs.mkdir()
    return Processes(env, logs)


FAST_RECOVERY = {
    "EVALRELAY_ALIVE_SECONDS": "5",
    "EVALRELAY_LEASE_SECONDS": "3",
    "EVALRELAY_REAP_SECONDS": "0.5",
}
"""Workers that find a dead worker's jobs (and lost ones) within seconds, for tests."""


def embedded_env(private_home: Path, *unset: str) -> dict[str, str]:
    """This process's environment for a command on the embedded default: no cluster URL,
    the test's own EVALRELAY_HOME, and without the variables named in `unset`."""
    drop = {"EVALRELAY_REDIS_URL", *unset}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return env | {"EVALRELAY_HOME": str(private_home)}


def free_port(reserved: bool = True) -> int:
    """A TCP port nothing listens on, kept for a server of the test's own to bind.

    The port is left in TIME_WAIT by a connection closed here: for a minute the kernel
    hands it to no one asking for any free port (another test's `free_port` included),
    while a server that binds it by number with SO_REUSEADDR, as redis-server, uvicorn
    and Node do, may. A port merely found free could be taken by another test's server
    first, which would then answer in place of this one's. Not `reserved`: for a server
    that first tries the port without SO_REUSEADDR (`harbor view`), which TIME_WAIT
    refuses; `loopback_server` then still tells its server from another's."""
    if not reserved:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])
    with socket.socket() as listener:
        # The connection's TIME_WAIT inherits this: it then yields only to SO_REUSEADDR.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = int(listener.getsockname()[1])
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = listener.accept()
            accepted.close()  # the side that closes first holds the TIME_WAIT
    return port


def listening(pid: int) -> list[tuple[str, int]]:
    """The TCP addresses process `pid`, or a process it started, listens on."""
    try:
        root = psutil.Process(pid)
        family = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    found = []
    for member in family:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            found += [
                (connection.laddr.ip, connection.laddr.port)
                for connection in member.net_connections(kind="inet")
                if connection.status == psutil.CONN_LISTEN
            ]
    return found


def listens_on(pid: int, port: int) -> bool:
    """Whether process `pid`, or one it started, listens on TCP `port`: what answers on a
    port may be another test's server (then this one's bind failed)."""
    return any(found == port for _, found in listening(pid))


def unretried_client(url: str) -> redis.Redis:
    """A client that tries each command once: a Redis away for a moment is already longer
    than its retries, so what rides out an outage is the code under test."""
    return redis.Redis.from_url(url, decode_responses=True, retry=Retry(NoBackoff(), 0))


class HoldingRelay:
    """A TCP relay to Redis that stops passing commands on once it has passed the first
    that holds `marker`: a client is left waiting for a reply halfway through what it was
    doing, at the point the test chose, to be killed there (replies to what was passed
    still come back). The test, not a real process's timing, decides where it is cut.

    With `later_pass`, connections made after that pass everything: the ones held went
    silent with no word, as to a Redis moved to another host, and the new ones reach it.
    With `replies_lost`, a held connection passes no reply either, not even the marker's:
    Redis ran the command, and the client never hears so."""

    def __init__(
        self,
        redis_url: str,
        marker: bytes,
        later_pass: bool = False,
        replies_lost: bool = False,
    ) -> None:
        parsed = urllib.parse.urlsplit(redis_url)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 6379)
        self.marker = marker
        self.later_pass = later_pass
        self.replies_lost = replies_lost
        self.held = threading.Event()
        self._closing = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        port = self._server.getsockname()[1]
        self.url = parsed._replace(netloc=f"127.0.0.1:{port}").geturl()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closing.set()
        self._server.close()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            held = not (self.later_pass and self.held.is_set())
            threading.Thread(target=self._pass, args=(client, server, held), daemon=True).start()
            replies = held and self.replies_lost
            threading.Thread(target=self._pass, args=(server, client, replies), daemon=True).start()

    def _pass(self, source: socket.socket, sink: socket.socket, held: bool) -> None:
        """Pass `source` on to `sink` until either closes; a `held` direction stops once
        the marker has passed (set before the marker goes on, so its reply is held too)."""
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if held and self.held.is_set():
                    self._closing.wait()  # never passed on
                    break
                if held and self.marker in data:
                    self.held.set()
                sink.sendall(data)
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.close()


PROBE_SECONDS = 10.0


@contextlib.contextmanager
def loopback_server(argv: list[str], ready_url: str, log: Path, seconds: float) -> Iterator[None]:
    """A server process of the test's own, until `ready_url` answers; stopped afterwards.
    Its output goes to `log`, quoted when it does not start. Each probe waits up to
    `PROBE_SECONDS` for the answer: a server that answers after a delay of its own (the
    slow benchmark server's 2 s) is not taken for one that is not up."""
    with log.open("wb") as out:
        server = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + seconds
        while True:
            try:
                urllib.request.urlopen(ready_url, timeout=PROBE_SECONDS).close()
                if listens_on(server.pid, urllib.parse.urlsplit(ready_url).port or 80):
                    break
                raise ConnectionRefusedError  # another's server answered: wait for ours
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    said = log.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{argv[0]} did not start: {said}") from None
                time.sleep(0.1)
        yield
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def one_turn_cases(count: int, case_id: str = "c{i}", question: str = "q{i}") -> str:
    """An eval file of `count` cases of one user turn each; `{i}` is the case's number."""
    lines = [
        f"  - {{id: '{case_id.format(i=i)}', input_messages: "
        f"[{{role: user, content: '{question.format(i=i)}'}}]}}"
        for i in range(count)
    ]
    return "\n".join(["evalcases:", *lines]) + "\n"


def target_ref(settings: dict[str, object]) -> TargetRef:
    """A target as a job carries it, from its settings as targets.yaml would hold them."""
    kind = OneTarget.model_validate({"target": settings}).target.provider
    return TargetRef(
        name=str(settings["name"]), kind=kind, queue=QUEUE_FOR_KIND[kind], settings=settings
    )


def direct_job(settings: dict[str, object] | None = None, **update: object) -> Job:
    """A job made by hand, no eval file, to call `execute` or a grader with (default: mock)."""
    job = Job(
        campaign_id="c",
        job_id="j",
        case_id="case",
        dataset="d",
        target=target_ref(settings or {"name": "t", "provider": "mock"}),
        request=PromptRequest(question="q"),
        timeout_seconds=10,
    )
    return job.model_copy(update=update)


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        time.sleep(0.1)


def running_with(marker: str) -> list[int]:
    """Processes of this machine whose command line holds `marker`: orphans a test left."""
    return [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if marker in " ".join(p.info["cmdline"] or [])
    ]


def read_jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


STANDINS = Path(__file__).parent / "worker" / "standins"


class FakeVSCode:
    """The stand-in `code` (tests/worker/standins/code), first on PATH, and what it saw."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.env = {
            "PATH": f"{STANDINS}{os.pathsep}{os.environ['PATH']}",
            "FAKE_VSCODE_STATE": str(state),
        }

    def log(self, event: str | None = None) -> list[dict[str, object]]:
        path = self.state / "log.jsonl"
        entries = read_jsonl(path) if path.exists() else []
        return [e for e in entries if event is None or e["event"] == event]

    def stop_agents(self) -> None:
        pids = self.state / "agents.pids"
        for line in pids.read_text().split() if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(line), signal.SIGKILL)


@pytest.fixture
def fake_vscode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeVSCode]:
    fake = FakeVSCode(tmp_path / "fake-vscode")
    for name, value in fake.env.items():
        monkeypatch.setenv(name, value)
    yield fake
    fake.stop_agents()


@pytest.fixture(scope="session")
def agents_bin() -> Path:
    """The real Codex CLI, Copilot CLI, Claude Code and aimock, installed from npm once."""
    from tests.worker.providers.real_agents import agents_bin as install

    return install()


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """The Docker image `runtime: sandbox` tests run agents in, built once (a running
    engine too, started when none answers)."""
    from tests.worker.agents.sandbox_images import sandbox_image as build

    return build()


@pytest.fixture
def aimock_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """The key agents send to aimock, in the environment as the targets' `${AIMOCK_KEY}`."""
    from tests.worker.providers.real_agents import AIMOCK_KEY

    monkeypatch.setenv("AIMOCK_KEY", AIMOCK_KEY)
    return AIMOCK_KEY


class PrivateRedis:
    """A redis-server of the test's own, on a Unix socket (or a TCP port if given), with an
    append-only file unless told to keep nothing (then a restart loses every key)."""

    def __init__(self, folder: Path, keep: bool = True, port: int = 0) -> None:
        self.folder = folder
        self.keep = keep
        self.port = port
        self.socket = folder / "redis.sock"
        self.url = f"redis://127.0.0.1:{port}/0" if port else f"unix://{self.socket}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server must be installed for this test"
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--unixsocket",
                str(self.socket),
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes" if self.keep else "no",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self.answers, 20, "the private redis-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(20)

    def answers(self) -> bool:
        """This server answers (on a TCP port, not another that took the port first)."""
        assert self.process is not None
        if self.port and not listens_on(self.process.pid, self.port):
            return False
        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=1).ping())
        except (redis.RedisError, OSError):
            return False


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def forgetful_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A redis-server of the test's own that keeps nothing, as one without persistence: a
    restart (`restart_empty`) loses every key."""
    server = PrivateRedis(tmp_path / "forgetful-redis", keep=False)
    server.folder.mkdir()
    server.start()
    yield server
    server.stop()


def restart_empty(server: PrivateRedis) -> None:
    """Stop and start `server`, which keeps nothing: its mark changes (a command that
    noticed first may have made a new one, and rebuilt its campaign already)."""
    client = redis.Redis.from_url(server.url, decode_responses=True)
    before = client.get(epoch_key())
    assert before is not None
    server.stop()
    server.start()
    assert client.get(epoch_key()) != before


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`-n N`: each test to a free worker, a costly module fixture's tests to one
    (`tests/scheduling.py`); any other `--dist` as asked."""
    if config.getvalue("dist") != "load":
        return None
    from tests.scheduling import SharedFixtureScheduling

    return SharedFixtureScheduling(config, log)
