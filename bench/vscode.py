"""The VS Code bridge's own cost per job, next to the bare protocol in the same run.

Both sides drive the stand-in `code` (tests/worker/standins/code), whose agent answers at
once. The baseline runs the protocol by hand: `code <workspace>`, `code -r chat …` and a
wait for the answer file. The bridge adds the claim (lock file and lease), a fresh
workspace file, the attached files, the task markdown, the host lock and the release.

    python bench/vscode.py [--jobs 40]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalrelay.bridge.results.result import Status  # noqa: E402
from evalrelay.worker.agents.templates import WorkspaceTemplate  # noqa: E402
from evalrelay.worker.agents.vscode_pool import WorkspacePool  # noqa: E402
from evalrelay.worker.execute import execute  # noqa: E402
from tests.conftest import direct_job  # noqa: E402

STANDIN = ROOT / "tests" / "worker" / "standins" / "code"


def bare_protocol(workspace: Path, count: int) -> float:
    """Seconds per request, doing by hand only what VS Code needs."""
    started = time.perf_counter()
    for i in range(count):
        request = workspace / "messages" / f"bare{i}_req.md"
        answer = workspace / "messages" / f"bare{i}_res.md"
        request.write_text(
            f"[[ ## task ## ]]\n\nq\n\n[[ ## output_instructions ## ]]\n\nrequest `bare{i}`: "
            f"write `{workspace}/messages/bare{i}_res.tmp.md` then `{answer}`\n"
        )
        subprocess.run(
            [str(STANDIN), str(workspace / f"{workspace.name}.code-workspace")], check=True
        )
        subprocess.run(
            [
                str(STANDIN),
                "-r",
                "chat",
                "-m",
                "evalrelay",
                "-a",
                str(request),
                f"Follow instructions in {request.name}",
            ],
            check=True,
        )
        while not answer.exists():
            time.sleep(0.01)
    return (time.perf_counter() - started) / count


def through_bridge(root: Path, count: int) -> float:
    settings = {
        "name": "vs",
        "provider": "vscode",
        "subagent_root": str(root),
        "focus_delay_seconds": 0,
        "executable": str(STANDIN),
    }
    job = direct_job(settings, timeout_seconds=60)
    execute(job, "bench")  # wakes the window once, outside the timing
    started = time.perf_counter()
    for _ in range(count):
        assert execute(job, "bench").status is Status.OK
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["FAKE_VSCODE_STATE"] = str(Path(folder) / "state")
        pool = WorkspacePool(Path(folder) / "pool")
        pool.provision(1, WorkspaceTemplate.load("vscode"))
        bridge = through_bridge(pool.root, args.jobs)
        bare = bare_protocol(pool.workspaces()[0].folder, args.jobs)
    print(f"bare protocol: {bare * 1000:.0f} ms/request")
    print(
        f"bridge:        {bridge * 1000:.0f} ms/job  (adds {(bridge - bare) * 1000:.0f} ms, "
        f"ratio {bridge / bare:.2f})"
    )


if __name__ == "__main__":
    main()
