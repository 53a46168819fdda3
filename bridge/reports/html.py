"""One self-contained HTML file: no network, no assets, nothing of the results parsed as HTML.

It must open in a browser at 100,000 results. The summary and the targets table are HTML
made here; the cases travel once, as compact JSON in the page (a text many results share,
such as a system prompt, a question put to every target or an error message, only once),
and the page's script puts one page of rows for the filters in force into the document.
Filters are by target, outcome, status and text, and can come from the address
(`report.html#outcome=failed&target=gpt&page=2`), so a link can point at what matters.

The page is written as it is made, a thousand results at a time: `html_chunks`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import resources

from jinja2 import Environment, StrictUndefined

from bridge.reports.campaign import CampaignResults, Outcome
from bridge.reports.html_cases import page_data
from bridge.results.result import Status


def html_report(campaign: CampaignResults) -> str:
    return "".join(html_chunks(campaign))


def html_chunks(campaign: CampaignResults) -> Iterator[str]:
    environment = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True)
    template = environment.from_string(
        resources.files("bridge.reports").joinpath("report.html.j2").read_text(encoding="utf-8")
    )
    summary = campaign.summary
    return template.generate(
        campaign=campaign.campaign_id,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        summary=summary,
        statuses=sorted(summary.counts),
        # Every status, present or not: `#status=timeout` must select it and show no row.
        filter_statuses=[s.value for s in Status],
        outcomes=[o.value for o in Outcome],
        targets=sorted(summary.targets.items()),
        data=page_data(campaign),
    )
