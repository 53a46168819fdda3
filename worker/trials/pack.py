"""A trial's files, packed for the results folder: one tar.gz in Redis by its hash, which
the collector unpacks under `<results>/<trial_dir>/` (`bridge.results.trial_files`)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterable
from pathlib import Path

import redis

from evalrelay.bridge.masking import mask
from evalrelay.bridge.queue.blobs import store_bytes

MAX_BYTES = 32 * 1024 * 1024
"""A trial's files kept at most; past it the largest are left out (the result says so)."""
KEEP_SECONDS = 7 * 24 * 3600


def pack(
    client: redis.Redis, folder: Path, trial_dir: str, secrets: Iterable[str] = ()
) -> tuple[str | None, list[str]]:
    """The hash of the files' tar.gz (None when there are none), and their paths relative
    to the results folder; a file that would take the total past `MAX_BYTES` is left out,
    smallest kept first. Text files are masked of the secrets this worker holds (the
    variables `secrets` names among them), as a result is: an agent may print its key."""
    files = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    for path in files:
        _mask_file(path, secrets)
    kept, total = [], 0
    for path in files:
        total += path.stat().st_size
        if total > MAX_BYTES:
            break
        kept.append(path)
    if not kept:
        return None, []
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for path in sorted(kept):
            tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    names = sorted(f"{trial_dir}/{p.relative_to(folder).as_posix()}" for p in kept)
    return store_bytes(client, buffer.getvalue(), KEEP_SECONDS), names


def _mask_file(path: Path, secrets: Iterable[str]) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return  # not text: kept as it is
    hidden = mask(text, secrets)
    if hidden != text:
        path.write_text(hidden, encoding="utf-8")
