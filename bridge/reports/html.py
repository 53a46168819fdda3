"""The HTML report: no network, no assets, nothing of the results parsed as HTML.

It must open in a browser at 100,000 results, and stay small. The summary and the
targets table are HTML made here. The page's data is an index of every result, as
compact JSON, holding what the table, the filters and the text search need; the page's
script puts one page of rows for the filters in force into the document. What an opened
row shows (the messages sent, the whole answer, evaluators, artifacts) is in parts the
page reads only then (`html_parts`): inline in a small report, in a folder beside a big
one. Filters are by target, outcome, status and text, and can come from the address
(`report.html#outcome=failed&target=gpt&page=2`), so a link can point at what matters.

The page is written as it is made, a thousand results at a time: `html_chunks`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from markupsafe import Markup

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.charts import header_charts
from evalrelay.bridge.reports.html_cases import (
    OUTCOMES,
    PAGE_ROWS,
    PREVIEW_CHARS,
    STATUSES,
    index_row,
)
from evalrelay.bridge.reports.html_folder import PartsFolder
from evalrelay.bridge.reports.html_parts import Parts
from evalrelay.bridge.reports.html_texts import SharedTexts, script_json
from evalrelay.bridge.reports.outcomes import Outcome
from evalrelay.bridge.reports.statistics_text import PAIR_COLUMNS, pair_cells
from evalrelay.bridge.reports.templates import page_template
from evalrelay.bridge.results.result import Status

BATCH_ROWS = 1000
"""Results encoded per piece of the index written."""


def html_report(campaign: CampaignResults) -> str:
    """The page as one text, with every part inline however big: for benchmarks and tests
    that want it in memory. `write_html` writes what users get."""
    return "".join(html_chunks(campaign, Parts(None)))


def write_html(campaign: CampaignResults, path: Path, live: Markup | None = None) -> Path:
    """The page at `path`, with the folder of its parts beside it if it needs one.
    `live`: what `evalrelay serve` shows above the report while the campaign runs."""
    folder = PartsFolder(path)
    folder.publish(html_chunks(campaign, Parts(folder), live))
    return path


def html_chunks(
    campaign: CampaignResults, parts: Parts, live: Markup | None = None
) -> Iterator[str]:
    summary = campaign.summary
    outcomes = {target: tally.outcomes for target, tally in campaign.tallies.items()}
    stats = summary.statistics()
    charts = header_charts(
        outcomes, summary.targets, summary.counts, campaign.distributions, stats.targets
    )
    return page_template("report.html.j2").generate(
        campaign=campaign.campaign_id,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        summary=summary,
        charts=charts,
        statuses=sorted(summary.counts),
        # Every status, present or not: `#status=timeout` must select it and show no row.
        filter_statuses=[s.value for s in Status],
        outcomes=[o.value for o in Outcome],
        targets=sorted(summary.targets.items()),
        pair_columns=PAIR_COLUMNS,
        pairs=[pair_cells(pair) for pair in stats.pairs],
        preview_chars=PREVIEW_CHARS,
        data=index_data(campaign, parts),
        parts=parts,
        live=live,
    )


def index_data(campaign: CampaignResults, parts: Parts) -> Iterator[Markup]:
    """`[meta, [texts, rows], [texts, rows], ...]`: each piece brings the shared texts its
    rows are the first to use, so the page's script has every text a row names. Each
    result's details go to `parts` on the way."""
    meta = {
        "outcomes": [o.value for o in OUTCOMES],
        "statuses": [s.value for s in STATUSES],
        "page": PAGE_ROWS,
        "preview": PREVIEW_CHARS,
    }
    yield Markup("[" + script_json(meta))
    shared = SharedTexts()
    rows: list[object] = []
    for number, result in enumerate(campaign.results()):
        rows.append(index_row(result, shared))
        parts.add(result, number)
        if len(rows) == BATCH_ROWS:
            yield _piece(shared, rows, parts)
            rows = []
    if rows:
        yield _piece(shared, rows, parts)
    parts.finish()
    yield Markup("]")


def _piece(shared: SharedTexts, rows: list[object], parts: Parts) -> Markup:
    piece = "," + script_json([shared.take_new(), rows])
    parts.count(piece)
    return Markup(piece)
