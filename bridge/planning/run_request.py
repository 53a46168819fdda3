"""What a run is asked for, apart from what runs it: `evalrelay run` builds one before it
imports the rest (`bridge.queue.starting`), `evalrelay.run` from its arguments."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from evalrelay.bridge.evalfile.limits import MAX_REPEATS


class RunRequest(BaseModel):
    """What a run is asked for: `evalrelay run`'s options, as the Python API takes them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: list[Path] = Field(min_length=1)
    """Eval files, or folders of them, run as one campaign."""
    targets: list[str] = Field(default_factory=list)
    """Every case runs on each; none: each case's own target."""
    cases: list[str] = Field(default_factory=list)
    """Globs of case ids to run (none: all)."""
    tags: list[str] = Field(default_factory=list)
    name: str | None = None
    repeats: int | None = Field(default=None, ge=1, le=MAX_REPEATS)
    out: Path | None = None
    """Results folder; none: the project's `results_dir`."""
    local_worker: bool = False
    """With `EVALRELAY_REDIS_URL` set, run a worker in this process's child as well."""
    cache_ttl_seconds: int | None = Field(default=None, ge=1)
    """Answer repeated API requests from Redis's response cache, for this long."""
    concurrency: int = Field(default=16, ge=1)
    """Jobs at once in the in-process worker."""
    budget_usd: float | None = Field(default=None, gt=0)
