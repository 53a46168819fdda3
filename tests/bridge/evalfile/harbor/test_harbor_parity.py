"""evalrelay runs Harbor tasks as Harbor does: real Harbor (pinned in tests/harbor_env.py)
and `evalrelay run` on the same task corpus (tests/fixtures/harbor_tasks) with Harbor's
`oracle` and `nop` agents give the same reward per trial and per step, stop a multi-step
trial at the same `min_reward`, and record the same outcome for a timeout or a missing
reward file.

Harbor runs all its trials in one `harbor run` job (four at a time), once per machine for
the same Harbor release, tasks and base images (`tests.harbor_env.cached_harbor_job`, like
the rest of Harbor's cache); evalrelay in one `evalrelay run` campaign, once per module.
The `offline` task (`network_mode = "no-network"`) cannot run under Harbor here: its local
Docker environment enforces that mode through an egress sidecar it pulls from Docker Hub,
and this machine has no registry. The test checks that Harbor does refuse it here, and
holds evalrelay to the expectation the task documents: the oracle scores 1 only in a
container with no interface but `lo` and no default route, and `nop` scores 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl
from tests.harbor_env import cached_harbor_job, harbor_job, stand_in_bases

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "harbor_tasks"
AGENTS = ["oracle", "nop"]
OFFLINE = "offline"
"""The no-network task, which Harbor cannot run on this machine."""

pytestmark = pytest.mark.timeout(1200)
"""The first test waits for both runs: Harbor's 12 trials take about 3 minutes here when
its results are not in the cache yet."""

Trial = tuple[str, str]
"""A task's folder name and an agent."""


@pytest.fixture(scope="module")
def harbor_dir() -> Path:
    """Real Harbor's job folder: every task it can run here, with each agent (run once per
    machine for the same Harbor, tasks and base images: `cached_harbor_job`)."""
    tasks = [CORPUS / task for task in sorted({task for task, _ in PARITY_TRIALS})]
    return cached_harbor_job(tasks, AGENTS, "parity")


@pytest.fixture(scope="module")
def harbor(harbor_dir: Path) -> dict[Trial, dict[str, Any]]:
    """Real Harbor's trial results (its `result.json` per trial), by task and agent."""
    trials: dict[Trial, dict[str, Any]] = {}
    for path in harbor_dir.glob("*/result.json"):
        result = json.loads(path.read_text())
        key = (Path(result["config"]["task"]["path"]).name, result["agent_info"]["name"])
        assert key not in trials, f"two Harbor trials of {key}"
        trials[key] = result
    return trials


@pytest.fixture(scope="module")
def evalrelay_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """evalrelay's results file for every task of the corpus with the same agents."""
    stand_in_bases()
    root = tmp_path_factory.mktemp("evalrelay-project")
    shutil.copytree(CORPUS, root / "tasks")
    env = {k: v for k, v in os.environ.items() if k != "EVALRELAY_REDIS_URL"}
    env["EVALRELAY_HOME"] = str(root / "home")
    argv = ["run", "tasks", "--target", ",".join(AGENTS), "--out", str(root / "results")]
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", *argv],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    found = list((root / "results").glob("*.jsonl"))
    assert len(found) == 1, done.stderr[-3000:]
    return found[0]


@pytest.fixture(scope="module")
def evalrelay(evalrelay_results: Path) -> dict[Trial, dict[str, Any]]:
    """evalrelay's result lines, by task and agent."""
    lines = read_jsonl(evalrelay_results)
    trials = {(_folder_of(str(line["case_id"])), str(line["target"])): line for line in lines}
    assert len(trials) == len(lines) == 2 * len(list(CORPUS.glob("*/task.toml")))
    return trials


def _folder_of(case_id: str) -> str:
    """The corpus folder of a task by its name (`evalrelay/<folder>`)."""
    return case_id.split("/")[-1]


def harbor_rewards(trial: dict[str, Any]) -> dict[str, float]:
    """A Harbor trial's rewards; none (no reward file, a verifier timeout) is empty."""
    verifier = trial.get("verifier_result") or {}
    return {k: float(v) for k, v in (verifier.get("rewards") or {}).items()}


def harbor_exception(trial: dict[str, Any]) -> str | None:
    exceptions = [trial.get("exception_info")]
    exceptions += [s.get("exception_info") for s in trial.get("step_results") or []]
    kinds = [e["exception_type"] for e in exceptions if e]
    return kinds[0] if kinds else None


def step_names(task: str) -> list[str]:
    config = tomllib.loads((CORPUS / task / "task.toml").read_text())
    return [step["name"] for step in config.get("steps", [])]


PARITY_TRIALS = sorted(
    (p.name, agent)
    for p in CORPUS.iterdir()
    if (p / "task.toml").is_file() and p.name != OFFLINE
    for agent in AGENTS
)


@pytest.mark.parametrize(("task", "agent"), PARITY_TRIALS, ids=["-".join(t) for t in PARITY_TRIALS])
def test_same_rewards_as_harbor(
    harbor: dict[Trial, dict[str, Any]],
    evalrelay: dict[Trial, dict[str, Any]],
    task: str,
    agent: str,
) -> None:
    """The trial's rewards (every name), its score, its steps' rewards and where a
    min_reward stopped it are Harbor's."""
    theirs, ours = harbor[(task, agent)], evalrelay[(task, agent)]
    rewards = harbor_rewards(theirs)
    assert (ours["rewards"] or {}) == rewards
    assert ours["score"] == rewards.get("reward", 0.0)

    names = step_names(task)
    if not names:
        assert ours["steps"] is None and theirs.get("step_results") is None
        return
    ran = [(s["step_name"], harbor_rewards(s)) for s in theirs["step_results"]]
    assert [(s["name"], s["rewards"]) for s in ours["steps"] if not s["skipped"]] == ran
    assert [s["name"] for s in ours["steps"]] == names
    assert [s["name"] for s in ours["steps"] if s["skipped"]] == names[len(ran) :]


@pytest.mark.parametrize(("task", "agent"), PARITY_TRIALS, ids=["-".join(t) for t in PARITY_TRIALS])
def test_same_outcome_as_harbor(
    harbor: dict[Trial, dict[str, Any]],
    evalrelay: dict[Trial, dict[str, Any]],
    task: str,
    agent: str,
) -> None:
    """Harbor's exception for the trial is evalrelay's status: a timeout of either phase is
    `timeout`; no reward file is `ok` with score 0 (the verifier ran); none is `ok`."""
    theirs, ours = harbor[(task, agent)], evalrelay[(task, agent)]
    expected = {
        None: "ok",
        "RewardFileNotFoundError": "ok",
        "AgentTimeoutError": "timeout",
        "VerifierTimeoutError": "timeout",
    }[harbor_exception(theirs)]
    assert ours["status"] == expected


def test_the_corpus_is_what_harbor_expects(harbor: dict[Trial, dict[str, Any]]) -> None:
    """Harbor's own check of the corpus: the oracle scores 1 on every task it can run, and
    nop scores less (the early stops, timeouts and partial rewards are the corpus's)."""
    for task, agent in PARITY_TRIALS:
        reward = harbor_rewards(harbor[(task, agent)]).get("reward", 0.0)
        assert reward == 1.0 if agent == "oracle" else reward < 1.0, (task, agent, reward)


def test_no_network_task_under_evalrelay(
    evalrelay: dict[Trial, dict[str, Any]], tmp_path: Path
) -> None:
    """Harbor refuses the no-network task here (its Docker environment enforces the mode
    through an egress sidecar from Docker Hub, and there is no registry); evalrelay runs
    it without a network: the oracle scores 1, which its tests give only when the
    container has no interface but lo and no default route; nop scores 0."""
    with pytest.raises(RuntimeError) as refused:
        harbor_job([CORPUS / OFFLINE], ["oracle"], tmp_path, "offline", 1)
    assert "network_mode='no-network' is not supported" in str(refused.value)
    assert evalrelay[(OFFLINE, "oracle")]["status"] == "ok"
    assert evalrelay[(OFFLINE, "oracle")]["rewards"] == {"reward": 1.0}
    assert evalrelay[(OFFLINE, "nop")]["rewards"] == {"reward": 0.0}


GRADED = ("verifier/", "artifacts/", "steps/")
"""Where the trial files the export must hold as Harbor does live: the reward files, the
tests' output and the collected artifacts, of the trial or of each step. Harbor's own
bookkeeping (`trial.log`, `lock.json`, `exception.txt`, artifact manifests) and its
oracle's log (`agent/oracle.txt`) are not compared."""


def graded_files(trial_dir: Path) -> dict[str, bytes]:
    files = {}
    for path in trial_dir.rglob("*"):
        name = path.relative_to(trial_dir).as_posix()
        if not path.is_file() or not name.startswith(GRADED) or path.name == "manifest.json":
            continue
        if "/agent/" not in name:
            files[name] = path.read_bytes()
    return files


def same_file(name: str, mine: bytes, real: bytes) -> bool:
    """The same bytes; the tests' output the same lines, in any order: its stdout and
    stderr go to one file, and how the two interleave is the pipes' timing."""
    if name.endswith("test-stdout.txt"):
        return sorted(mine.splitlines()) == sorted(real.splitlines())
    return mine == real


def trial_dirs(job_dir: Path) -> dict[Trial, Path]:
    dirs = {}
    for path in job_dir.glob("*/result.json"):
        result = json.loads(path.read_text())
        dirs[(_folder_of(result["task_name"]), result["agent_info"]["name"])] = path.parent
    return dirs


def numbers(rewards: dict[str, Any] | None) -> dict[str, float] | None:
    return None if rewards is None else {k: float(v) for k, v in rewards.items()}


def differences(mine: Path, real: Path) -> list[str]:
    """How an exported trial folder differs from Harbor's folder of the same trial."""
    ours, theirs = (json.loads((d / "result.json").read_text()) for d in (mine, real))
    found = []
    if sorted(ours) != sorted(theirs):
        found.append(f"result.json fields {sorted(set(ours) ^ set(theirs))}")
    if not set(ours["config"]) <= set(theirs["config"]):
        found.append(f"config fields {sorted(set(ours['config']) - set(theirs['config']))}")
    for doc in (ours, theirs):
        doc["_rewards"] = numbers((doc["verifier_result"] or {}).get("rewards"))
        doc["_steps"] = [
            (s["step_name"], numbers((s["verifier_result"] or {}).get("rewards")))
            for s in doc["step_results"] or []
        ]
    for field in ("_rewards", "_steps"):
        if ours[field] != theirs[field]:
            found.append(f"{field[1:]}: {ours[field]} against Harbor's {theirs[field]}")
    if harbor_exception(ours) != harbor_exception(theirs):
        found.append(f"exception {harbor_exception(ours)} against {harbor_exception(theirs)}")
    our_files, their_files = graded_files(mine), graded_files(real)
    for name, content in sorted(their_files.items()):
        if name not in our_files:
            found.append(f"no {name}")
        elif not same_file(name, our_files[name], content):
            found.append(f"{name} differs")
    extra = [n for n in our_files if n not in their_files and "/reward." in f"/{n}"]
    found += [f"{name}, which Harbor has not" for name in sorted(extra)]
    return found


def test_export_lays_out_the_trials_as_harbor_does(
    harbor_dir: Path, evalrelay_results: Path
) -> None:
    """`evalrelay export --harbor` of evalrelay's run (the tasks Harbor ran) against
    Harbor's job folder: per trial the same `result.json` fields, rewards, step results
    and exception; every reward, test output and artifact file Harbor wrote, at the same
    path with the same content, and no reward file Harbor did not write; per agent the
    same mean in the job's `result.json`."""
    same_tasks = evalrelay_results.with_name("parity.jsonl")
    lines = evalrelay_results.read_text().splitlines(keepends=True)
    same_tasks.write_text("".join(x for x in lines if f'"evalrelay/{OFFLINE}"' not in x))
    out = evalrelay_results.parent.parent / "exported"
    done = subprocess.run(
        [sys.executable, "-m", "evalrelay", "export", str(same_tasks), "--harbor", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ours, theirs = trial_dirs(out / "parity"), trial_dirs(harbor_dir)
    assert sorted(ours) == sorted(theirs) == PARITY_TRIALS
    found = {key: differences(ours[key], theirs[key]) for key in PARITY_TRIALS}
    assert {key: diff for key, diff in found.items() if diff} == {}

    def means(job_dir: Path) -> dict[str, dict[str, float]]:
        """The job's mean metric by agent (its dataset's name is the folder's)."""
        evals = json.loads((job_dir / "result.json").read_text())["stats"]["evals"]
        return {key.split("__")[0]: value["metrics"][0] for key, value in evals.items()}

    mine, real = means(out / "parity"), means(harbor_dir)
    assert sorted(mine) == sorted(real) == sorted(AGENTS)
    for agent in AGENTS:
        assert mine[agent] == pytest.approx(real[agent]), agent
