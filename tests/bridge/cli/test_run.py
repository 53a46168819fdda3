"""`evalrelay run` end to end: real processes, a real Redis, results exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import redis

from evalrelay.bridge.queue.embedded import embedded_redis
from tests.conftest import Processes, WriteFiles, embedded_env, one_turn_cases, read_jsonl, wait_for

TARGETS = """\
targets:
  - {name: echo, provider: mock, echo: true}
  - {name: flaky, provider: mock, response: fine, failure_rate: 0.5, failure_kind: infra_error}
"""


def cases(count: int) -> str:
    return one_turn_cases(count, case_id="case-{i}", question="question {i}")


def run(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return evalrelay("run", *args, env=env, cwd=cwd)


def evalrelay(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One `evalrelay` command to its end, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "evalrelay", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def test_run_on_the_embedded_default(project: WriteFiles, private_home: Path) -> None:
    """No EVALRELAY_REDIS_URL: a private Redis and an in-process worker, stopped afterwards."""
    root = project({"targets.yaml": TARGETS, "evals/many.yaml": cases(25)})
    env = embedded_env(private_home)
    done = run("evals/many.yaml", "--target", "echo", "--repeats", "2", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = read_jsonl(jsonl)
    assert len(lines) == 50
    assert len({line["job_id"] for line in lines}) == 50
    assert {(line["case_id"], line["answer"]) for line in lines} == {
        (f"case-{i}", f"question {i}") for i in range(25)
    }
    assert all(line["status"] == "ok" for line in lines)
    socket = private_home / "redis" / "redis.sock"
    assert not socket.exists() or not _answers(f"unix://{socket}")
    assert "ok 50" in done.stderr


def test_run_against_cluster_redis_with_a_separate_worker(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    root = project({"targets.yaml": TARGETS, "evals/few.yaml": cases(10)})
    processes.worker(client, "w1@test")
    done = run("evals/few.yaml", "--target", "echo", "--out", "out", env=processes.env, cwd=root)
    assert done.returncode == 0, done.stderr
    lines = read_jsonl(next((root / "out").glob("*.jsonl")))
    assert len(lines) == 10
    assert {line["worker"] for line in lines} == {"w1@test"}


def test_redis_unreachable_is_a_clear_error(project: WriteFiles) -> None:
    root = project({"evals/few.yaml": cases(1)})
    env = {**os.environ, "EVALRELAY_REDIS_URL": "redis://:hunter2@127.0.0.1:1/0"}
    done = run("evals/few.yaml", "--target", "mock", env=env, cwd=root)
    assert done.returncode == 1
    assert "cannot reach Redis at redis://:***@127.0.0.1:1/0" in done.stderr
    assert "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr


def test_invalid_file_is_reported_and_nothing_is_queued(
    project: WriteFiles, private_home: Path
) -> None:
    root = project({"evals/bad.yaml": "evalcases:\n  - id: x\n    input_mesages: []\n"})
    done = run("evals/bad.yaml", env={**os.environ, "EVALRELAY_HOME": str(private_home)}, cwd=root)
    assert done.returncode == 1
    assert "evals/bad.yaml:3:5: case 'x': unknown key 'input_mesages'" in done.stderr
    # The private Redis started while the file was read; it stopped with the command, empty.
    with embedded_redis(private_home) as url:
        assert redis.Redis.from_url(url).dbsize() == 0


def test_retry_reruns_failures_keeping_earlier_attempts(
    project: WriteFiles, private_home: Path
) -> None:
    root = project({"targets.yaml": TARGETS, "evals/many.yaml": cases(20)})
    env = {**os.environ, "EVALRELAY_HOME": str(private_home)}
    first = run("evals/many.yaml", "--target", "flaky", env=env, cwd=root)
    assert first.returncode == 2, first.stderr  # some jobs ended without an answer
    (jsonl,) = (root / "results").glob("*.jsonl")
    failed = {line["job_id"] for line in read_jsonl(jsonl) if line["status"] == "infra_error"}
    assert 0 < len(failed) < 20
    campaign = jsonl.stem
    again = evalrelay("retry", campaign, "--status", "infra_error", env=env, cwd=root)
    lines = read_jsonl(jsonl)
    unanswered = any(line["status"] == "infra_error" for line in lines)
    assert again.returncode == (2 if unanswered else 0), again.stderr
    assert len(lines) == 20
    assert len({line["job_id"] for line in lines}) == 20
    retried = [line for line in lines if line["job_id"] in failed]
    assert all(line["attempt"] == 2 for line in retried)
    assert all(line["attempts"][0]["status"] == "infra_error" for line in retried)  # type: ignore[index]
    moved = read_jsonl(jsonl.with_name(f"{campaign}.attempts.jsonl"))
    assert {line["job_id"] for line in moved} == failed


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def test_ctrl_c_cancels_keeps_finished_results_and_resume_completes(
    project: WriteFiles, private_home: Path
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 700}\n",
            "evals/many.yaml": cases(40),  # 14 s at 2 at once: Ctrl-C comes long before
        }
    )
    env = embedded_env(private_home)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalrelay",
            "run",
            "evals/many.yaml",
            "--target",
            "slow",
            "--concurrency",
            "2",
        ],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As a terminal starts it: a runner started in the background (`cmd &`) passes
        # SIGINT on ignored, and Python then keeps ignoring Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    wait_for(
        lambda: any(p.stat().st_size for p in (root / "results").glob("*.jsonl")),
        60,
        "the first results",
    )
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    kept = read_jsonl(jsonl)
    assert 0 < len(kept) < 40
    assert f"evalrelay resume {jsonl.stem}" in stderr
    resumed = subprocess.run(
        [sys.executable, "-m", "evalrelay", "resume", jsonl.stem],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    lines = read_jsonl(jsonl)
    assert len(lines) == 40
    assert len({line["job_id"] for line in lines}) == 40


def test_run_with_cache_calls_the_vendor_once_per_distinct_request(
    project: WriteFiles, private_home: Path
) -> None:
    from tests.worker.providers.vendor_server import Reply, openai_chat, serving

    with serving(Reply(openai_chat("cached answer"))) as server:
        root = project(
            {
                "targets.yaml": f"""\
            targets:
              - {{name: local, provider: openai-compatible, model: m,
                  base_url: "{server.url}/v1"}}
            """,
                "evals/few.yaml": cases(3),
            }
        )
        env = embedded_env(private_home)
        for _ in range(2):
            done = run("evals/few.yaml", "--target", "local", "--cache", env=env, cwd=root)
            assert done.returncode == 0, done.stderr
    assert len(server.seen) == 3
    latest = max((root / "results").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    lines = read_jsonl(latest)
    assert [line["answer"] for line in lines] == ["cached answer"] * 3
    assert all(line["artifacts"]["cached"] for line in lines)  # type: ignore[index]


def test_sigterm_stops_a_run_and_what_it_started_while_a_second_run_completes(
    project: WriteFiles, private_home: Path
) -> None:
    """Two embedded runs share one private Redis; SIGTERM to one takes its worker off it,
    and the other completes and stops the Redis."""
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: slow, provider: mock, latency_ms: 700}\n",
            # Long enough that the second run, however slow to start, finds the first
            # still running: it is stopped as soon as both are seen.
            "evals/a.yaml": cases(80),
            "evals/b.yaml": one_turn_cases(12, case_id="b-{i}"),
        }
    )
    env = embedded_env(private_home)
    url = f"unix://{private_home / 'redis' / 'redis.sock'}"

    def start(name: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "evalrelay", "run", f"evals/{name}.yaml",
             "--target", "slow", "--concurrency", "2"],
            env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    doomed = start("a")
    wait_for(lambda: _answers(url), 30, "the embedded Redis")
    survivor = start("b")
    shared = redis.Redis.from_url(url, decode_responses=True)
    wait_for(lambda: shared.hlen("evalrelay:workers") == 2, 30, "both in-process workers")
    doomed.send_signal(signal.SIGTERM)
    doomed.communicate(timeout=60)
    assert doomed.returncode == 130
    assert list(shared.hkeys("evalrelay:workers")) == [f"embedded-{survivor.pid}@{os.uname()[1]}"]
    _, stderr = survivor.communicate(timeout=120)
    assert survivor.returncode == 0, stderr
    survived = next(p for p in (root / "results").glob("*.jsonl") if p.stem.startswith("b-"))
    assert len(read_jsonl(survived)) == 12
    assert not _answers(url)  # the last one out stopped it


def test_embedded_run_reads_the_env_files_near_the_eval_file_nearest_first(
    project: WriteFiles, private_home: Path
) -> None:
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: t, provider: mock, response: '${ANSWER}'}\n",
            ".env": "ANSWER=from the root\nOTHER=root only\n",
            "evals/.env": "ANSWER=from beside the file\n",
            "evals/one.yaml": one_turn_cases(1),
        }
    )
    env = embedded_env(private_home, "ANSWER")
    done = run("evals/one.yaml", "--target", "t", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    (line,) = read_jsonl(jsonl)
    assert line["answer"] == "from beside the file"  # the nearest .env wins


def test_run_case_and_tag_filters_queue_only_the_chosen_cases(
    project: WriteFiles, private_home: Path
) -> None:
    tagged = cases(4).replace("{id: 'case-1',", "{id: 'case-1', metadata: {tags: [smoke]},")
    root = project({"targets.yaml": TARGETS, "evals/many.yaml": tagged})
    env = embedded_env(private_home)
    done = run("evals/many.yaml", "--target", "echo", "--case", "case-[23]", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    assert sorted(str(line["case_id"]) for line in read_jsonl(jsonl)) == ["case-2", "case-3"]
    done = run("evals/many.yaml", "--target", "echo", "--tag", "smoke", env=env, cwd=root)
    newest = max((root / "results").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    assert [line["case_id"] for line in read_jsonl(newest)] == ["case-1"]
    done = run("evals/many.yaml", "--tag", "nightly", env=env, cwd=root)
    assert done.returncode == 1 and "no case matches --tag nightly" in done.stderr


def test_run_name_names_the_campaign_for_the_other_commands(
    project: WriteFiles, processes: Processes, client: redis.Redis
) -> None:
    root = project({"targets.yaml": TARGETS, "evals/few.yaml": cases(3)})
    processes.worker(client, "w1@test")
    env = processes.env
    done = run("evals/few.yaml", "--target", "echo", "--name", "Nightly Smoke", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    assert jsonl.name.startswith("Nightly-Smoke-")  # the name, made safe for a file name
    for name in ("Nightly Smoke", "Nightly-Smoke", "latest"):
        shown = evalrelay("status", name, env={**env, "COLUMNS": "200"}, cwd=root)
        assert shown.returncode == 0, shown.stderr
        assert jsonl.stem in shown.stdout


TWO_TARGETS = """\
targets:
  - {name: alpha, provider: mock, response: "alpha's default", responses: {case-1: "alpha on 1"}}
  - {name: beta, provider: mock, response: "beta's default", responses: {case-1: "beta on 1"}}
"""


def test_several_targets_run_every_case_on_each_in_one_campaign(
    project: WriteFiles, private_home: Path
) -> None:
    """`--target a,b` and `--target a --target b`: each case once per target, the target a
    field of the result and never part of the case id, `responses` by case id for both."""
    root = project({"targets.yaml": TWO_TARGETS, "evals.yaml": cases(3)})
    env = embedded_env(private_home)
    for name, options in (
        ("commas", ["--target", "alpha,beta"]),
        ("repeated", ["--target", "alpha", "--target", "beta"]),
    ):
        done = run("evals.yaml", *options, "--repeats", "2", "--name", name, env=env, cwd=root)
        assert done.returncode == 0, done.stderr
        (jsonl,) = (root / "results").glob(f"{name}-*.jsonl")
        lines = read_jsonl(jsonl)
        assert len(lines) == 12 == len({line["job_id"] for line in lines})
        assert sorted({(line["case_id"], line["target"]) for line in lines}) == [
            (f"case-{i}", target) for i in range(3) for target in ("alpha", "beta")
        ]
        answers = {(line["case_id"], line["target"]): line["answer"] for line in lines}
        assert answers[("case-1", "alpha")] == "alpha on 1"
        assert answers[("case-1", "beta")] == "beta on 1"
        assert answers[("case-2", "beta")] == "beta's default"


def test_an_option_that_takes_one_value_given_twice_is_an_error(
    project: WriteFiles, private_home: Path
) -> None:
    root = project({"targets.yaml": TWO_TARGETS, "evals.yaml": cases(1)})
    done = run("evals.yaml", "--name", "a", "--name", "b", env=embedded_env(private_home), cwd=root)
    assert done.returncode == 2
    assert "--name given twice; it takes one value: give it once" in done.stderr
    assert not (root / "results").exists()  # nothing ran


def test_detach_without_a_cluster_is_refused_with_the_commands_that_work(
    project: WriteFiles, private_home: Path
) -> None:
    """The trap of the first hour: a detached campaign on the private Redis of `run`, which
    ends with it, would wait for ever."""
    root = project({"targets.yaml": TWO_TARGETS, "evals.yaml": cases(2)})
    done = run(
        "evals.yaml", "--target", "alpha", "--detach", env=embedded_env(private_home), cwd=root
    )
    assert done.returncode == 2
    said = done.stderr
    assert "with no EVALRELAY_REDIS_URL there are none" in said
    assert "evalrelay worker" in said and "evalrelay collect" in said
    assert "evalrelay run FILES --detach" in said
    assert "6379/0" not in said  # on a shared machine, someone else's Redis
    assert "export EVALRELAY_REDIS_URL=redis://127.0.0.1:PORT/0" in said
    assert not (private_home / "redis").exists()  # no Redis was started for it


def test_a_judge_the_targets_file_lacks_ends_its_cases_as_infra_errors_the_rest_run(
    project: WriteFiles, private_home: Path
) -> None:
    """An operator's file naming an undefined judge is planned, as AgentV resolves a judge
    when it grades: the case whose evaluator names it ends as an infra error saying which
    target to define; the other case is graded."""
    root = project(
        {
            "targets.yaml": "targets:\n  - {name: t, provider: mock, response: hi}\n",
            "evals/one.yaml": (
                "evalcases:\n"
                "  - id: judged\n"
                "    input_messages: [{role: user, content: hi}]\n"
                "    evaluators: [{type: llm_judge, target: jduge}]\n"
                "  - id: plain\n"
                "    input_messages: [{role: user, content: hi}]\n"
                "    evaluators: [{type: contains, value: hi}]\n"
            ),
        }
    )
    done = run("evals/one.yaml", "--target", "t", env=embedded_env(private_home), cwd=root)
    assert done.returncode == 2, done.stderr
    (jsonl,) = (root / "results").glob("*.jsonl")
    lines = {line["case_id"]: line for line in read_jsonl(jsonl)}
    assert lines["plain"]["status"] == "ok" and lines["plain"]["passed"] is True
    judged = lines["judged"]
    assert judged["status"] == "infra_error"
    assert judged["answer"] == "hi"
    assert judged["error"] == {
        "kind": "grading_error",
        "message": f"evaluator llm_judge: judge unknown target 'jduge' in {root}/targets.yaml; "
        "available: mock, mock-judge, nop, oracle, t; define it, or name a target that exists",
    }
