"""`evalrelay export --harbor`: container-task results as Harbor's job folder, read back by
Harbor's own loader (the viewer's `JobScanner`, its `JobResult`, `TrialResult` and ATIF
`Trajectory` models) in the pinned Harbor's venv. The comparison with a job folder real
Harbor wrote for the same tasks is in tests/bridge/evalfile/harbor/test_harbor_parity.py."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evalrelay.bridge.cli.main import cli
from evalrelay.bridge.reports.harbor_job import mean_rewards
from evalrelay.bridge.results.result import Status, TaskStep, TaskTimings
from evalrelay.bridge.results.trajectory import Trajectory, TrajectoryStep
from tests.bridge.reports.reporting import result, write_campaign
from tests.conftest import free_port, loopback_server
from tests.harbor_env import harbor_bin

TIMINGS = TaskTimings(build=0.5, setup=1.0, agent=2.0, verifier=0.5)

HARBOR_READS = """
import json, sys
from pathlib import Path
from harbor.models.trajectories.trajectory import Trajectory
from harbor.viewer.scanner import JobScanner

scanner = JobScanner(Path(sys.argv[1]))
jobs = {}
for job in scanner.list_jobs():
    result = scanner.get_job_result(job)
    trials = {}
    for name in scanner.list_trials(job):
        trial = scanner.get_trial_result(job, name)
        config = scanner.get_trial_config(job, name)
        atif = Path(sys.argv[1], job, name, "agent", "trajectory.json")
        trials[name] = {
            "loaded": trial is not None and config is not None,
            "rewards": trial.verifier_result.rewards if trial and trial.verifier_result else None,
            "steps": [(s.step_name, s.verifier_result.rewards if s.verifier_result else None)
                      for s in trial.step_results] if trial and trial.step_results else None,
            "exception": trial.exception_info.exception_type
                         if trial and trial.exception_info else None,
            "reward_valid": trial.reward_valid if trial else None,
            "atif_steps": len(Trajectory.model_validate_json(atif.read_text()).steps)
                          if atif.exists() else None,
        }
    jobs[job] = {
        "loaded": result is not None and scanner.get_job_config(job) is not None,
        "metrics": {k: v.metrics for k, v in result.stats.evals.items()} if result else None,
        "errors": result.stats.n_errored_trials if result else None,
        "trials": trials,
    }
print(json.dumps(jobs))
"""
"""What Harbor's viewer loads of a jobs folder, through its own classes."""


def harbor_reads(jobs_dir: Path) -> dict[str, Any]:
    python = harbor_bin().parent / "python"
    done = subprocess.run(
        [str(python), "-c", HARBOR_READS, str(jobs_dir)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def task_results(results_dir: Path) -> list[Any]:
    """Four trials as evalrelay records them, with their files under the results folder,
    and one result that is not a container task."""
    trial_dir = "camp/hello__hello-or"
    files = results_dir / trial_dir
    (files / "verifier").mkdir(parents=True)
    (files / "verifier" / "reward.txt").write_text("1\n")
    (files / "verifier" / "test-stdout.txt").write_text("found: hello\n")
    (files / "artifacts" / "app").mkdir(parents=True)
    (files / "artifacts" / "app" / "greeting.txt").write_text("hello\n")
    trajectory = Trajectory(
        agent="codex",
        steps=[
            TrajectoryStep(
                tool="shell",
                kind="command",
                arguments={"command": "echo hello > greeting.txt"},
                output="",
                ok=True,
                usage={"input_tokens": 120, "output_tokens": 30},
            )
        ],
        usage={"input_tokens": 120, "output_tokens": 30},
    )
    return [
        result(
            "evalrelay/hello", "oracle", Status.OK, job_id="hello-oracle", dataset="tasks",
            score=1.0, passed=True, rewards={"reward": 1.0}, timings=TIMINGS,
            artifacts={"trial_dir": trial_dir, "files": []}, trajectory=trajectory,
            answer="done",
        ),
        result(
            "evalrelay/staged", "nop", Status.OK, job_id="staged-nop", dataset="tasks",
            score=0.5, passed=False, rewards={"reward": 0.5}, timings=TIMINGS,
            steps=[
                TaskStep(name="inspect", reward=1.0, rewards={"reward": 1.0}),
                TaskStep(name="build", reward=0.0, rewards={"reward": 0.0}),
                TaskStep(name="finish", skipped=True),
            ],
        ),
        result(
            "evalrelay/timeouts", "nop", Status.TIMEOUT, job_id="timeouts-nop", dataset="tasks",
            score=0.0, passed=False, rewards={}, timings=TIMINGS,
            error="the verifier did not finish within 5 s",
        ),
        result(
            "evalrelay/silent", "nop", Status.OK, job_id="silent-nop", dataset="tasks",
            score=0.0, passed=False, rewards={}, timings=TIMINGS,
        ),
        result("capital", "gpt", Status.OK, score=1.0),
    ]  # fmt: skip


def test_harbor_loads_the_exported_job_with_its_rewards_steps_and_errors(tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "results", task_results(tmp_path / "results"))
    out = tmp_path / "jobs"
    outcome = CliRunner().invoke(cli, ["export", str(path), "--harbor", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout.splitlines() == [f"harbor: {out / 'camp'} (4 trials)"]
    assert "1 results left out: not container-task trials" in outcome.stderr

    job = harbor_reads(out)["camp"]
    assert job["loaded"] and job["errors"] == 2
    assert job["metrics"] == {
        "oracle__tasks": [{"mean": 1.0}],
        "nop__tasks": [{"mean": 0.5}],  # the two trials without a reward are left out
    }
    trials = job["trials"]
    assert set(trials) == {
        "hello__hello-o",
        "staged__staged-",
        "timeouts__timeout",
        "silent__silent-",
    }
    assert all(t["loaded"] for t in trials.values())
    hello = trials["hello__hello-o"]
    assert (hello["rewards"], hello["exception"], hello["reward_valid"]) == (
        {"reward": 1.0}, None, True,
    )  # fmt: skip
    assert hello["atif_steps"] == 3  # the instruction, the command, the answer
    assert trials["staged__staged-"]["steps"] == [
        ["inspect", {"reward": 1.0}],
        ["build", {"reward": 0.0}],
    ]
    assert trials["timeouts__timeout"]["exception"] == "VerifierTimeoutError"
    assert trials["timeouts__timeout"]["rewards"] is None
    assert trials["silent__silent-"]["exception"] == "RewardFileNotFoundError"


def test_the_trial_folder_holds_the_files_and_reward_as_harbor_lays_them_out(
    tmp_path: Path,
) -> None:
    path = write_campaign(tmp_path / "results", task_results(tmp_path / "results"))
    CliRunner().invoke(cli, ["export", str(path), "--harbor", str(tmp_path / "jobs")])
    trial = tmp_path / "jobs" / "camp" / "hello__hello-o"
    assert (trial / "verifier" / "reward.txt").read_text() == "1\n"
    assert (trial / "verifier" / "test-stdout.txt").read_text() == "found: hello\n"
    assert (trial / "artifacts" / "app" / "greeting.txt").read_text() == "hello\n"
    atif = json.loads((trial / "agent" / "trajectory.json").read_text())
    call = atif["steps"][1]
    assert call["tool_calls"] == [
        {"tool_call_id": "call_2", "function_name": "shell",
         "arguments": {"command": "echo hello > greeting.txt"}}
    ]  # fmt: skip
    assert call["metrics"] == {"prompt_tokens": 120, "completion_tokens": 30}
    assert call["extra"] == {"kind": "command", "ok": True}
    staged = tmp_path / "jobs" / "camp" / "staged__staged-"
    assert json.loads((staged / "result.json").read_text())["verifier_result"] == {
        "rewards": {"reward": 0.5}
    }


def test_harbor_view_serves_the_exported_job(tmp_path: Path) -> None:
    """`harbor view OUT` (Harbor's own viewer, on loopback) lists the job with its trials,
    its errors and each agent's mean."""
    path = write_campaign(tmp_path / "results", task_results(tmp_path / "results"))
    out = tmp_path / "jobs"
    assert CliRunner().invoke(cli, ["export", str(path), "--harbor", str(out)]).exit_code == 0
    port = free_port(reserved=False)  # harbor view tries the port before it binds it
    url = f"http://127.0.0.1:{port}/api/jobs"
    argv = [str(harbor_bin()), "view", str(out), "--port", str(port), "--no-build", "--jobs"]
    with (
        loopback_server(argv, url, tmp_path / "view.log", 90),
        urllib.request.urlopen(url, timeout=30) as reply,
    ):
        (job,) = json.load(reply)["items"]
    assert (job["name"], job["n_total_trials"], job["n_errored_trials"]) == ("camp", 4, 2)
    assert sorted(job["agents"]) == ["nop", "oracle"]
    assert job["evals"] == {
        "nop__tasks": {"metrics": [{"mean": 0.5}]},
        "oracle__tasks": {"metrics": [{"mean": 1.0}]},
    }


def test_the_mean_is_harbors_metric() -> None:
    """One reward name gives `mean`; several, a mean per name, a missing one counting 0;
    rewards of None count 0 (the job passes only trials with a valid reward)."""
    assert mean_rewards([{"reward": 1.0}, None, {"reward": 0.5}]) == {"mean": 0.5}
    assert mean_rewards([{"reward": 1.0, "shape": 0.5}, {"reward": 0.0}, None]) == {
        "reward": 1 / 3,
        "shape": 0.5 / 3,
    }


def test_error_without_results_to_export(tmp_path: Path) -> None:
    path = write_campaign(tmp_path / "results", [result("capital", "gpt", Status.OK)])
    outcome = CliRunner().invoke(cli, ["export", str(path)])
    assert outcome.exit_code != 0
    assert "export needs --inspect FILE or --harbor OUT (or both)" in str(outcome.exception)
