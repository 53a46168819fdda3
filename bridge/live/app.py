"""The live view as a Starlette app: the campaigns, each campaign's report with its live
panel, and the JSON those pages poll.

Every answer that reads Redis or a file is worked out in a thread, so a slow disk or a
Redis out of reach never holds the other requests; reports are made in threads of their
own (`ReportCache`).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import redis
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalrelay.bridge.live.access import TokenGate
from evalrelay.bridge.live.campaigns import Campaigns, Located, is_campaign_id
from evalrelay.bridge.live.failures import new_failures
from evalrelay.bridge.live.feed import CampaignFeed, CampaignsFeed, Payload
from evalrelay.bridge.live.metrics import registry_for
from evalrelay.bridge.live.pages import index_page, message_page, remote_page
from evalrelay.bridge.live.report_cache import Report, ReportCache, ReportError
from evalrelay.bridge.live.steering import Steering
from evalrelay.bridge.live.workers import live_workers, serving
from evalrelay.bridge.queue.campaigns import list_campaigns
from evalrelay.bridge.queue.rebuild import LostCampaign, lost_campaigns
from evalrelay.bridge.results.write_errors import write_errors

LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]
"""The Host headers a server bound to loopback answers: a page elsewhere that points a name
of its own at 127.0.0.1 (DNS rebinding) gets 400, not the results."""

NO_STORE = {"Cache-Control": "no-store"}

PAGE_WAIT_SECONDS = 2.0
"""How long a campaign's page waits for a newer report under way before showing the last."""

SECURITY_HEADERS = {
    # Nothing served here loads anything from elsewhere, nor may be framed elsewhere.
    "Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class FeedQuery(BaseModel):
    """`/api/campaigns/{id}?after=OFFSET&file=ID`: where the last poll stopped."""

    model_config = ConfigDict(extra="forbid")

    after: int | None = Field(default=None, ge=0)
    file: str | None = Field(default=None, max_length=64)


class SecurityHeaders:
    """`SECURITY_HEADERS` on every answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


class LiveView:
    """The handlers, over the campaigns and the reports' cache."""

    def __init__(self, campaigns: Campaigns, cache: ReportCache) -> None:
        self.campaigns = campaigns
        self.cache = cache
        self.link = campaigns.link

    async def metrics(self, request: Request) -> Response:
        """Prometheus's text format, read from Redis now; 503 while Redis is out of reach."""
        text = await run_in_threadpool(self.link.ask, metrics_text)
        if text is None:
            message = f"Redis is out of reach: {self.link.state().message}\n"
            return Response(message, 503, media_type="text/plain", headers=NO_STORE)
        return Response(text, media_type=CONTENT_TYPE_LATEST, headers=NO_STORE)

    async def index(self, request: Request) -> Response:
        feed = await run_in_threadpool(self.all_campaigns)
        return HTMLResponse(index_page(feed), headers=NO_STORE)

    async def campaigns_feed(self, request: Request) -> Response:
        return _json(await run_in_threadpool(self.all_campaigns))

    async def campaign_feed(self, request: Request) -> Response:
        try:
            query = FeedQuery.model_validate(dict(request.query_params))
        except ValidationError as exc:
            return Response(
                exc.json(include_url=False), 400, media_type="application/json", headers=NO_STORE
            )
        campaign_id = request.path_params["campaign_id"]
        found = await run_in_threadpool(self.campaigns.locate, campaign_id)
        if found is None:
            return await self.not_found(request)
        return _json(await run_in_threadpool(self.one_campaign, found, query))

    async def page(self, request: Request) -> Response:
        campaign_id = request.path_params["campaign_id"]
        found = await run_in_threadpool(self.campaigns.locate, campaign_id)
        if found is None:
            return await self.not_found(request)
        if found.file is None:
            return HTMLResponse(remote_page(campaign_id), headers=NO_STORE)
        report, making = await run_in_threadpool(self.cache.page, campaign_id, found.file)
        if making is not None:
            report = await _newer(making, report)
        if report is None:
            known = await run_in_threadpool(self.campaigns.known_ids)
            why = self.cache.error(campaign_id) or "it is being made; reload in a moment"
            message = f"The report of {campaign_id} could not be made from {found.file}: {why}"
            return HTMLResponse(message_page("No report", message, known), 500, headers=NO_STORE)
        return FileResponse(report.page, media_type="text/html; charset=utf-8", headers=NO_STORE)

    async def part(self, request: Request) -> Response:
        """A file of the parts folder that the page loads by a relative `<script src>`."""
        campaign_id, folder, name = (
            request.path_params[key] for key in ("campaign_id", "folder", "part")
        )
        path = self.cache.part(campaign_id, folder, name) if is_campaign_id(campaign_id) else None
        if path is None:
            return await self.not_found(request)
        # A making's parts never change: its folder has a name of its own.
        cached = {"Cache-Control": "private, max-age=86400"}
        return FileResponse(path, media_type="text/javascript; charset=utf-8", headers=cached)

    async def not_found(self, request: Request, exc: Exception | None = None) -> Response:
        """404, naming the campaigns there are: as JSON under /api/, else as a page."""
        known = await run_in_threadpool(self.campaigns.known_ids)
        campaign_id = request.path_params.get("campaign_id")
        if campaign_id is None:
            message = f"There is nothing at {request.url.path}."
        elif not is_campaign_id(campaign_id):
            message = f"{campaign_id!r} is not a campaign id."
        else:
            message = (
                f"No campaign {campaign_id!r}: Redis does not know it, and the results folder "
                f"{self.campaigns.folder} holds no {campaign_id}.jsonl."
            )
        if request.url.path.startswith("/api/"):
            return _json(NotFound(detail=message, known=known), 404)
        return HTMLResponse(message_page("Not found", message, known), 404, headers=NO_STORE)

    def all_campaigns(self) -> CampaignsFeed:
        rows = self.campaigns.listing()
        workers, silent = self.link.ask(live_workers) or ([], 0)
        return CampaignsFeed(
            redis=self.link.state(),
            results_folder=str(self.campaigns.folder),
            campaigns=rows,
            workers=workers,
            silent_workers=silent,
            cannot_write=[str(e) for e in self.link.ask(write_errors) or []],
            lost=[str(lost) for lost in self.link.ask(self._lost) or []],
        )

    def _lost(self, client: redis.Redis) -> list[LostCampaign]:
        known = {info.campaign_id for info in list_campaigns(client, limit=None)}
        return lost_campaigns(self.campaigns.folder, known)

    def one_campaign(self, found: Located, query: FeedQuery) -> CampaignFeed:
        campaign_id = found.row.campaign_id
        workers, _ = self.link.ask(live_workers) or ([], 0)
        news = new_failures(found.file, query.after, query.file)
        report, current = (
            self.cache.poll(campaign_id, found.file) if found.file is not None else (None, False)
        )
        return CampaignFeed(
            redis=self.link.state(),
            campaign=found.row,
            queues=found.queues,
            workers=serving(workers, found.queues) if found.queues else workers,
            cannot_write=[
                str(e) for e in self.link.ask(write_errors) or [] if e.campaign_id == campaign_id
            ],
            file_here=found.file is not None,
            failures=news.failures,
            failed=news.failed,
            offset=news.offset,
            file=news.file,
            more=news.more,
            report_results=report.results if report else None,
            report_current=current,
            reload_seconds=self.cache.reload_seconds(report),
        )


async def _newer(making: Future[Report], last: Report | None) -> Report | None:
    """The report being made, once made; with a `last` one to show, only if that takes
    under `PAGE_WAIT_SECONDS`, else `last` (which reloads itself when the newer is ready)."""
    waited = asyncio.wrap_future(making)
    waited.add_done_callback(lambda done: done.cancelled() or done.exception())
    try:
        if last is None:
            return await waited
        return await asyncio.wait_for(asyncio.shield(waited), PAGE_WAIT_SECONDS)
    except (ReportError, TimeoutError):  # the error is said on the page when there is no last
        return last


class NotFound(Payload):
    detail: str
    known: list[str]


def metrics_text(client: redis.Redis) -> bytes:
    return generate_latest(registry_for(client))


def _json(payload: BaseModel, status: int = 200) -> Response:
    text = payload.model_dump_json()
    return Response(text, status, media_type="application/json", headers=NO_STORE)


def create_app(
    campaigns: Campaigns,
    cache: ReportCache,
    *,
    loopback: bool,
    steering: Steering | None = None,
    token: str = "",
) -> Starlette:
    """The app; `loopback`: the server is bound to a loopback address, so only requests
    naming a loopback host are answered. `steering`: the pause, unpause and cancel buttons'
    endpoints (`bridge.live.steering`). `token`: every request must show it
    (`bridge.live.access`)."""
    view = LiveView(campaigns, cache)

    async def unknown_path(request: Request, exc: Exception) -> Response:
        return await view.not_found(request, exc)

    middleware = [Middleware(SecurityHeaders)]
    if loopback:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_NAMES))
    if token:
        middleware.insert(0, Middleware(TokenGate, token=token))
    return Starlette(
        routes=[
            Route("/", view.index),
            Route("/metrics", view.metrics),
            Route("/api/campaigns", view.campaigns_feed),
            Route("/api/campaigns/{campaign_id}", view.campaign_feed),
            Route("/campaigns/{campaign_id}/", view.page),
            Route("/campaigns/{campaign_id}/{folder}/{part}", view.part),
            *(
                [Route("/api/campaigns/{campaign_id}/{action}", steering.steer, methods=["POST"])]
                if steering
                else []
            ),
        ],
        middleware=middleware,
        exception_handlers={404: unknown_path},
    )
