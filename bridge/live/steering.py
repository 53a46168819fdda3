"""`serve`'s steering endpoints: pause, unpause or cancel a campaign from the browser.

`POST /api/campaigns/{id}/{pause|unpause|cancel}`. A page elsewhere must not press them:
each request carries the `X-Evalrelay-Steer` header (a browser sends no custom header
across origins without a preflight, which this server never grants), and an `Origin`,
when sent, must name the host asked. Beyond loopback, it also carries
`Authorization: Bearer <EVALRELAY_SERVE_TOKEN>` (`bridge.live.access`: serve does not start
beyond loopback without it).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from urllib.parse import urlsplit

import redis
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from evalrelay.bridge.errors import EvalrelayError
from evalrelay.bridge.live.access import TOKEN_VARIABLE
from evalrelay.bridge.queue.budget import BUDGET_REASON, budget_of
from evalrelay.bridge.queue.campaigns import load_info
from evalrelay.bridge.queue.celery_queue import JobQueue
from evalrelay.bridge.queue.steering import cancel_campaign, pause, paused, refuse_finished, unpause

STEER_HEADER = "X-Evalrelay-Steer"
ACTIONS = ("pause", "unpause", "cancel")


class Steered(BaseModel):
    campaign_id: str
    action: str
    detail: str


class Refused(BaseModel):
    detail: str


def _answer(payload: BaseModel, status: int) -> Response:
    return Response(payload.model_dump_json(), status, media_type="application/json")


class Steering:
    def __init__(
        self, client: redis.Redis, queue: Callable[[], JobQueue], *, loopback: bool, token: str
    ) -> None:
        self.client, self.queue, self.loopback = client, queue, loopback
        self.token = token

    def refusal(self, request: Request) -> str | None:
        """Why this request may not steer, or None."""
        if request.headers.get(STEER_HEADER) != "1":
            return f"steering requests carry the header {STEER_HEADER}: 1"
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host"):
            return "steering from another site's page is refused"
        if self.loopback:
            return None
        if not self.token:
            return f"serve listens beyond loopback: steering needs {TOKEN_VARIABLE} set"
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return "steering needs the serve token (Authorization: Bearer ...)"
        return None

    async def steer(self, request: Request) -> Response:
        campaign_id, action = request.path_params["campaign_id"], request.path_params["action"]
        if action not in ACTIONS:
            return _answer(Refused(detail=f"unknown action {action!r}"), 404)
        if why := self.refusal(request):
            return _answer(Refused(detail=why), 403)
        try:
            detail = await run_in_threadpool(self._do, campaign_id, action)
        except EvalrelayError as exc:
            return _answer(Refused(detail=str(exc)), 409)
        return _answer(Steered(campaign_id=campaign_id, action=action, detail=detail), 200)

    def _do(self, campaign_id: str, action: str) -> str:
        load_info(self.client, campaign_id)  # raises, naming it, when unknown
        refuse_finished(self.client, campaign_id, action)
        by = "evalrelay serve"
        if action == "pause":
            done = pause(self.client, campaign_id, "paused from serve", by)
            return "paused" if done else "paused already"
        if action == "cancel":
            self.queue().send(cancel_campaign(self.client, campaign_id, by))
            return "cancelled"
        budget, held = budget_of(self.client, campaign_id), paused(self.client, campaign_id)
        reached = held is not None and held.reason == BUDGET_REASON
        if budget is not None and (budget.spent_usd >= budget.limit_usd or reached):
            raise EvalrelayError(
                f"campaign {campaign_id} spent its budget: "
                f"`evalrelay unpause {campaign_id} --budget-usd N` gives it a higher one"
            )
        again = unpause(self.client, campaign_id, by)
        self.queue().send(again)
        return f"{len(again)} jobs sent again"
