"""The Markdown report's failures: one row per case and target, repeats counted."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from markdown_it import MarkdownIt

from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.markdown import markdown_report
from evalrelay.bridge.results.result import Status
from tests.bridge.reports.reporting import conversation, graded, result, write_campaign


def test_repeats_of_a_case_make_one_row_with_their_spread(tmp_path: Path) -> None:
    results = [
        graded("capital", "gpt", 0.3, repeat=0, job_id="g0"),
        graded("capital", "gpt", 0.3, repeat=1, job_id="g1"),
        graded("capital", "gpt", 0.9, repeat=2, job_id="g2"),
        graded("capital", "claude", 0.2, repeat=0, job_id="c0"),
        graded("capital", "claude", 0.2, repeat=1, job_id="c1"),
        result("capital", "claude", Status.TIMEOUT, repeat=2, job_id="c2", error="too slow"),
        graded("river", "gpt", 0.95, repeat=0, job_id="r0"),
        graded("river", "gpt", 0.95, repeat=1, job_id="r1"),
    ]
    text = markdown_report(CampaignResults.load(write_campaign(tmp_path, results)))
    rows = [line for line in text.splitlines() if line.startswith(("| capital ", "| river "))]
    assert rows == [
        "| capital | claude | 3 | 0/3 | 0.20 | 2 failed, 1 error | 2 ok, 1 timeout "
        "| wrong city (2 runs); too slow |",
        "| capital | gpt | 3 | 1/3 | 0.50 (0.30 to 0.90) | 2 failed, 1 passed | ok "
        "| wrong city (2 runs) |",
    ]  # the river, passed every time, is no failure


def test_cached_answers_are_counted_and_marked(tmp_path: Path) -> None:
    results = [
        graded("capital", "gpt", 0.3, artifacts={"cached": True, "request_id": "req-first"}),
        graded("river", "gpt", 0.3),
    ]
    text = markdown_report(CampaignResults.load(write_campaign(tmp_path, results)))
    assert "1 answered from the response cache (`run --cache`)." in text
    assert "| capital | gpt | 1 (1 cached) | 0/1 | 0.30 | failed | ok | wrong city |" in text
    assert "| river | gpt | 1 | 0/1 | 0.30 | failed | ok | wrong city |" in text


class Cells(HTMLParser):
    """The elements of rendered Markdown, and the text of each table row's cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.rows[-1].append("")

    def handle_data(self, data: str) -> None:
        if self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


def test_html_and_markdown_in_agent_text_render_as_text(tmp_path: Path) -> None:
    """Rendered as GitHub renders Markdown (tables, strikethrough), a case id and an
    error holding HTML, links, images and pipes show as written, in their own cells."""
    case_id = "<img src=x onerror=alert(1)>|[c](http://x)"
    error = "<script>alert('x')</script> & ![t](http://t/p.png) *b* ~~s~~ `c` a\\|b\nnext"
    results = [result(case_id, "gpt", Status.INFRA_ERROR, error=error)]
    text = markdown_report(CampaignResults.load(write_campaign(tmp_path, results)))
    parser = Cells()
    parser.feed(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text))
    assert parser.tags <= {"h1", "h2", "p", "code", "table", "thead", "tbody", "tr", "th", "td"}
    row = next([c.strip() for c in r] for r in parser.rows if r[0].startswith("<img"))
    assert row[0] == case_id
    assert row[-1] == error.replace("\n", " ")
    assert len(row) == 8


def test_a_conversation_lists_its_turns_with_their_verdicts(tmp_path: Path) -> None:
    results = [conversation("tutor", "gpt"), graded("capital", "gpt", 0.9)]
    text = markdown_report(CampaignResults.load(write_campaign(tmp_path, results)))
    section = text.split("## Conversations\n", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| tutor ")]
    assert rows == [
        "| tutor | gpt | 1 | passed | 1.00 |  |",
        "| tutor | gpt | 2 | failed | 0.00 | Rome |",
        "| tutor | gpt | 3 | skipped | 0.00 | turn 2 failed and on\\_turn\\_failure is stop |",
    ]
    assert "## Conversations" not in markdown_report(
        CampaignResults.load(write_campaign(tmp_path / "plain", results[1:]))
    )


def test_the_targets_table_has_intervals_and_the_pairs_their_verdicts(tmp_path: Path) -> None:
    results = [
        graded(case, target, score, job_id=f"{case}-{target}")
        for case in ("a", "b", "c", "d")
        for target, score in (("gpt", 0.9), ("claude", 0.3))
    ]
    text = markdown_report(CampaignResults.load(write_campaign(tmp_path, results)))
    [gpt] = [line for line in text.splitlines() if line.startswith("| gpt |")]
    assert gpt == "| gpt | 4 | 4/4 | 100% [51%\u2013100%] | 0.900 [0.90\u20130.90] | 4 |"
    assert "[…]: 95% intervals." in text
    assert "### Pairs of targets" in text
    assert "| verdict (of b) |" in text
    [pair] = [line for line in text.splitlines() if line.startswith("| claude | gpt |")]
    assert "| 4 |" in pair and "+0.600" in pair
