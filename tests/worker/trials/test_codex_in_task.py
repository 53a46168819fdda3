"""The real Codex CLI working inside a task's container, without a network of its own: its
program mounted from the worker, its model (aimock on the worker's loopback) reached
through the relay, the task's own tests grading what it did."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bridge.cli.test_run import run
from tests.conftest import WriteFiles, embedded_env, read_jsonl
from tests.worker.providers.real_agents import aimock

FIXTURES = [
    {"match": {"hasToolResult": True}, "response": {"content": "Wrote hello.txt."}},
    {
        "match": {"userMessage": "hello.txt"},
        "response": {
            "toolCalls": [
                {"name": "exec_command", "arguments": {"cmd": "printf 'hi\\n' > hello.txt"}}
            ]
        },
    },
]


def task_files(base: str, url: str, agents_bin: Path, sandbox_image: str) -> dict[str, str]:
    port = url.split(":")[2].split("/")[0]
    return {
        "targets.yaml": f"""\
            targets:
              - name: codex
                provider: codex
                executable: {agents_bin / "codex"}
                model: gpt-test
                env: {{AIMOCK_API_KEY: "${{AIMOCK_KEY}}"}}
                isolation: {{network: ["127.0.0.1:{port}"], image: {sandbox_image}}}
                config:
                  model_provider: aimock
                  model_providers.aimock:
                    name: aimock on the worker's loopback
                    base_url: {url}
                    wire_api: responses
                    env_key: AIMOCK_API_KEY
                    request_max_retries: 0
                    stream_max_retries: 0
            """,
        "tasks/hello/task.toml": """\
            [task]
            name = "t/hello"
            [environment]
            workdir = "/app"
            network_mode = "no-network"
            [agent]
            timeout_sec = 120
            """,
        "tasks/hello/instruction.md": "Write hi into hello.txt.\n",
        "tasks/hello/environment/Dockerfile": f"FROM {base}\n",
        "tasks/hello/tests/test.sh": """\
            if [ "$(cat /app/hello.txt)" = hi ]; then r=1; else r=0; fi
            echo $r > /logs/verifier/reward.txt
            """,
    }


@pytest.mark.usefixtures("aimock_key")
def test_codex_solves_a_task_inside_its_container_through_the_relay(
    project: WriteFiles,
    private_home: Path,
    tmp_path: Path,
    agents_bin: Path,
    sandbox_image: str,
) -> None:
    from tests.worker.agents.sandbox_images import base_image

    with aimock(agents_bin, FIXTURES, tmp_path) as url:
        root = project(task_files(base_image(), url, agents_bin, sandbox_image))
        done = run("tasks", "--target", "codex", env=embedded_env(private_home), cwd=root)
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    (line,) = read_jsonl(jsonl)
    assert (line["status"], line["score"]) == ("ok", 1.0), line["error"]
    assert line["answer"] == "Wrote hello.txt."
    trajectory = line["trajectory"]
    assert trajectory["agent"] == "codex"
    (step,) = trajectory["steps"]
    assert step["kind"] == "command" and "hello.txt" in str(step["arguments"])
    folder = jsonl.parent / line["artifacts"]["trial_dir"]
    assert '"type":"turn.completed"' in (folder / "agent" / "codex.txt").read_text()
