"""A Markdown summary: per target pass rate and mean score, then what failed and why."""

from __future__ import annotations

from bridge.reports.campaign import CampaignResults, Outcome, outcome


def markdown_report(campaign: CampaignResults) -> str:
    summary = campaign.summary
    statuses = sorted(summary.counts)
    lines = [
        f"# Campaign `{campaign.campaign_id}`",
        "",
        f"{summary.results} results. " + ", ".join(f"{summary.counts[s]} {s}" for s in statuses),
        "",
        "| target | results | passed | pass rate | mean score | " + " | ".join(statuses) + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(statuses),
    ]
    for name, target in sorted(summary.targets.items()):
        rate = "-" if target.pass_rate is None else f"{target.pass_rate:.0%}"
        mean = "-" if target.mean_score is None else f"{target.mean_score:.3f}"
        counts = " | ".join(str(target.counts.get(s, 0)) for s in statuses)
        lines.append(
            f"| {_cell(name)} | {target.results} | {target.passed}/{target.scored} | {rate} "
            f"| {mean} | {counts} |"
        )
    problems = [r for r in campaign.results if outcome(r) in (Outcome.FAILED, Outcome.ERROR)]
    if problems:
        lines += [
            "",
            "## Failures and errors",
            "",
            "| case | target | outcome | status | score | why |",
        ]
        lines.append("|---|---|---|---|---:|---|")
        for r in problems:
            why = r.error.message if r.error else "; ".join(r.misses) or (r.reasoning or "")
            score = "-" if r.score is None else f"{r.score:.2f}"
            lines.append(
                f"| {_cell(r.case_id)} | {_cell(r.target)} | {outcome(r).value} | "
                f"{r.status.value} | {score} | {_cell(why[:200])} |"
            )
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
