"""Setting a campaign's chosen lines aside, so that `retry` can run those jobs again.

The lines move to `<campaign>.attempts.jsonl`, Redis's record forgets them, and their
entries leave the result stream: a collector that later copies into a new file what the
stream holds (`bridge.results.collected.copy_from_stream`) must find the new attempt, not
the one set aside. Only the process holding the campaign's collector lease may do this:
the live collector itself, or `retry` once no collector writes the campaign.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, cast

import redis

from evalrelay.bridge.keys import results_stream_key
from evalrelay.bridge.results.collected import SCAN_PAGE, forget_results
from evalrelay.bridge.results.result import Result, Status
from evalrelay.bridge.results.results_file import read_results, remove_results


def set_aside(
    client: redis.Redis, campaign_id: str, path: Path, statuses: Collection[Status]
) -> list[Result]:
    """Move the lines of `path` whose status is one of `statuses` aside; the results moved."""
    chosen = {r.job_id for r in read_results(path) if r.status in statuses}
    if not chosen:
        return []
    moved = remove_results(path.parent, campaign_id, chosen)
    forget_results(client, campaign_id, moved)  # those jobs have no line now
    drop_from_stream(client, campaign_id, {r.job_id for r in moved})
    return moved


def drop_from_stream(client: redis.Redis, campaign_id: str, job_ids: set[str]) -> int:
    """Delete the stream entries of these jobs' results; returns how many went."""
    stream, start, dropped = results_stream_key(campaign_id), "-", 0
    while job_ids:
        page = cast(list[Any], client.xrange(stream, start, "+", count=SCAN_PAGE))
        if not page:
            break
        gone = [entry_id for entry_id, fields in page if fields.get("job_id") in job_ids]
        if gone:
            dropped += int(client.xdel(stream, *gone))
        start = "(" + page[-1][0]
    return dropped
