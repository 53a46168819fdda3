"""`evalrelay gc`: remove from Redis what is past its retention or owned by nobody."""

from __future__ import annotations

import click

from evalrelay.bridge.cli.terminal import counted, echo
from evalrelay.bridge.queue.gc import collect_garbage
from evalrelay.bridge.queue.runtime import open_runtime
from evalrelay.bridge.results.retention import RETENTION_SECONDS


@click.command("gc")
def gc_command() -> None:
    """Remove campaigns older than the retention (EVALRELAY_RETENTION_DAYS, default 30),
    compact complete campaigns no collector compacted, and remove stored jobs whose campaign
    is gone (a lone `done` mark expires with its time to live). Results files are never
    touched."""
    with open_runtime(worker=False) as runtime:
        removed = collect_garbage(runtime.client)
    echo(
        f"removed {counted(removed.campaigns, 'campaign')} past the retention of "
        f"{RETENTION_SECONDS / 86400:g} days, compacted {counted(removed.compacted, 'campaign')}, "
        f"removed {counted(removed.jobs, 'per-job key')} of campaigns no longer known"
    )
