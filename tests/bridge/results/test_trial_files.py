"""A trial's files, unpacked by the collector under the results folder, and only there."""

from __future__ import annotations

import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import redis

from evalrelay.bridge.prompt.request import PromptRequest
from evalrelay.bridge.queue.blobs import store_bytes
from evalrelay.bridge.results.result import Result, Status
from evalrelay.bridge.results.trial_files import unpack_trial_files


def bundle(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def trial_result(artifacts: dict[str, object]) -> Result:
    now = datetime.now(UTC)
    return Result(
        campaign_id="c", job_id="j", case_id="t/x", dataset="d", target="oracle",
        status=Status.OK, raw_request=PromptRequest(question="q"), started_at=now,
        finished_at=now, duration_ms=1, worker="w", artifacts=artifacts,
    )  # fmt: skip


def test_the_bundle_is_unpacked_into_its_trial_folder(client: redis.Redis, tmp_path: Path) -> None:
    sha = store_bytes(client, bundle({"verifier/reward.txt": b"1\n", "agent/log.txt": b"hi"}))
    result = trial_result({"bundle": sha, "trial_dir": "c/x__j", "files": []})
    unpack_trial_files(client, tmp_path, result)
    unpack_trial_files(client, tmp_path, result)  # a second collector: the same files
    assert (tmp_path / "c/x__j/verifier/reward.txt").read_text() == "1\n"
    assert (tmp_path / "c/x__j/agent/log.txt").read_text() == "hi"


def test_nothing_lands_outside_the_results_folder(client: redis.Redis, tmp_path: Path) -> None:
    out = tmp_path / "results"
    out.mkdir()
    escaping = store_bytes(client, bundle({"../../escaped.txt": b"x"}))
    unpack_trial_files(client, out, trial_result({"bundle": escaping, "trial_dir": "c/t"}))
    fine = store_bytes(client, bundle({"a.txt": b"x"}))
    unpack_trial_files(client, out, trial_result({"bundle": fine, "trial_dir": "../outside"}))
    assert not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path / "outside").exists()
    assert sorted(p.name for p in tmp_path.rglob("*.txt")) == []
