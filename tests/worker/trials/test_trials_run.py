"""Container tasks end to end: `evalrelay run` on task folders, its worker process running
each trial in a real Docker container, the collector writing one line per trial and the
trial's files under the results folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bridge.cli.test_run import run
from tests.conftest import WriteFiles, embedded_env, read_jsonl

SOLVE_GREET = """#!/bin/bash
printf '%s\\n' "$GREETING" > greeting.txt
echo "$MARK" > /logs/agent/mark.txt
"""
TEST_GREET = """#!/bin/bash
found="$(cat /app/greeting.txt 2>/dev/null)"
echo "found: $found"
if [ "$found" = "$EXPECTED" ]; then r=1; else r=0; fi
echo $r > /logs/verifier/reward.txt
"""
GRADE = """grade() {
    if "$@"; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
}
"""


def tasks(base: str) -> dict[str, str]:
    """Five tasks on the Debian base: files and env, three steps with early stops, several
    rewards, an agent that overruns its time, and a task without network."""
    dockerfile = f"FROM {base}\nWORKDIR /srv\n"
    return {
        # greet: the task's workdir wins over the image's; [environment.env] reaches the
        # agent, [verifier.env] the tests; an artifact is collected.
        "tasks/greet/task.toml": """\
            schema_version = "1.1"
            artifacts = ["/app/greeting.txt"]
            [task]
            name = "t/greet"
            [environment]
            workdir = "/app"
            cpus = 1
            memory_mb = 256
            [environment.healthcheck]
            command = "test -d /app"
            [environment.env]
            GREETING = "hi there"
            [solution.env]
            MARK = "from [solution].env"
            [verifier.env]
            EXPECTED = "hi there"
            """,
        "tasks/greet/instruction.md": "Write the greeting into greeting.txt.\n",
        "tasks/greet/environment/Dockerfile": dockerfile,
        "tasks/greet/solution/solve.sh": SOLVE_GREET,
        "tasks/greet/tests/test.sh": TEST_GREET,
        # steps: workdir uploads and setup.sh, a healthcheck, shared tests/ merged with
        # each step's, and min_reward stopping the rest.
        "tasks/steps/task.toml": """\
            schema_version = "1.1"
            [task]
            name = "t/steps"
            [environment]
            workdir = "/w"
            [[steps]]
            name = "one"
            min_reward = 1.0
            [steps.healthcheck]
            command = "test -s /w/input.txt"
            interval_sec = 0.2
            retries = 3
            [[steps]]
            name = "two"
            min_reward = 1.0
            [steps.verifier.env]
            WANT = "3"
            [[steps]]
            name = "three"
            """,
        "tasks/steps/environment/Dockerfile": dockerfile,
        "tasks/steps/tests/lib.sh": GRADE,
        "tasks/steps/tests/test.sh": "source /tests/lib.sh\ngrade test -e /w/done\n",
        "tasks/steps/steps/one/instruction.md": "Copy input.txt to copy.txt.\n",
        "tasks/steps/steps/one/workdir/numbers.txt": "1\n2\n",
        "tasks/steps/steps/one/workdir/setup.sh": "sort -n numbers.txt > input.txt\n",
        "tasks/steps/steps/one/solution/solve.sh": "cp input.txt copy.txt\n",
        "tasks/steps/steps/one/tests/test.sh": (
            "source /tests/lib.sh\ngrade cmp /w/input.txt /w/copy.txt\n"
        ),
        "tasks/steps/steps/two/instruction.md": "Write the sum into sum.txt.\n",
        "tasks/steps/steps/two/solution/solve.sh": "echo 3 > sum.txt\n",
        "tasks/steps/steps/two/tests/test.sh": (
            'source /tests/lib.sh\ngrade test "$(cat /w/sum.txt)" = "$WANT"\n'
        ),
        "tasks/steps/steps/three/instruction.md": "Say you are done.\n",
        "tasks/steps/steps/three/solution/solve.sh": "touch done\n",
        # scores: several rewards in reward.json; nop gets one of them.
        "tasks/scores/task.toml": '[task]\nname = "t/scores"\n',
        "tasks/scores/instruction.md": "Write 42 into /tmp/answer.\n",
        "tasks/scores/environment/Dockerfile": dockerfile,
        "tasks/scores/solution/solve.sh": "echo 42 > /tmp/answer\n",
        "tasks/scores/tests/test.sh": """\
            #!/bin/bash
            right=0; there=0
            [ -e /tmp/answer ] && there=1
            [ "$(cat /tmp/answer 2>/dev/null)" = 42 ] && right=1
            json="{\\"reward\\": $right, \\"there\\": $there, \\"shell\\": 1}"
            echo "$json" > /logs/verifier/reward.json
            """,
        # slow: the agent overruns its 2 s; the tests still grade what it left.
        "tasks/slow/task.toml": '[task]\nname = "t/slow"\n[agent]\ntimeout_sec = 2\n',
        "tasks/slow/instruction.md": "Leave a mark, then take your time.\n",
        "tasks/slow/environment/Dockerfile": dockerfile,
        "tasks/slow/solution/solve.sh": "touch /tmp/mark\nsleep 60\n",
        "tasks/slow/tests/test.sh": (
            "if [ -e /tmp/mark ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
        ),
        # offline: no interface but loopback, which its tests check (sending nothing).
        "tasks/offline/task.toml": (
            '[task]\nname = "t/offline"\n[environment]\nnetwork_mode = "no-network"\n'
        ),
        "tasks/offline/instruction.md": "Nothing to do.\n",
        "tasks/offline/environment/Dockerfile": dockerfile,
        "tasks/offline/solution/solve.sh": "true\n",
        "tasks/offline/tests/test.sh": (
            'if [ "$(ls /sys/class/net)" = lo ]; then echo 1; else echo 0; fi'
            " > /logs/verifier/reward.txt\n"
        ),
    }


@pytest.fixture(scope="module")
def task_base() -> str:
    from tests.worker.agents.sandbox_images import base_image, docker_engine

    docker_engine()
    return base_image()


def by_trial(lines: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(str(line["case_id"]), str(line["target"])): line for line in lines}


def containers_of(job_ids: list[str]) -> list[str]:
    names = []
    for job_id in job_ids:
        done = subprocess.run(
            ["docker", "ps", "--all", "--filter", f"label=evalrelay.job={job_id}", "-q"],
            capture_output=True,
            text=True,
            check=True,
        )
        names += done.stdout.split()
    return names


def test_oracle_solves_and_nop_fails_each_task_graded_by_its_own_tests(
    project: WriteFiles, private_home: Path, task_base: str
) -> None:
    root = project(tasks(task_base))
    done = run("tasks", "--target", "oracle,nop", env=embedded_env(private_home), cwd=root)
    # exit 2: the oracle overran its time on t/slow, a trial that counts in no score
    assert done.returncode == 2, done.stderr
    assert "task.toml:" not in done.stderr, done.stderr  # nothing read it as another format
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = read_jsonl(jsonl)
    assert len(lines) == 10 and len({line["job_id"] for line in lines}) == 10
    trials = by_trial(lines)
    scores = {key: (line["status"], line["score"]) for key, line in trials.items()}
    assert scores == {
        ("t/greet", "oracle"): ("ok", 1.0),
        ("t/greet", "nop"): ("ok", 0.0),
        ("t/steps", "oracle"): ("ok", 1.0),
        ("t/steps", "nop"): ("ok", 0.0),
        ("t/scores", "oracle"): ("ok", 1.0),
        ("t/scores", "nop"): ("ok", 0.0),
        ("t/slow", "oracle"): ("timeout", 1.0),
        ("t/slow", "nop"): ("ok", 0.0),
        ("t/offline", "oracle"): ("ok", 1.0),
        ("t/offline", "nop"): ("ok", 1.0),
    }
    assert trials[("t/scores", "nop")]["rewards"] == {"reward": 0.0, "there": 0.0, "shell": 1.0}
    assert trials[("t/greet", "oracle")]["passed"] is True
    assert "did not finish within 2 s" in trials[("t/slow", "oracle")]["error"]["message"]

    steps = trials[("t/steps", "oracle")]["steps"]
    assert [(s["name"], s["reward"], s["skipped"]) for s in steps] == [
        ("one", 1.0, False),
        ("two", 1.0, False),
        ("three", 1.0, False),
    ]
    stopped = trials[("t/steps", "nop")]["steps"]
    assert [(s["name"], s["reward"], s["skipped"]) for s in stopped] == [
        ("one", 0.0, False),
        ("two", None, True),
        ("three", None, True),
    ]
    assert trials[("t/greet", "oracle")]["steps"] is None

    greet = trials[("t/greet", "oracle")]
    timings = greet["timings"]
    assert all(isinstance(timings[k], float) for k in ("build", "setup", "agent", "verifier"))
    folder = jsonl.parent / greet["artifacts"]["trial_dir"]
    assert (folder / "verifier" / "reward.txt").read_text().strip() == "1"
    assert "found: hi there" in (folder / "verifier" / "test-stdout.txt").read_text()
    assert (folder / "artifacts" / "app" / "greeting.txt").read_text() == "hi there\n"
    assert (folder / "agent" / "mark.txt").read_text() == "from [solution].env\n"
    assert all((jsonl.parent / f).is_file() for f in greet["artifacts"]["files"])
    step_two = jsonl.parent / trials[("t/steps", "oracle")]["artifacts"]["trial_dir"]
    assert (step_two / "steps" / "two" / "verifier" / "reward.txt").is_file()

    assert containers_of([line["job_id"] for line in lines]) == []
    built = subprocess.run(
        ["docker", "images", "--filter", "label=evalrelay.context", "--format", "{{.Tag}}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert len(set(built)) == len(built)  # each context built once, whatever its trials


def test_a_task_that_cannot_run_here_stops_the_run_with_the_reason(
    project: WriteFiles, private_home: Path
) -> None:
    root = project(
        {
            "tasks/gpu/task.toml": "[environment]\ngpus = 2\n",
            "tasks/gpu/instruction.md": "Train.\n",
            "tasks/gpu/environment/Dockerfile": "FROM scratch\n",
            "tasks/gpu/tests/test.sh": "true\n",
        }
    )
    done = run("tasks/gpu", "--target", "oracle", env=embedded_env(private_home), cwd=root)
    assert done.returncode != 0
    assert "tasks/gpu/task.toml:2:1: gpus = 2: evalrelay's workers give task containers no GPU" in (
        done.stderr
    )
    assert not (root / "results").exists() or not list((root / "results").glob("*.jsonl"))


def test_validate_and_render_read_a_task(project: WriteFiles, private_home: Path) -> None:
    root = project(tasks("evalrelay-base:bookworm"))
    from tests.bridge.cli.test_run import evalrelay

    env = embedded_env(private_home)
    checked = evalrelay("validate", "tasks", env=env, cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "tasks/steps/task.toml: 1 case OK (Harbor task (task.toml))" in checked.stdout
    shown = evalrelay("render", "tasks/steps", "--json", env=env, cwd=root)
    view = json.loads(shown.stdout)
    assert [s["name"] for s in view["steps"]] == ["one", "two", "three"]
    assert view["steps"][0]["healthcheck"] == "test -s /w/input.txt"
    assert view["steps"][1]["instruction"] == "Write the sum into sum.txt.\n"
