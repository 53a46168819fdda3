"""A fleet of test "hosts" on one machine, made of Linux network namespaces (needs root).

Network. Each fleet gets a number N and a name prefix `erfNN` (N in hex, 1-254), and:

- a "switch" namespace `erfNN-switch` holding the bridge `erfNNbr`;
- per host, a namespace `erfNN-<host>` holding `lo` and `erfNNh<i>`, one end of a veth
  pair whose other end, `erfNNs<i>`, is a port of the bridge in the switch namespace;
  the host's address is 10.213.N.(10+i)/24, with no default route and IPv6 off.

The root namespace has no interface on the test network: veths are created straight in
the switch and host namespaces. Before anything is made, a blackhole route for the whole
test range (`ip route replace blackhole 10.213.0.0/16`) is put in the root namespace, so
a stray connect from the root namespace to a test address fails at once (EINVAL) instead
of leaving by the default route. That route is left in place (it is idempotent, and
another fleet may be using it); every namespace, veth, bridge and process is removed by
`Fleet.close`, called by the `fleet` fixture's finalizer and at exit. Leftovers of a run
that crashed (its owner process, recorded in /run/evalrelay-fleet/erfNN.owner, is gone)
are swept when a new fleet starts.

Hosts. A `Host` has a name, an address and a folder of its own (under the test's
tmp_path) holding `home/` (its EVALRELAY_HOME), `work/` (the working folder of its
processes) and `logs/`. A process on a host runs as

    ip netns exec erfNN-<host> unshare --uts --mount --propagation private -- \
        sh -c 'set -e; hostname <host>; mount -t tmpfs ... <other host folder>; ...; exec "$@"'

so it has the host's name as hostname and sees an empty tmpfs where every other host's
folder is: each host sees only its own files (the test process, in the root namespace,
sees all of them). Every host must be added before any process is started, so that each
process masks every other host's folder; `add_host` refuses otherwise.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil

from evalrelay.bridge.keys import workers_key
from tests.conftest import FAST_RECOVERY, wait_for

FAMILY = "erf"
"""Every namespace and interface name of every fleet starts with this."""
TEST_RANGE = "10.213.0.0/16"
REDIS_PORT = 6379
STATE = Path("/run/evalrelay-fleet")
_OURS = re.compile(rf"^({FAMILY}[0-9a-f]{{2}})-")
_HOST_NAME = re.compile(r"^[a-z][a-z0-9-]{0,29}$")

PROBE = """
import errno, socket, sys, time
host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
started = time.monotonic()
try:
    socket.create_connection((host, port), timeout=seconds).close()
    said = "connected"
except TimeoutError:
    said = "timeout"
except OSError as exc:
    said = errno.errorcode.get(exc.errno or 0, str(exc))
print(said, round(time.monotonic() - started, 2))
"""
"""A connect attempt: prints `connected`, `timeout` or the errno's name, then seconds."""


def _run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _ip(*args: str, ns: str | None = None, check: bool = True) -> str:
    return _run(["ip", *(["-n", ns] if ns else []), *args], check).stdout


def _in_ns(ns: str, *argv: str) -> None:
    _run(["ip", "netns", "exec", ns, *argv])


def namespaces() -> list[str]:
    """Every named network namespace of the machine."""
    return [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]


def _kill_namespace(ns: str) -> None:
    """SIGKILL every process left in the namespace, then delete it (and its interfaces)."""
    if ns not in namespaces():
        return
    pids = [int(p) for p in _ip("netns", "pids", ns, check=False).split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            procs.append(psutil.Process(pid))
    psutil.wait_procs(procs, timeout=10)
    _ip("netns", "delete", ns)


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    """One fleet at a time sweeps, picks its number and records its owner."""
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _owner_alive(prefix: str) -> bool:
    try:
        pid, started = (STATE / f"{prefix}.owner").read_text().split()
        return abs(psutil.Process(int(pid)).create_time() - float(started)) < 0.01
    except (OSError, ValueError, psutil.Error):
        return False


def _sweep() -> list[str]:
    """Remove the namespaces (and their processes) of fleets whose owner is gone; call
    under the machine lock. Returns what was removed."""
    swept = []
    for ns in namespaces():
        match = _OURS.match(ns)
        if match and not _owner_alive(match[1]):
            _kill_namespace(ns)
            swept.append(ns)
    for owner in STATE.glob(f"{FAMILY}*.owner"):
        if not _owner_alive(owner.name.removesuffix(".owner")):
            owner.unlink(missing_ok=True)
    return swept


def sweep_leftovers() -> list[str]:
    """Remove what crashed runs left (namespaces, their veths, bridges and processes)."""
    with _machine_lock():
        return _sweep()


class HostProcess:
    """A long-running process on a host, in a process group of its own, logged to a file."""

    def __init__(self, host: Host, name: str, popen: subprocess.Popen[bytes], log: Path) -> None:
        self.host = host
        self.name = name
        self.popen = popen
        self.log_path = log

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        """Send a signal to the process's whole process group."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signum)

    def kill(self) -> None:
        """SIGKILL the whole process group, and wait for the process to be gone."""
        self.signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self, seconds: float = 15) -> None:
        """SIGTERM, then SIGKILL when it has not exited after `seconds`."""
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(seconds)
        except subprocess.TimeoutExpired:
            self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


class Host:
    """One network namespace with an address, a hostname and a folder of its own."""

    def __init__(self, fleet: Fleet, name: str, index: int) -> None:
        self.fleet = fleet
        self.name = name
        self.index = index
        self.namespace = f"{fleet.prefix}-{name}"
        self.interface = f"{fleet.prefix}h{index}"
        self.switch_port = f"{fleet.prefix}s{index}"
        self.ip = f"10.213.{fleet.number}.{10 + index}"
        self.folder = fleet.root / name
        self.home = self.folder / "home"
        self.work = self.folder / "work"
        self.logs = self.folder / "logs"
        self.processes: list[HostProcess] = []

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.ip})"

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """This machine's environment without EVALRELAY_*, then EVALRELAY_HOME, the Redis
        host's URL, FAST_RECOVERY, the fleet's `env` and `extra`."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("EVALRELAY_") and k != "HOSTNAME"
        }
        env |= {"PYTHONUNBUFFERED": "1", "EVALRELAY_HOME": str(self.home), **FAST_RECOVERY}
        if self.fleet.redis is not None:
            env["EVALRELAY_REDIS_URL"] = self.fleet.redis.url
        return env | self.fleet.env | (extra or {})

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` wrapped to run on this host: its namespace, hostname and files."""
        masks = "".join(
            f"mount -t tmpfs -o size=1m,mode=0755 fleet-mask {shlex.quote(str(h.folder))}; "
            for h in self.fleet.hosts.values()
            if h is not self
        )
        script = f'set -e; hostname {shlex.quote(self.name)}; {masks}exec "$@"'
        return [
            "ip", "netns", "exec", self.namespace,
            "unshare", "--uts", "--mount", "--propagation", "private", "--",
            "sh", "-c", script, "sh", *argv,
        ]  # fmt: skip

    def spawn(
        self, argv: Sequence[str], *, name: str, env: dict[str, str] | None = None
    ) -> HostProcess:
        """Start any command on this host, logging stdout and stderr to logs/<name>.log."""
        self.fleet.started = True
        log_path = self.logs / f"{name}.log"
        with log_path.open("ab") as log:
            popen = subprocess.Popen(
                self.command(argv),
                env=self.environment(env),
                cwd=self.work,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        process = HostProcess(self, name, popen, log_path)
        self.processes.append(process)
        return process

    def start(self, *args: str, name: str, env: dict[str, str] | None = None) -> HostProcess:
        """Start `python -m evalrelay ARGS` (worker, collect, watch...) on this host."""
        return self.spawn([sys.executable, "-m", "evalrelay", *args], name=name, env=env)

    def exec(
        self, *argv: str, timeout: float = 30, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run any command on this host to its end; its process group is killed on timeout."""
        self.fleet.started = True
        command = self.command(argv)
        with subprocess.Popen(
            command,
            env=self.environment(env),
            cwd=self.work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        ) as popen:
            try:
                out, err = popen.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(popen.pid, signal.SIGKILL)
                popen.communicate()
                raise
        return subprocess.CompletedProcess(command, popen.returncode, out, err)

    def run(
        self, *args: str, timeout: float = 60, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run `python -m evalrelay ARGS` (run --detach, status, resume...) to its end."""
        return self.exec(sys.executable, "-m", "evalrelay", *args, timeout=timeout, env=env)

    def probe(self, ip: str, port: int, seconds: float = 10) -> tuple[str, float]:
        """A TCP connect from this host: (`connected`, `timeout` or an errno name, seconds)."""
        done = self.exec(sys.executable, "-c", PROBE, ip, str(port), str(seconds))
        said, took = done.stdout.split()
        return said, float(took)


class RedisServer:
    """redis-server on a host of its own, on <its ip>:6379 and 127.0.0.1 inside it, with an
    append-only file (fsynced always) in <host folder>/redis, so a restart keeps the data."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.url = f"redis://{host.ip}:{REDIS_PORT}/0"
        self.data = host.folder / "redis"
        self.process: HostProcess | None = None
        self.starts = 0

    def start(self, seconds: float = 20) -> None:
        """Start the server (again, on the same data) and wait until it answers."""
        assert self.process is None or not self.process.alive(), "redis-server is running"
        self.data.mkdir(exist_ok=True)
        self.starts += 1
        self.process = self.host.spawn(
            [
                "redis-server",
                "--bind", self.host.ip, "127.0.0.1",
                "--port", str(REDIS_PORT),
                "--protected-mode", "no",
                "--dir", str(self.data),
                "--appendonly", "yes",
                "--appendfsync", "always",
                "--save", "",
            ],
            name=f"redis-server-{self.starts}",
        )  # fmt: skip
        wait_for(self.answers, seconds, f"redis-server on {self.host.name} to answer")

    def stop(self, seconds: float = 20) -> None:
        """SIGTERM (Redis finishes writing its file), SIGKILL after `seconds`."""
        if self.process is not None:
            self.process.stop(seconds)

    def kill(self) -> None:
        """SIGKILL: what the append-only file holds is what survives."""
        if self.process is not None:
            self.process.kill()

    def cli(self, *args: str) -> str:
        """`redis-cli ARGS` on the Redis host (raises when it fails); its stdout."""
        done = self.host.exec("redis-cli", "-h", "127.0.0.1", "-p", str(REDIS_PORT), *args)
        if done.returncode != 0 or done.stdout.startswith(("Could not connect", "(error)")):
            raise RuntimeError(f"redis-cli {shlex.join(args)}: {done.stdout}{done.stderr}")
        return done.stdout

    def answers(self) -> bool:
        try:
            return self.cli("PING").strip() == "PONG"
        except (RuntimeError, subprocess.TimeoutExpired):
            return False


_LIVE: list[Fleet] = []


class Fleet:
    """Hosts on a private bridge; see the module's docstring. Close it (the fixture does)."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = dict(env or {})
        """Variables added to every process of every host."""
        self.hosts: dict[str, Host] = {}
        self.redis: RedisServer | None = None
        self.started = False
        self.cut_hosts: set[str] = set()
        self.closed = False
        root.mkdir(parents=True, exist_ok=True)
        _run(["ip", "route", "replace", "blackhole", TEST_RANGE])
        with _machine_lock():
            _sweep()
            used = {int(m[1][len(FAMILY) :], 16) for n in namespaces() if (m := _OURS.match(n))}
            used |= {
                int(o.name[len(FAMILY) : len(FAMILY) + 2], 16)
                for o in STATE.glob(f"{FAMILY}*.owner")
            }
            self.number = min(set(range(1, 255)) - used)
            self.prefix = f"{FAMILY}{self.number:02x}"
            (STATE / f"{self.prefix}.owner").write_text(
                f"{os.getpid()} {psutil.Process().create_time()}"
            )
            _LIVE.append(self)
        self.subnet = f"10.213.{self.number}.0/24"
        self.switch = f"{self.prefix}-switch"
        self.bridge = f"{self.prefix}br"
        try:
            _ip("netns", "add", self.switch)
            _in_ns(self.switch, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            _in_ns(self.switch, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
            _ip("link", "add", self.bridge, "type", "bridge", "forward_delay", "0", ns=self.switch)
            _ip("link", "set", self.bridge, "up", ns=self.switch)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"Fleet({self.prefix}, {self.subnet}, {list(self.hosts)})"

    def add_host(self, name: str) -> Host:
        """A new host on the bridge. Add every host before starting any process."""
        assert _HOST_NAME.match(name), f"host name {name!r}: lowercase letters, digits, -"
        assert name not in self.hosts, f"host {name!r} exists"
        assert name != "switch", "the switch's namespace has that name"
        assert not self.started, "add every host before starting a process on any"
        assert not self.closed
        host = Host(self, name, len(self.hosts) + 1)
        for folder in (host.home, host.work, host.logs):
            folder.mkdir(parents=True)
        self.hosts[name] = host
        ns = host.namespace
        _ip("netns", "add", ns)
        _in_ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        _in_ns(ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        _ip("link", "set", "lo", "up", ns=ns)
        _ip("link", "add", host.switch_port, "type", "veth", "peer", "name", host.interface,
            "netns", ns, ns=self.switch)  # fmt: skip
        _ip("link", "set", host.switch_port, "master", self.bridge, ns=self.switch)
        _ip("link", "set", host.switch_port, "up", ns=self.switch)
        _ip("addr", "add", f"{host.ip}/24", "dev", host.interface, ns=ns)
        _ip("link", "set", host.interface, "up", ns=ns)
        return host

    def add_redis(self, name: str = "redis") -> RedisServer:
        """The Redis host (not started: call `.start()` once every host is added)."""
        assert self.redis is None, "one Redis per fleet"
        self.redis = RedisServer(self.add_host(name))
        return self.redis

    def cut(self, host: Host) -> None:
        """Partition `host` silently: its port on the switch goes down, so its frames are
        dropped, never refused. Observed (kernel 6.18, on this harness):

        - on the cut host, the veth loses carrier (NO-CARRIER, route `linkdown`) and its
          neighbour entries are flushed. A new connect to any other host fails after ~3 s
          with EHOSTUNREACH ("No route to host": ARP gets no answer), not at once and not
          with a refusal. On an established connection, send() still succeeds (the data
          stays in the socket buffer), recv() blocks until its timeout, SO_ERROR holds
          EHOSTUNREACH, and TCP keeps retransmitting; the connection is not reset.
        - on the other hosts, nothing changes at once: a connection to the cut host stays
          ESTABLISHED with no error (Redis keeps a cut worker's connections until its
          tcp-keepalive notices, 300 s by default); a new connect to the cut host fails
          after ~3 s (no ARP entry) or ~8 s (a stale one) with EHOSTUNREACH.
        - after `heal`, established connections resume (retransmits get through); nothing
          was reset by the cut itself.
        """
        _ip("link", "set", host.switch_port, "down", ns=self.switch)
        self.cut_hosts.add(host.name)

    def heal(self, host: Host) -> None:
        """Undo `cut`: the host's switch port comes up and forwards again at once."""
        _ip("link", "set", host.switch_port, "up", ns=self.switch)
        self.cut_hosts.discard(host.name)

    def wait_for_worker(self, name: str, seconds: float = 30) -> None:
        """Until a worker of that name (`worker --name NAME`; Celery makes a name without
        "@" `celery@NAME`) has reported itself to Redis."""
        names = {name, f"celery@{name}"}
        assert self.redis is not None

        def registered() -> bool:
            assert self.redis is not None
            try:
                return bool(names & set(self.redis.cli("HKEYS", workers_key()).split()))
            except (RuntimeError, subprocess.TimeoutExpired):
                return False

        wait_for(registered, seconds, f"worker {name} to register in Redis")

    def processes(self) -> list[HostProcess]:
        return [p for h in self.hosts.values() for p in h.processes]

    def close(self, seconds: float = 10) -> None:
        """Heal cut hosts, stop every process (SIGTERM, then SIGKILL after `seconds`;
        Redis last), kill whatever is left in the namespaces, and remove every veth, the
        bridge and every namespace. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        errors: list[str] = []
        for name in list(self.cut_hosts):  # so that processes there can stop cleanly
            with contextlib.suppress(RuntimeError):
                self.heal(self.hosts[name])
        server = self.redis.process if self.redis else None
        others = [p for p in self.processes() if p is not server and p.alive()]
        for process in others:
            process.signal(signal.SIGTERM)
        deadline = time.monotonic() + seconds
        for process in others:
            try:
                process.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
        if server is not None:
            server.stop(seconds)
        for step in (self._remove_network, self._release):
            try:
                step()
            except Exception as exc:
                errors.append(f"{step.__name__}: {exc}")
        if errors:
            raise RuntimeError(f"cleaning up fleet {self.prefix}: " + "; ".join(errors))

    def _remove_network(self) -> None:
        present = namespaces()
        for host in self.hosts.values():
            if self.switch in present:
                _ip("link", "delete", host.switch_port, ns=self.switch, check=False)
            _kill_namespace(host.namespace)
        if self.switch in present:
            _ip("link", "delete", self.bridge, ns=self.switch, check=False)
        _kill_namespace(self.switch)
        left = [n for n in namespaces() if n.startswith(f"{self.prefix}-")]
        if left:
            raise RuntimeError(f"namespaces left: {left}")

    def _release(self) -> None:
        with _machine_lock():
            (STATE / f"{self.prefix}.owner").unlink(missing_ok=True)
            if self in _LIVE:
                _LIVE.remove(self)


@atexit.register
def _close_all() -> None:
    for fleet in list(_LIVE):
        with contextlib.suppress(Exception):
            fleet.close(seconds=5)
