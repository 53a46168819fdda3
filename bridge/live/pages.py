"""The live view's own pages: the campaigns, a campaign whose file is on another host, and
what is said instead of a page (an unknown campaign, a report that could not be made)."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from evalrelay.bridge.live.feed import CampaignsFeed
from evalrelay.bridge.live.panel import live_panel
from evalrelay.bridge.live.templating import render
from evalrelay.bridge.reports.html_texts import script_json

FEED = "/api/campaigns"


def index_page(feed: CampaignsFeed) -> Markup:
    """The campaigns and workers, drawn by the page's script from `feed` at once, then from
    each poll of `/api/campaigns`."""
    return render("index.html.j2", feed=Markup(script_json(feed.model_dump(mode="json"))), api=FEED)


def remote_page(campaign_id: str) -> Markup:
    """A campaign whose results file is on another host: the live panel alone."""
    return render(
        "campaign_elsewhere.html.j2", campaign=campaign_id, panel=live_panel(campaign_id, None)
    )


def message_page(title: str, message: str, known: Sequence[str]) -> Markup:
    """Said instead of a page; `known` lists the campaigns there are pages for."""
    return render("message.html.j2", title=title, message=message, known=known)
