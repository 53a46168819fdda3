"""The live view's pages show text from results as text: nothing there can become markup
or end a script."""

from __future__ import annotations

import json
import re

from evalrelay.bridge.live.feed import CampaignRow, CampaignsFeed, RedisState
from evalrelay.bridge.live.pages import index_page, message_page, remote_page
from evalrelay.bridge.live.panel import live_panel

EVIL = "</script><script>alert(1)</script>"


def test_the_index_carries_its_first_feed_as_json_that_cannot_end_its_script() -> None:
    row = CampaignRow(campaign_id="c", name=EVIL, done=1, state="running", results_in="h:/x")
    feed = CampaignsFeed(
        redis=RedisState(reachable=True), results_folder="/r", campaigns=[row], workers=[]
    )
    page = index_page(feed)
    assert "<script>alert(1)" not in page
    carried = re.search(
        r'<script type="application/json" id="feed">(.*?)</script>', page, re.DOTALL
    )
    assert carried and json.loads(carried.group(1))["campaigns"][0]["name"] == EVIL


def test_messages_and_names_are_escaped() -> None:
    page = message_page("Not found", f"No campaign {EVIL!r}", ["a<b"])
    assert "<script>alert(1)" not in page and "&lt;/script&gt;" in page
    assert '<a href="/campaigns/a&lt;b/">a&lt;b</a>' in page


def test_the_panel_polls_its_campaigns_feed_and_knows_what_its_report_shows() -> None:
    panel = live_panel("camp-1", 12)
    assert (
        '<section id="evalrelay-live" data-api="/api/campaigns/camp-1" '
        'data-token-variable="EVALRELAY_SERVE_TOKEN" data-shown="12">'
    ) in panel
    alone = remote_page("camp-1")
    assert "<h1>Campaign camp-1</h1>" in alone and 'data-shown=""' in alone
