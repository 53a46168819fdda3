"""The live panel `evalrelay serve` puts under a campaign report's title: progress,
workers and the newest failures, polled from `/api/campaigns/{id}`."""

from __future__ import annotations

from markupsafe import Markup

from evalrelay.bridge.live.access import TOKEN_VARIABLE
from evalrelay.bridge.live.templating import render


def feed_path(campaign_id: str) -> str:
    """Where the panel polls; ids are slugs, safe in a path as they are."""
    return f"/api/campaigns/{campaign_id}"


def live_panel(campaign_id: str, shown: int | None) -> Markup:
    """The panel of a report holding `shown` results; `shown` None on a page without a
    report (the results file is on another host): it never reloads for a newer one."""
    return render(
        "live_panel.html.j2", api=feed_path(campaign_id), shown=shown, token_variable=TOKEN_VARIABLE
    )
