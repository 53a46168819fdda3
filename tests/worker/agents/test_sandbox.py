"""The agent under evaluation is untrusted: a hostile agent command on a real worker finds
no secret in its environment, and under `runtime: sandbox`, in a Docker container or
under bubblewrap, no file of the worker's and no way to Redis either, while its own job
completes as usual."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from evalrelay.bridge.results.result import Status
from evalrelay.bridge.targets.settings import Isolation
from evalrelay.worker.agents.sandbox import (
    Endpoint,
    SandboxUnavailable,
    chosen_engine,
    install_root,
    sandboxed,
)
from evalrelay.worker.execute import execute
from tests.conftest import Processes, WriteFiles, one_turn_cases
from tests.worker.providers.agent_cases import agent_project, planned_job
from tests.worker.test_tasks import collect_all, submit_campaign

WORKER_SECRETS = {
    "OPENAI_API_KEY": "sk-test-" + secrets.token_hex(20),
    "ANTHROPIC_API_KEY": "sk-ant-" + secrets.token_hex(20),
    "GH_PAT": "ghp_" + secrets.token_hex(18),
    "DATABASE_URL": f"postgres://app:{secrets.token_hex(12)}@db.internal/prod",
}
"""What a worker's environment holds besides its Redis URL."""


def hostile_script(home: Path, results: Path, redis_port: int) -> str:
    """Everything an agent that wants to game its evaluation would try, printed."""
    return "\n".join(
        [
            "echo '--- env'; env",
            f"echo '--- home'; cat {home}/secrets.env 2>&1",
            f"echo '--- results'; cat {results}/*.jsonl 2>&1",
            f"echo '--- workspaces'; ls {home}/workspaces/*/ 2>&1",
            "echo '--- redis'",
            f"(exec 3<>/dev/tcp/127.0.0.1/{redis_port} && printf 'PING\\r\\n' >&3 "
            "&& timeout 2 head -c 7 <&3) 2>&1",
            "echo \"--- first process: $(tr '\\0' ' ' </proc/1/cmdline)\"",
            "echo '--- end'",
        ]
    )


RUNTIMES = ["host", "bubblewrap", "docker"]
"""`runtime: host`, and `runtime: sandbox` with each engine."""


def runtime_settings(runtime: str, request: pytest.FixtureRequest) -> dict[str, object]:
    """A target's `runtime` and `isolation` for one of RUNTIMES (Docker: the test image)."""
    if runtime == "host":
        return {"runtime": "host"}
    return {"runtime": "sandbox", "isolation": isolation_settings(runtime, request)}


def isolation_settings(engine: str, request: pytest.FixtureRequest) -> dict[str, object]:
    """`isolation` choosing the engine (Docker: with the test image)."""
    if engine == "docker":
        return {"engine": engine, "image": request.getfixturevalue("sandbox_image")}
    return {"engine": engine}


def run_hostile(
    project: WriteFiles,
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    home: Path,
    runtime: dict[str, object],
) -> list[dict[str, object]]:
    root = project({"evals.yaml": one_turn_cases(2)})
    (home / "secrets.env").parent.mkdir(parents=True, exist_ok=True)
    (home / "secrets.env").write_text("FROM_A_FILE=" + secrets.token_hex(16) + "\n")
    (root / "results").mkdir()
    (root / "results" / "planted.jsonl").write_text('{"grade": "of another campaign"}\n')
    port = urlsplit(redis_url).port or 6379
    command = ["bash", "-c", hostile_script(home, root / "results", port)]
    target = {"name": "hostile", "provider": "cli", "command": command, **runtime}
    (root / "targets.yaml").write_text(json.dumps({"targets": [target]}))
    processes.worker(
        client, "agents@test", "-Q", "agent.cli", "--concurrency", "2",
        extra_env=WORKER_SECRETS,
    )  # fmt: skip
    info = submit_campaign(redis_url, root, 2, target="hostile")
    lines = collect_all(processes, client, info, 90)
    assert [line["status"] for line in lines] == ["ok", "ok"], lines
    return lines


def assert_no_worker_secret(answer: str, redis_url: str) -> None:
    assert "--- end" in answer and "PATH=" in answer  # the environment was printed
    for name, value in WORKER_SECRETS.items():
        assert name not in answer and value not in answer
    assert "EVALRELAY_REDIS_URL" not in answer and redis_url not in answer


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_hostile_agent_finds_no_secret_in_its_environment(
    project: WriteFiles,
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    private_home: Path,
    request: pytest.FixtureRequest,
    runtime: str,
) -> None:
    settings = runtime_settings(runtime, request)
    for line in run_hostile(project, processes, client, redis_url, private_home, settings):
        assert_no_worker_secret(str(line["answer"]), redis_url)


@pytest.mark.parametrize("engine", ["bubblewrap", "docker"])
def test_hostile_agent_in_the_sandbox_reaches_no_file_workspace_or_redis(
    project: WriteFiles,
    processes: Processes,
    client: redis.Redis,
    redis_url: str,
    private_home: Path,
    request: pytest.FixtureRequest,
    engine: str,
) -> None:
    settings = runtime_settings(engine, request)
    lines = run_hostile(project, processes, client, redis_url, private_home, settings)
    first_process = {"docker": "/sbin/docker-init", "bubblewrap": shutil.which("bwrap")}[engine]
    planted = (private_home / "secrets.env").read_text().strip()
    for line in lines:
        answer = str(line["answer"])
        assert_no_worker_secret(answer, redis_url)
        first = answer.split("--- first process: ", 1)[1].split(None, 1)[0]
        assert first == first_process  # the engine the target chose ran it
        assert planted not in answer and "No such file or directory" in answer
        assert "of another campaign" not in answer
        redis_part = answer.split("--- redis", 1)[1]
        assert "+PONG" not in redis_part and "Connection refused" in redis_part
        workspaces = answer.split("--- workspaces", 1)[1].split("--- redis", 1)[0]
        other = next(w for w in lines if w is not line)
        assert str(line["job_id"])[:12] in workspaces  # its own, and only its own
        assert str(other["job_id"])[:12] not in workspaces


@pytest.mark.parametrize("engine", ["bubblewrap", "docker"])
def test_endpoints_the_target_declares_are_reached_and_nothing_else(
    tmp_path: Path, request: pytest.FixtureRequest, engine: str
) -> None:
    """Through the relay: a declared loopback server answers at its own address, Redis on
    the same loopback does not; the workspace is writable, the system read-only."""
    engine_settings = isolation_settings(engine, request)
    server = subprocess.Popen(
        ["python3", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split(" port ")[1].split()[0])
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        script = (
            f"curl -s -o /dev/null -w 'declared %{{http_code}}\\n' http://127.0.0.1:{port}/; "
            "(exec 3<>/dev/tcp/127.0.0.1/6379 && echo redis open) 2>&1 | tail -1; "
            f"touch {workspace}/made && echo wrote; touch /usr/made 2>&1; id -u"
        )
        isolation = Isolation.model_validate({**engine_settings, "network": [f"127.0.0.1:{port}"]})
        with sandboxed(
            ["bash", "-c", script], cwd=workspace, env={"PATH": "/usr/bin:/bin"},
            writable=[workspace], readable=[], isolation=isolation,
        ) as confined:  # fmt: skip
            done = subprocess.run(
                confined.argv, env=confined.env, capture_output=True, text=True, timeout=60
            )
    finally:
        server.terminate()
        server.wait()
    lines = done.stdout.splitlines()
    assert lines[0] == "declared 200", done
    assert "Connection refused" in lines[1]
    assert lines[2] == "wrote" and (workspace / "made").exists()
    assert "Read-only file system" in lines[3]
    assert lines[4] == "65534"


def test_install_root_is_an_npm_prefix_or_the_programs_folder(tmp_path: Path) -> None:
    package = tmp_path / "prefix" / "node_modules" / "@openai" / "codex" / "bin"
    package.mkdir(parents=True)
    (package / "codex.js").write_text("")
    bin_dir = tmp_path / "prefix" / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "codex").symlink_to(package / "codex.js")
    assert install_root(str(bin_dir / "codex")) == tmp_path / "prefix"
    assert install_root(shutil.which("bash") or "/usr/bin/bash") == Path("/usr/bin")
    assert Endpoint.parse("api.openai.com:443") == Endpoint("api.openai.com", 443)
    with pytest.raises(ValueError, match="not host:port"):
        Endpoint.parse("api.openai.com")


def test_auto_is_docker_when_an_engine_answers_and_bubblewrap_when_none_does(
    monkeypatch: pytest.MonkeyPatch, sandbox_image: str
) -> None:
    image = Isolation(image=sandbox_image)
    assert chosen_engine(image) == ("docker", image)
    assert chosen_engine(Isolation(engine="bubblewrap"))[0] == "bubblewrap"
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    assert chosen_engine(image)[0] == "bubblewrap"
    with pytest.raises(SandboxUnavailable, match="no engine answers"):  # never seen here
        chosen_engine(Isolation(engine="docker", image="evalrelay-sandbox:never-built"))


@pytest.mark.parametrize(
    ("isolation", "message"),
    [
        (
            {"engine": "docker"},
            "runtime: sandbox with Docker: no engine answers on this worker (Cannot connect to "
            "the Docker daemon at unix:///nonexistent/docker.sock. Is the docker daemon running?)",
        ),
        (
            {"cpus": 1},
            "isolation.cpus needs the docker engine, and none answers on this worker: bubblewrap "
            "cannot hold an agent's CPU use; start Docker or remove cpus",
        ),
    ],
)
def test_a_sandbox_the_worker_cannot_give_is_an_infra_error_saying_what_to_do(
    project: WriteFiles,
    client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    isolation: dict[str, object],
    message: str,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    target = {"name": "agent", "provider": "cli", "command": ["true"], "runtime": "sandbox"}
    targets = json.dumps({"targets": [{**target, "isolation": isolation}]})
    root = agent_project(project, targets, "Go")
    result = execute(planned_job(root, client, "agent"), "w", client)

    assert result.status is Status.INFRA_ERROR
    assert result.error is not None and result.error.message == message
