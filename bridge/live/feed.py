"""What `evalrelay serve`'s pages poll, as JSON: one model per payload, so the page's
script and the tests read the same fields the server writes."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

State = Literal["running", "finished", "cancelled", "file only", "out of reach"]
"""`cancelled`: ended by `evalrelay cancel`, its jobs not started given `cancelled` lines
(while they arrive, and once all are in)."""
"""`file only`: Redis does not know the campaign, its results file is all there is;
`out of reach`: Redis knew it, and cannot be asked now."""


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RedisState(Payload):
    reachable: bool
    message: str | None = None
    """Why Redis cannot be asked, when it cannot."""


class CampaignRow(Payload):
    campaign_id: str
    name: str | None = None
    done: int
    total: int | None = None
    """Jobs announced; none for a campaign known only by its file."""
    counts: dict[str, int] = Field(default_factory=dict)
    state: State
    created_at: datetime | None = None
    targets: list[str] = Field(default_factory=list)
    results_in: str
    """`where_results_are`: the host and path of the results file, for people."""
    paused: str | None = None
    """Why the campaign is paused (`budget reached` when its budget is spent), when it is."""


class WorkerRow(Payload):
    name: str
    queues: list[str]
    host: str | None = None
    seen_seconds_ago: float


class CampaignsFeed(Payload):
    """`/api/campaigns`: what the index page shows."""

    redis: RedisState
    results_folder: str
    campaigns: list[CampaignRow]
    workers: list[WorkerRow]
    silent_workers: int = 0
    """Workers not heard from lately, left out as `evalrelay status` leaves them out."""
    cannot_write: list[str] = Field(default_factory=list)
    """A sentence for each collector the disk refuses (`bridge.results.write_errors`)."""
    lost: list[str] = Field(default_factory=list)
    """A sentence for each campaign the results folder keeps and Redis lost."""


class Failure(Payload):
    job_id: str
    case_id: str
    repeat: int
    target: str
    status: str
    why: str


class CampaignFeed(Payload):
    """`/api/campaigns/{id}`: what the live panel above a campaign's report shows."""

    redis: RedisState
    campaign: CampaignRow
    queues: list[str]
    workers: list[WorkerRow]
    """Live workers serving one of the campaign's queues."""
    cannot_write: list[str] = Field(default_factory=list)
    """A sentence for each collector the disk refuses this campaign's file."""
    file_here: bool
    """The results file is on this host: the report is made from it."""
    failures: list[Failure]
    """The newest failed results in the bytes read since `after`, oldest first."""
    failed: int
    """Every failed result in those bytes, listed or not."""
    offset: int
    """Where the next poll reads from (`?after=`)."""
    file: str | None
    """Which file `offset` is in (`?file=`): after `retry` rewrites it, reading starts over."""
    more: bool
    """Complete lines remain past `offset`: poll again at once."""
    report_results: int | None
    """Results in the newest report made for the page; none until one is made."""
    report_current: bool
    """That report was made from the file as it is now, and no newer one is being made."""
    reload_seconds: float
    """How long a page stays before it reloads itself for a newer report."""
