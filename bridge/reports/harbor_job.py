"""A campaign's container-task trials as the job folder real Harbor writes, for its viewer.

`OUT/<campaign>/` holds the job's `config.json` and `result.json` (per agent and dataset:
the trials, the errors, the mean reward under `stats.evals[...].metrics`, which trials got
which reward and which exception), then a folder per trial, `<task>__<id>/`, with its
`config.json`, `result.json`, and the files the trial left as evalrelay keeps them under
the results folder (`agent/`, `verifier/` with `test-stdout.txt` and the reward file,
`artifacts/`, and `steps/<name>/` of a multi-step task), plus the agent's trajectory in
ATIF as `agent/trajectory.json`. Results that are not container-task trials are left out
and counted. The mean follows Harbor's job: over the trials with a valid reward only (a trial whose
tests wrote none, or whose verifier overran its time, is left out, as Harbor leaves it
out), and with several reward names a mean per name (a trial lacking one counting 0).
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from evalrelay.bridge.reports.atif import atif_trajectory
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.harbor_trial import export_id, trial_document
from evalrelay.bridge.results.result import Result


class HarborExport(NamedTuple):
    job_dir: Path
    trials: int
    left_out: int
    """Results that were not container-task trials."""


def write_harbor_job(
    campaign: CampaignResults, out: Path, target: str | None = None
) -> HarborExport:
    """Write the campaign's trials (or `target`'s) under `out/<campaign id>/` as a Harbor
    job folder."""
    job_dir = out / campaign.campaign_id
    job_id = export_id(campaign.campaign_id)
    documents: list[dict[str, Any]] = []
    left_out = 0
    for result in campaign.results(target):
        if result.rewards is None and result.timings is None:
            left_out += 1
            continue
        documents.append(_write_trial(result, job_dir, job_id, campaign.path.parent))
    job_dir.mkdir(parents=True, exist_ok=True)
    _write_json(job_dir / "config.json", _job_config(campaign.campaign_id, out, documents))
    _write_json(job_dir / "result.json", job_document(job_id, documents))
    return HarborExport(job_dir, len(documents), left_out)


def job_document(job_id: str, trials: list[dict[str, Any]]) -> dict[str, Any]:
    """The job's `result.json`, as Harbor's `JobResult` reads it."""
    starts = [t["started_at"] for t in trials] or [datetime.now(UTC).isoformat()]
    ends = [t["finished_at"] for t in trials] or starts
    evals: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for trial in trials:
        evals[f"{trial['agent_info']['name']}__{trial['source'] or 'adhoc'}"].append(trial)
    errored = sum(1 for t in trials if t["exception_info"] is not None)
    return {
        "schema_version": 1,
        "id": job_id,
        "started_at": min(starts),
        "updated_at": max(ends),
        "finished_at": max(ends),
        "n_total_trials": len(trials),
        "stats": {
            "n_completed_trials": len(trials),
            "n_errored_trials": errored,
            "n_running_trials": 0,
            "n_pending_trials": 0,
            "n_cancelled_trials": 0,
            "n_retries": 0,
            "evals": {key: _eval_stats(group) for key, group in sorted(evals.items())},
            **_token_totals(trials),
        },
    }


def mean_rewards(rewards: list[dict[str, float] | None]) -> dict[str, float]:
    """Harbor's `mean` metric: one name gives `{"mean": x}`, several a mean per name; a
    trial without rewards counts 0 (for every name)."""
    names = sorted({name for r in rewards if r for name in r})
    if not rewards:
        return {"mean": 0.0}
    if len(names) <= 1:
        values = [next(iter(r.values()), 0.0) if r else 0.0 for r in rewards]
        return {"mean": sum(values) / len(values)}
    return {n: sum((r or {}).get(n, 0.0) for r in rewards) / len(rewards) for n in names}


def _eval_stats(trials: list[dict[str, Any]]) -> dict[str, Any]:
    rewards = [_valid_rewards(t) for t in trials]
    graded = [r for r in rewards if r]
    reward_stats: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    exception_stats: dict[str, list[str]] = defaultdict(list)
    for trial, valid in zip(trials, rewards, strict=True):
        for name, value in (valid or {}).items():
            reward_stats[name][repr(value)].append(trial["trial_name"])
        if trial["exception_info"] is not None:
            exception_stats[trial["exception_info"]["exception_type"]].append(trial["trial_name"])
    return {
        "n_trials": len(graded),
        "n_errors": sum(1 for t in trials if t["exception_info"] is not None),
        "metrics": [mean_rewards(list(graded))] if graded else [],
        "pass_at_k": {},
        "reward_stats": reward_stats,
        "exception_stats": exception_stats,
    }


def _token_totals(trials: list[dict[str, Any]]) -> dict[str, float | int | None]:
    """The job's tokens and cost, summed over the trials that report them (null if none)."""
    totals: dict[str, float | int | None] = {}
    for field in ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd"):
        values = [(t["agent_result"] or {}).get(field) for t in trials]
        known = [v for v in values if v is not None]
        totals[field] = sum(known) if known else None
    return totals


def _valid_rewards(trial: dict[str, Any]) -> dict[str, float] | None:
    """A trial's rewards where Harbor counts them: an agent timeout keeps its reward, the
    other exceptions (a verifier timeout, no reward file) leave none."""
    verifier = trial["verifier_result"]
    exception = trial["exception_info"]
    if verifier is None or (exception and exception["exception_type"] != "AgentTimeoutError"):
        return None
    return verifier["rewards"] or None


def _write_trial(result: Result, job_dir: Path, job_id: str, results_dir: Path) -> dict[str, Any]:
    document = trial_document(result, job_id, "")
    trial_dir = job_dir / document["trial_name"]
    document["trial_uri"] = trial_dir.resolve().as_uri()
    _copy_trial_files(result, results_dir, trial_dir)
    for folder in ("agent", "verifier", "artifacts"):
        if result.steps is None:
            (trial_dir / folder).mkdir(parents=True, exist_ok=True)
    if result.steps is None and result.rewards and not _has_reward_file(trial_dir / "verifier"):
        _write_reward_file(trial_dir / "verifier", result.rewards)
    trajectory = atif_trajectory(result)
    if trajectory is not None:
        _write_json(trial_dir / "agent" / "trajectory.json", trajectory)
    _write_json(trial_dir / "config.json", document["config"])
    _write_json(trial_dir / "result.json", document)
    return document


def _copy_trial_files(result: Result, results_dir: Path, trial_dir: Path) -> None:
    """The trial's files from the results folder, where the collector put them."""
    folder = result.artifacts.get("trial_dir")
    trial_dir.mkdir(parents=True, exist_ok=True)
    if not isinstance(folder, str):
        return
    inner = PurePosixPath(folder)
    if inner.is_absolute() or ".." in inner.parts:
        return
    source = results_dir / inner
    if not source.is_dir():
        return
    shutil.copytree(source, trial_dir, dirs_exist_ok=True)
    if result.steps is not None:
        # A multi-step trial's files are its steps' (steps/<name>/...): Harbor keeps no
        # verifier/ at the top, where evalrelay keeps the trial's mean reward.
        shutil.rmtree(trial_dir / "verifier", ignore_errors=True)


def _has_reward_file(verifier: Path) -> bool:
    return (verifier / "reward.txt").is_file() or (verifier / "reward.json").is_file()


def _write_reward_file(verifier: Path, rewards: dict[str, float]) -> None:
    verifier.mkdir(parents=True, exist_ok=True)
    if list(rewards) == ["reward"]:
        (verifier / "reward.txt").write_text(f"{rewards['reward']}\n")
    else:
        _write_json(verifier / "reward.json", rewards)


def _job_config(name: str, out: Path, trials: list[dict[str, Any]]) -> dict[str, Any]:
    agents = sorted({t["agent_info"]["name"] for t in trials})
    tasks = sorted({t["task_name"] for t in trials})
    return {
        "schema_version": 1,
        "job_name": name,
        "jobs_dir": str(out),
        "agents": [{"name": agent} for agent in agents],
        "tasks": [{"path": task} for task in tasks],
    }


def _write_json(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=4) + "\n")
