"""Redis's users as the compose stack and the Kubernetes base make them
(`docker/redis-users.acl`, its hashes put in place as `docker/redis-entrypoint.sh` does),
on a real redis-server with protected mode on: the `evalrelay` user is refused CONFIG,
FLUSHALL, KEYS and MODULE, a client that does not name a user gets nothing, `admin` may do
anything; and a worker, `run --detach` and a collector do all they do as `evalrelay`, the
password read from a file by each process (`EVALRELAY_REDIS_PASSWORD_FILE`), in no
environment."""

from __future__ import annotations

import hashlib
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import redis

from tests.bridge.cli.test_run import evalrelay
from tests.conftest import free_port, one_turn_cases, processes_on, read_jsonl, wait_for
from tests.deploy.service_images import ROOT

ACL = ROOT / "docker" / "redis-users.acl"


class AclRedis(NamedTuple):
    port: int
    worker_password: str
    admin_password: str
    ca: Path | None = None
    """The CA of a TLS-only server."""

    def client(self, user: str | None, password: str) -> redis.Redis:
        tls = {"ssl": True, "ssl_ca_certs": str(self.ca)} if self.ca else {}
        return redis.Redis(
            "127.0.0.1", self.port, username=user, password=password, decode_responses=True, **tls
        )

    def url(self) -> str:
        """The worker user's URL, with no password in it."""
        if self.ca is None:
            return f"redis://evalrelay@127.0.0.1:{self.port}/0"
        query = f"ssl_cert_reqs=required&ssl_ca_certs={self.ca}"
        return f"rediss://evalrelay@127.0.0.1:{self.port}/0?{query}"


def users_config(worker_password: str, admin_password: str) -> str:
    """The ACL file with each password's SHA-256 in place, as the entry point writes it."""
    text = ACL.read_text()
    for placeholder, password in (("@EVALRELAY_SHA256@", worker_password),
                                  ("@ADMIN_SHA256@", admin_password)):  # fmt: skip
        text = text.replace(placeholder, hashlib.sha256(password.encode()).hexdigest())
    return "\n".join(line for line in text.splitlines() if not line.startswith("#")) + "\n"


@pytest.fixture
def acl_redis(tmp_path: Path) -> Iterator[AclRedis]:
    yield from started(tmp_path, tls=False)


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[AclRedis]:
    yield from started(tmp_path, tls=True)


def started(folder: Path, *, tls: bool) -> Iterator[AclRedis]:
    """A redis-server of this test's own, with the ACL; with `tls`, TLS only (no plain
    port), its certificate signed by a CA made here (`folder/ca.pem`)."""
    port = free_port()
    worker, admin = "w@:/" + secrets.token_hex(12), "a#?%" + secrets.token_hex(12)
    listen = f"port {port}\n"
    if tls:
        certificates(folder)
        listen = (
            f"port 0\ntls-port {port}\ntls-cert-file {folder / 'server.pem'}\n"
            f"tls-key-file {folder / 'server.key'}\ntls-ca-cert-file {folder / 'ca.pem'}\n"
            "tls-auth-clients no\n"
        )
    config = folder / "redis.conf"
    config.write_text(
        f'{listen}bind 127.0.0.1\nprotected-mode yes\nsave ""\nappendonly no\n'
        f"dir {folder}\n" + users_config(worker, admin)
    )
    server = subprocess.Popen(["redis-server", str(config)], stdout=subprocess.DEVNULL)
    running = AclRedis(port, worker, admin, folder / "ca.pem" if tls else None)
    try:
        wait_for(lambda: _answers(running), 20, "the ACL Redis")
        yield running
    finally:
        server.terminate()
        server.wait(20)


def certificates(folder: Path) -> None:
    """A CA, and a certificate for 127.0.0.1 it signed, made with openssl."""

    def openssl(*argv: str) -> None:
        done = subprocess.run(["openssl", *argv], cwd=folder, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
            "/CN=evalrelay test CA", "-keyout", "ca.key", "-out", "ca.pem")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "1", "-extfile", "san.ext",
            "-out", "server.pem")  # fmt: skip


def _answers(server: AclRedis) -> bool:
    try:
        return bool(server.client("admin", server.admin_password).ping())
    except redis.ConnectionError:
        return False


def test_the_worker_user_is_refused_what_could_wreck_or_read_the_server(
    acl_redis: AclRedis,
) -> None:
    worker = acl_redis.client("evalrelay", acl_redis.worker_password)
    assert worker.ping()
    for command in (("CONFIG", "GET", "*"), ("FLUSHALL",), ("KEYS", "*"),
                    ("MODULE", "LIST"), ("SHUTDOWN",), ("ACL", "LIST")):  # fmt: skip
        with pytest.raises(redis.exceptions.NoPermissionError):
            worker.execute_command(*command)
    with pytest.raises(redis.AuthenticationError):  # the default user is off
        acl_redis.client(None, acl_redis.worker_password).ping()
    admin = acl_redis.client("admin", acl_redis.admin_password)
    assert admin.config_get("protected-mode") == {"protected-mode": "yes"}


def test_a_worker_and_a_collector_run_a_campaign_as_the_worker_user(
    acl_redis: AclRedis, tmp_path: Path, private_home: Path
) -> None:
    run_a_campaign(acl_redis, tmp_path, private_home)


def test_the_same_over_tls_with_a_rediss_url(
    tls_redis: AclRedis, tmp_path: Path, private_home: Path
) -> None:
    """Redis across machines, as docs/cluster.md says to run it: TLS only, its CA named in
    the `rediss://` URL, for evalrelay's client and Celery's alike."""
    with pytest.raises(redis.ConnectionError):  # no plain-text port to fall back on
        redis.Redis(port=tls_redis.port, socket_connect_timeout=2).ping()
    run_a_campaign(tls_redis, tmp_path, private_home)


def run_a_campaign(acl_redis: AclRedis, tmp_path: Path, private_home: Path) -> None:
    secret = tmp_path / "redis_password"
    secret.write_text(acl_redis.worker_password + "\n")
    url = acl_redis.url()
    processes = processes_on(
        url, private_home, tmp_path / "logs", {"EVALRELAY_REDIS_PASSWORD_FILE": str(secret)}
    )
    root = tmp_path / "project"
    root.mkdir()
    (root / "targets.yaml").write_text("targets:\n  - {name: mock, provider: mock}\n")
    (root / "evals.yaml").write_text(one_turn_cases(20))
    admin = acl_redis.client("admin", acl_redis.admin_password)
    try:
        processes.worker(admin, "w@acl", "-c", "4")
        collector = processes.start("collect", "--out", str(root / "results"), name="collect")
        sent = evalrelay("run", "evals.yaml", "--target", "mock", "--detach",
                         env=processes.env, cwd=root)  # fmt: skip
        assert sent.returncode == 0, sent.stderr
        campaign = sent.stdout.strip()
        lines = root / "results" / f"{campaign}.jsonl"
        wait_for(lambda: lines.exists() and len(read_jsonl(lines)) == 20, 60, "20 results")
        assert {line["status"] for line in read_jsonl(lines)} == {"ok"}
        status = evalrelay("status", campaign, env=processes.env, cwd=root)
        assert status.returncode == 0, status.stderr
        assert collector.poll() is None
        for name in ("w@acl", "collect"):
            assert "NOPERM" not in processes.log(name), processes.log(name)
            assert acl_redis.worker_password not in processes.log(name)
    finally:
        processes.stop_all()
