"""Eval cases with attached files (a guideline and a module, unicode and spaces in their
names) and the jobs they make, for the agent provider tests."""

from __future__ import annotations

import time
from pathlib import Path

import redis

from evalrelay.bridge.contract.job import Job
from evalrelay.bridge.evalfile.cases import load_eval_file
from evalrelay.bridge.planning.campaigns import plan_jobs
from evalrelay.bridge.queue.blobs import store_blobs
from tests.conftest import WriteFiles

GUIDE = "docs/style guide.instructions.md"
ATTACHED = "src/naïve módulo.py"
ATTACHED_TEXT = "print('héllo')"


def case_file(question: str, timeout: float | None = None, count: int = 1) -> str:
    limit = f"\n    timeout_seconds: {timeout}" if timeout else ""
    cases = [
        f"  - id: case-{i}{limit}\n"
        "    input_messages:\n"
        "      - role: user\n"
        "        content:\n"
        f"          - {{type: text, value: '{question} #{i}'}}\n"
        f"          - {{type: file, value: '{GUIDE}'}}\n"
        f"          - {{type: file, value: '{ATTACHED}'}}\n"
        for i in range(count)
    ]
    return "evalcases:\n" + "".join(cases)


def agent_project(
    project: WriteFiles,
    targets_yaml: str,
    question: str,
    timeout: float | None = None,
    count: int = 1,
) -> Path:
    return project(
        {
            "targets.yaml": targets_yaml,
            "evals.yaml": case_file(question, timeout, count),
            GUIDE: "Use four spaces.\n",
            ATTACHED: ATTACHED_TEXT + "\n",
        }
    )


def planned_job(root: Path, client: redis.Redis, target: str) -> Job:
    """The first case's job, its attached files stored in Redis as `submit` stores them."""
    loaded = load_eval_file(root / "evals.yaml")
    store_blobs(client, (f for case in loaded.cases for f in case.files()))
    return plan_jobs(f"c{time.time_ns()}", [loaded], target, None)[0]
