"""`docker-compose.yml` brought up as docs/cluster.md says, with Debian's docker-compose, on
images built without a registry (`service_images`): a campaign dropped in the inbox and
one submitted from the host with `run --detach` both end with one line per job, while
the watcher is down, a worker and the collector are SIGKILLed mid-campaign and Docker
restarts them. The Redis password holds every character a URL gives a meaning to.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import FAST_RECOVERY, free_port, one_turn_cases, read_jsonl, wait_for
from tests.deploy.service_images import ROOT, service_images

PASSWORD = 'p@ss/w:rd#?%"\\end'
"""`@ / : # ? %` end a URL's user part early unless escaped; a quote and a backslash
must survive Redis's configuration file."""

ADMIN_PASSWORD = "admin-" + PASSWORD
"""Redis's `admin` user's: the services connect as `evalrelay`, which may not CONFIG."""
SERVE_TOKEN = "serve-token-" + "7f3a" * 8
"""What `serve` answers to: it listens beyond the container's loopback."""

DETACHED_CASES = 128
DROPPED_CASES = 64
PEEK = (
    "target: mock\nevalcases:\n  - id: peek\n    input_messages:\n      - role: user\n"
    "        content:\n          - {{type: file, value: ../results/{campaign}.jsonl}}\n"
)
"""A dropped file asking for another campaign's results as an attachment."""
SLOW_TARGET = "targets:\n  - {name: slow, provider: mock, latency_ms: 8000}\n"
"""128 answers of 8 s, 32 at once: half a minute of work, still under way when the
watcher is down and the kills come, on a loaded machine too."""

FAST = "\n".join(
    [
        "services:",
        *(
            f"  {service}:\n    environment:\n"
            + "".join(f"      {k}: '{v}'\n" for k, v in FAST_RECOVERY.items())
            for service in ("api-worker", "collector", "watcher")
        ),
    ]
)
"""Workers that find a killed worker's jobs within seconds instead of 30 s: the only
change to the stack as shipped, to keep the test short."""


class Stack:
    """A compose project in a folder of its own: run `docker-compose` there."""

    def __init__(self, folder: Path, tag: str) -> None:
        self.folder = folder
        self.name = f"evalrelay-test-{os.getpid()}"
        self.redis_port = free_port()
        self.serve_port = free_port()
        self.env = {
            **os.environ,
            "COMPOSE_PROJECT_NAME": self.name,
            "EVALRELAY_TAG": tag,
            "EVALRELAY_REDIS_PORT": str(self.redis_port),
            "EVALRELAY_SERVE_PORT": str(self.serve_port),
        }
        quoted = urllib.parse.quote(PASSWORD, safe="")
        self.url = f"redis://evalrelay:{quoted}@127.0.0.1:{self.redis_port}/0"

    def compose(self, *argv: str, timeout: float = 120) -> str:
        files = ["-f", "docker-compose.yml", "-f", "fast.yml"]
        done = subprocess.run(
            ["docker-compose", *files, *argv],
            cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        assert done.returncode == 0, f"docker-compose {argv}: {done.stdout}{done.stderr}"
        return done.stdout

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).strip()

    def kill_main_process(self, service: str) -> None:
        """SIGKILL the service's evalrelay process (tini's child): the container exits and
        its restart policy brings it back, as after a crash."""
        kill = "kill -KILL $(cat /proc/1/task/1/children)"
        done = subprocess.run(
            ["docker", "exec", self.container(service), "sh", "-c", kill],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    def evalrelay(self, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """The host's evalrelay, on the stack's Redis through its loopback port."""
        env = {**os.environ, "EVALRELAY_REDIS_URL": self.url}
        return subprocess.run(
            [sys.executable, "-m", "evalrelay", *argv],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """The stack as shipped, its secrets written as docs/cluster.md says."""
    tag = service_images()
    folder = tmp_path / "stack"
    folder.mkdir()
    shutil.copy(ROOT / "docker-compose.yml", folder)
    (folder / "fast.yml").write_text(FAST)
    secrets = folder / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "redis_password").write_text(PASSWORD)
    (secrets / "serve_token").write_text(SERVE_TOKEN + "\n")
    (secrets / "redis_admin_password").write_text(ADMIN_PASSWORD)
    for unused in ("openai_api_key", "anthropic_api_key", "gemini_api_key"):
        (secrets / unused).touch()
    for each in secrets.iterdir():
        each.chmod(0o644)
    stack = Stack(folder, tag)
    try:
        stack.compose("up", "-d", timeout=180)
        yield stack
    finally:
        for service in ("api-worker", "collector", "watcher", "redis"):
            logs = subprocess.run(
                ["docker-compose", "-f", "docker-compose.yml", "logs", "--no-color",
                 "--tail", "40", service],
                cwd=folder, env=stack.env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            print(f"--- {service}\n{logs.stdout[-3000:]}")
        stack.compose("down", "--volumes", "--remove-orphans", "--timeout", "5", timeout=180)


def test_stack_runs_inbox_and_host_campaigns_through_kills_one_line_per_job(
    stack: Stack, tmp_path: Path
) -> None:
    inbox, results = stack.folder / "inbox", stack.folder / "results"
    host = tmp_path / "host"
    host.mkdir()
    (host / "evalrelay.yaml").write_text("")
    (host / "targets.yaml").write_text(SLOW_TARGET)
    (host / "host.yaml").write_text(one_turn_cases(DETACHED_CASES, case_id="h{i}"))

    healthy = ("health", "--worker", "api-worker", "--worker", "agent-worker", "--collector",
               "collector", "--watcher", "watcher")  # fmt: skip
    wait_for(lambda: stack.evalrelay(*healthy, cwd=host).returncode == 0, 120, "healthy")
    # Docker made ./inbox and ./results as root; the services' user owns them now.
    assert inbox.stat().st_uid == results.stat().st_uid == 1000

    started = time.monotonic()
    submitted = stack.evalrelay("run", "host.yaml", "--detach", "--target", "slow", cwd=host)
    assert submitted.returncode == 0, submitted.stderr
    detached = submitted.stdout.strip()

    dropped = "target: mock\n" + one_turn_cases(DROPPED_CASES, case_id="d{i}")
    (tmp_path / "dropped.yaml").write_text(dropped)
    shutil.copy(tmp_path / "dropped.yaml", inbox / "dropped.yaml")
    wait_for(lambda: (inbox / "queued" / "dropped.yaml").exists(), 60, "the watcher's submit")
    # Queued behind the slow campaign: its results come after the watcher is down.
    stopping = time.monotonic()
    stack.compose("stop", "watcher")
    print(f"\nwatcher stopped in {time.monotonic() - stopping:.1f} s, "
          f"{time.monotonic() - started:.1f} s after the detached campaign was sent")  # fmt: skip

    detached_file = results / f"{detached}.jsonl"

    def lines(path: Path) -> int:
        return len(path.read_text().splitlines()) if path.exists() else 0

    wait_for(lambda: lines(detached_file) >= 16, 90, "the first results")
    assert lines(detached_file) < DETACHED_CASES
    stack.kill_main_process("api-worker")
    stack.kill_main_process("collector")

    def dropped_files() -> list[Path]:
        return [
            p
            for p in results.glob("*.jsonl")
            if p != detached_file and not p.name.endswith(".attempts.jsonl")
        ]

    def finished() -> bool:
        found = dropped_files()
        return lines(detached_file) >= DETACHED_CASES and any(
            lines(p) >= DROPPED_CASES for p in found
        )

    wait_for(finished, 120, "both campaigns' results, with the watcher down")
    elapsed = time.monotonic() - started
    [dropped_file] = dropped_files()
    for path, cases in ((detached_file, DETACHED_CASES), (dropped_file, DROPPED_CASES)):
        ids = [line["job_id"] for line in read_jsonl(path)]
        assert len(ids) == len(set(ids)) == cases, f"{path.name}: {len(ids)} lines"
        assert path.stat().st_uid == 1000

    # The watcher back: the campaign it submitted is complete, so its file moves to done/.
    stack.compose("start", "watcher")
    wait_for(lambda: (inbox / "done" / "dropped.yaml").exists(), 60, "the file in done/")
    # ... and the results file the collector wrote is still the campaign's, whole.
    assert len(read_jsonl(dropped_file)) == DROPPED_CASES
    assert not list(results.glob("*partial*"))

    # The killed services came back (restart policy) and report themselves again.
    wait_for(lambda: stack.evalrelay(*healthy, cwd=host).returncode == 0, 60, "healthy again")
    # Redis as documented: every write synced, nothing evicted, a memory ceiling.
    config = subprocess.run(
        ["docker", "exec", stack.container("redis"), "sh", "-c",
         'REDISCLI_AUTH="$(cat /run/secrets/redis_admin_password)" redis-cli --user admin '
         'CONFIG GET "*"'],
        capture_output=True, text=True, timeout=60,
    ).stdout.split("\n")  # fmt: skip
    settings = dict(zip(config[::2], config[1::2], strict=False))
    assert settings["appendonly"] == "yes" and settings["appendfsync"] == "always"
    assert settings["maxmemory-policy"] == "noeviction" and int(settings["maxmemory"]) > 0
    assert settings["protected-mode"] == "yes"
    # The services' user, from the host: refused what could wreck or read the server.
    services = redis.Redis.from_url(stack.url)
    for command in (("CONFIG", "GET", "*"), ("FLUSHALL",), ("KEYS", "*")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            services.execute_command(*command)
    services.close()
    # The live view on the host's loopback port answers Prometheus from the same Redis,
    # to its token only.
    metrics_url = f"http://127.0.0.1:{stack.serve_port}/metrics"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(metrics_url)
    assert refused.value.code == 401
    bearer = urllib.request.Request(metrics_url, headers={"Authorization": f"Bearer {SERVE_TOKEN}"})
    with urllib.request.urlopen(bearer) as answer:
        metrics = answer.read().decode()
    ok = [
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "evalrelay_results_total"
        and sample.labels == {"campaign": detached, "status": "ok"}
    ]
    assert ok == [DETACHED_CASES]
    # Secrets are files: nothing of the password in any container's configuration.
    ids = stack.compose("ps", "-q").split()
    inspected = subprocess.run(["docker", "inspect", *ids], capture_output=True, text=True)
    assert "p@ss" not in inspected.stdout and SERVE_TOKEN not in inspected.stdout
    # Each service: no capability, no new privilege, a read-only root.
    for container in json.loads(inspected.stdout):
        host, name = container["HostConfig"], container["Name"]
        one_shot = "data-folders" in name  # it only gives the folders to the services' user
        assert host["CapDrop"] == ["ALL"], name
        assert host["CapAdd"] == (["CHOWN"] if one_shot else None) or not host["CapAdd"], name
        assert "no-new-privileges:true" in host["SecurityOpt"], name
        assert host["ReadonlyRootfs"] is True, name
    # A dropped file cannot attach a campaign's results: it reads only inside the inbox.
    (inbox / "peek.yaml").write_text(PEEK.format(campaign=detached))
    wait_for(lambda: (inbox / "failed" / "peek.yaml.error.txt").exists(), 60, "the refusal")
    refusal = (inbox / "failed" / "peek.yaml.error.txt").read_text()
    # The results live apart from the inbox's folder: the path finds nothing there, and a
    # path that did resolve would be outside the inbox; either way nothing is attached.
    assert "outside the inbox" in refusal or "not found" in refusal, refusal
    ps = subprocess.run(
        ["docker", "exec", stack.container("redis"), "cat", "/proc/1/cmdline", "/proc/7/cmdline"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert "p@ss" not in ps.stdout
    print(
        f"\ncompose: {DETACHED_CASES} detached + {DROPPED_CASES} dropped jobs through a "
        f"worker and a collector kill, {elapsed:.1f} s; one line per job"
    )
