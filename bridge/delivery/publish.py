"""Putting a result on its campaign's stream, at most once per job attempt, masked of the
secrets this worker holds: what reaches the stream reaches the JSONL, the reports and
Redis's own files."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from evalrelay.bridge.delivery.round_trips import RoundTrips
from evalrelay.bridge.done_marks import done_mark, new_copy
from evalrelay.bridge.keys import (
    compacted_key,
    done_key,
    holders_key,
    inflight_key,
    lease_key,
    outstanding_key,
    paid_again_key,
    results_stream_key,
    tallied_targets_key,
    target_tally_key,
)
from evalrelay.bridge.lua_scripts import PUBLISH
from evalrelay.bridge.masking import masked_json
from evalrelay.bridge.results.result import Result

log = logging.getLogger(__name__)

DONE_TTL_SECONDS = 30 * 24 * 3600

PUBLISHED, ALREADY_PUBLISHED, LATE_COPY = "published", "already published", "late copy"
"""What a publication did: appended the result (or found it appended by an earlier send of
itself); found this attempt (or a later one) put in the stream by another; or found the
campaign complete and compacted, its file whole (a late copy, dropped)."""

_OUTCOMES = {1: PUBLISHED, 0: ALREADY_PUBLISHED, 2: LATE_COPY}


async def publish(
    rounds: RoundTrips,
    result: Result,
    queue: str,
    lease_token: str = "",
    message_id: str = "",
    called: bool = True,
) -> str:
    """Append the result unless this attempt (or a later one) is already published, or its
    campaign is compacted; say which (`PUBLISHED`...). In the same round trip, forget that
    the worker holds `message_id` (`bridge.delivery.holders`). Sent with the loop's other
    scripts (`rounds`), and tried again while Redis is out of reach: the script is safe
    to repeat."""
    call = Publication.of(result, queue, lease_token, message_id, called)
    return outcome_of(await rounds.run_through_outage(PUBLISH, call.keys, call.args, call.waiting))


def outcome_of(reply: object) -> str:
    """`PUBLISH`'s reply in words."""
    return _OUTCOMES[int(str(reply))]


@dataclass(frozen=True)
class Publication:
    """The keys and arguments of one `PUBLISH`, to run alone or in a pipeline with others'."""

    job_id: str
    keys: tuple[str, ...]
    args: tuple[str | int, ...]

    @classmethod
    def of(
        cls,
        result: Result,
        queue: str,
        lease_token: str = "",
        message_id: str = "",
        called: bool = True,
    ) -> Publication:
        """`called`: whether making the result called the target (a job that never started
        did not; nor does a regrade, which grades a recorded answer)."""
        keys = (
            done_key(result.campaign_id, result.job_id),
            results_stream_key(result.campaign_id),
            lease_key(result.job_id),
            inflight_key(),
            outstanding_key(queue),
            holders_key(),
            target_tally_key(result.target),
            tallied_targets_key(),
            compacted_key(result.campaign_id),
            paid_again_key(result.campaign_id),
        )
        args = (
            result.attempt,
            result.job_id,
            masked_json(result),
            DONE_TTL_SECONDS,
            lease_token,
            message_id,
            result.target,
            result.status.value,
            repr(result.cost.usd) if result.cost else "",
            "1" if called and result.regraded_from is None else "0",
            str(done_mark(result.attempt, new_copy())),
        )
        return cls(result.job_id, keys, args)

    def waiting(self, error: Exception) -> None:
        log.warning("job %s: Redis out of reach to publish its result (%s); retrying",
                    self.job_id, error)  # fmt: skip
