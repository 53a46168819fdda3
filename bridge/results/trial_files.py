"""A container task's trial files, unpacked under the results folder by the collector.

The worker packs what a trial left (agent and verifier logs, artifacts) as one tar.gz in
Redis (`worker.trials.pack`); the result names it (`artifacts.bundle`) and the folder it
belongs in (`artifacts.trial_dir`, relative to the results file's folder). Unpacking is
done before the result's line is written and may be done twice (a collector that took
the campaign over): it writes the same files again.
"""

from __future__ import annotations

import base64
import io
import logging
import tarfile
from pathlib import Path, PurePosixPath

import redis

from evalrelay.bridge.keys import bytes_key
from evalrelay.bridge.results.result import Result

log = logging.getLogger(__name__)


def unpack_trial_files(client: redis.Redis, out_dir: Path, result: Result) -> None:
    """The result's trial files into `out_dir/<trial_dir>/`; a missing bundle is logged
    (the line is written all the same: the reward is in it)."""
    bundle, folder = result.artifacts.get("bundle"), result.artifacts.get("trial_dir")
    if not isinstance(bundle, str) or not isinstance(folder, str):
        return
    inner = PurePosixPath(folder)
    if inner.is_absolute() or ".." in inner.parts:
        log.error("job %s: trial folder %r leaves the results folder", result.job_id, folder)
        return
    text = client.get(bytes_key(bundle))
    if text is None:
        log.warning("job %s: its trial files are no longer in Redis", result.job_id)
        return
    target = out_dir / inner
    target.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(base64.b64decode(text)), mode="r:gz") as tar:
            tar.extractall(target, filter="data")
    except (tarfile.TarError, ValueError) as exc:  # a worker's bad archive: keep the line
        log.error("job %s: its trial files could not be unpacked: %s", result.job_id, exc)
