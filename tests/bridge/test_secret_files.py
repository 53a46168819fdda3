"""Secrets given as files (`NAME_FILE`), read by the process itself (`bridge.secret_files`)."""

from __future__ import annotations

from pathlib import Path

import psutil
import redis

from evalrelay.bridge.keys import workers_key
from evalrelay.bridge.secret_files import load_secret_files
from tests.conftest import Processes, WriteFiles, one_turn_cases, wait_for
from tests.worker.providers.vendor_server import Reply, openai_chat, serving

KEY = "sk-from-a-file-0123456789abcdef"


def test_each_name_file_sets_its_name_unless_set_missing_or_empty(tmp_path: Path) -> None:
    (tmp_path / "key").write_text(KEY + "\n")
    (tmp_path / "empty").write_text("")
    (tmp_path / "folder").mkdir()
    environ = {
        "OPENAI_API_KEY_FILE": str(tmp_path / "key"),
        "ANTHROPIC_API_KEY_FILE": str(tmp_path / "empty"),
        "GEMINI_API_KEY_FILE": str(tmp_path / "folder"),  # Docker's mount of a missing secret
        "AZURE_OPENAI_API_KEY_FILE": str(tmp_path / "absent"),
        "MISTRAL_API_KEY": "given",
        "MISTRAL_API_KEY_FILE": str(tmp_path / "key"),
        "EVALRELAY_REDIS_PASSWORD_FILE": str(tmp_path / "key"),  # read where it is used
        "SSL_CERT_FILE": str(tmp_path / "key"),  # no secret's name: a file left as it is
        "EVALRELAY_SECRET_VARS": "DB_DSN",
        "DB_DSN_FILE": str(tmp_path / "key"),
    }
    assert load_secret_files(environ) == ["DB_DSN", "OPENAI_API_KEY"]
    assert "SSL_CERT" not in environ and environ["DB_DSN"] == KEY
    assert environ["OPENAI_API_KEY"] == KEY
    assert environ["MISTRAL_API_KEY"] == "given"
    for name in (
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "EVALRELAY_REDIS_PASSWORD",
    ):
        assert name not in environ


def test_a_worker_uses_a_key_from_a_file_which_no_process_environment_holds(
    project: WriteFiles, processes: Processes, client: redis.Redis, tmp_path: Path
) -> None:
    """Two worker processes with the key as a file: the server gets it as the bearer
    token, and neither the parent's environment nor its children's holds it."""
    secret = tmp_path / "openai_api_key"
    secret.write_text(KEY + "\n")
    with serving(Reply(openai_chat())) as server:
        root = project(
            {
                "targets.yaml": "targets:\n  - {name: mini, provider: openai-compatible, "
                "model: gpt-4o-mini, api_key: '${OPENAI_API_KEY}', "
                f'base_url: "{server.url}/v1"}}\n',
                "evals/e.yaml": one_turn_cases(4),
            }
        )
        worker = processes.start(
            "worker", "--name", "w@test", "--processes", "2",
            name="worker", extra_env={"OPENAI_API_KEY": "", "OPENAI_API_KEY_FILE": str(secret)},
        )  # fmt: skip
        wait_for(
            lambda: (
                sorted(n for n in client.hkeys(workers_key()) if n.endswith("@test"))
                == ["w-1@test", "w-2@test"]
            ),
            30,
            "the worker's two processes",
        )
        run = processes.start("run", str(root / "evals/e.yaml"), "--target", "mini", name="run")
        assert run.wait(120) == 0, processes.log("run")
        assert len(server.seen) == 4
        assert {seen.headers["authorization"] for seen in server.seen} == {f"Bearer {KEY}"}
        family = [psutil.Process(worker.pid), *psutil.Process(worker.pid).children(recursive=True)]
        for process in family:
            environ = process.environ()  # root reads it; the processes are not dumpable
            assert KEY not in str(environ), (process.cmdline(), environ)
            assert environ.get("OPENAI_API_KEY_FILE") == str(secret)
