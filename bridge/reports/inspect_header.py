"""The header of a target's Inspect AI eval log: what the campaign's logs share, and what
a log says of its samples, tallied as they are written.

The model of a log is the target's name: two targets may run one model with different
settings, and the target is what evalrelay reports compare. The model a vendor said it
ran is each output's `model`, and all of them are in the log's metadata.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import version

from evalrelay.bridge.reports import inspect_models as inspect
from evalrelay.bridge.reports.campaign import CampaignResults
from evalrelay.bridge.reports.inspect_samples import SCORE, iso, stable_id
from evalrelay.bridge.results.result import Result, Status
from evalrelay.bridge.results.results_file import summary_path
from evalrelay.bridge.results.summary import TargetSummary


@dataclass
class CampaignFacts:
    """What every log of the campaign shares, known before its first sample is written."""

    campaign_id: str
    datasets: list[str]
    complete: bool
    """Every job has a result, as far as the campaign's summary says."""

    @classmethod
    def of(cls, campaign: CampaignResults) -> CampaignFacts:
        datasets = sorted({head.dataset for head in campaign.heads()})
        return cls(campaign.campaign_id, datasets, _complete(campaign))

    def sample_id(self, result: Result) -> str:
        return f"{result.dataset}/{result.case_id}" if len(self.datasets) > 1 else result.case_id

    @property
    def task(self) -> str:
        return self.datasets[0] if len(self.datasets) == 1 else self.campaign_id

    def header(
        self, target: str, tally: LogTally, campaign: CampaignResults
    ) -> inspect.EvalLogHeader:
        scored = [_result_score(campaign.summary.targets[target])]
        scored += [t.eval_score(name) for name, t in tally.scorers.items()]
        spec = inspect.EvalSpec(
            eval_id=stable_id("eval", self.campaign_id, target),
            run_id=stable_id("run", self.campaign_id),
            created=iso(tally.started),
            task=self.task,
            task_id=stable_id("task", self.campaign_id, self.task),
            dataset=inspect.EvalDataset(
                name=", ".join(self.datasets),
                samples=len(tally.sample_ids),
                sample_ids=tally.sample_ids,
            ),
            model=target,
            config=inspect.EvalConfig(epochs=tally.epochs, fail_on_error=False),
            packages={"evalrelay": version("evalrelay")},
            metadata={
                "evalrelay_campaign": self.campaign_id,
                "evalrelay_target": target,
                "datasets": self.datasets,
                "reported_models": sorted(tally.models),
            },
            scorers=[_scorer(SCORE, ("accuracy", "mean"))]
            + [_scorer(name, ("mean",)) for name in tally.scorers],
        )
        return inspect.EvalLogHeader(
            status=self.status(tally),
            eval=spec,
            plan=inspect.EvalPlan(
                steps=[inspect.EvalPlanStep(solver="evalrelay", params={"target": target})]
            ),
            results=inspect.EvalResults(
                total_samples=tally.samples,
                completed_samples=tally.samples - tally.errors,
                scores=[s for s in scored if s is not None],
            ),
            stats=inspect.EvalStats(
                started_at=iso(tally.started),
                completed_at=iso(tally.finished),
                model_usage={target: tally.usage} if tally.usage else {},
            ),
        )

    def status(self, tally: LogTally) -> inspect.EvalStatus:
        if tally.cancelled:
            return "cancelled"
        return "success" if self.complete else "started"


def _complete(campaign: CampaignResults) -> bool:
    """A campaign whose summary expects more results than its file holds is unfinished;
    one without a summary (a file written by hand) is taken as it is."""
    try:
        summary = json.loads(summary_path(campaign.path.parent, campaign.campaign_id).read_text())
    except (OSError, ValueError):
        return True
    expected = summary.get("expected") if isinstance(summary, dict) else None
    return not isinstance(expected, int) or len(campaign) >= expected


def _scorer(name: str, metrics: tuple[str, ...]) -> inspect.EvalScorer:
    return inspect.EvalScorer(
        name=name, metrics=[inspect.EvalMetricDefinition(name=m) for m in metrics]
    )


def _result_score(summary: TargetSummary) -> inspect.EvalScore | None:
    """`accuracy` is the pass rate (a result passes at its case's threshold), `mean` the
    mean score: the two numbers evalrelay's own reports lead with, from its summary."""
    if summary.pass_rate is None or summary.mean_score is None:
        return None
    return inspect.EvalScore(
        name=SCORE,
        scorer=SCORE,
        scored_samples=summary.scored,
        unscored_samples=summary.results - summary.scored,
        metrics={
            "accuracy": inspect.EvalMetric(name="accuracy", value=summary.pass_rate),
            "mean": inspect.EvalMetric(name="mean", value=summary.mean_score),
        },
    )


@dataclass
class ScorerTally:
    scored: int = 0
    unscored: int = 0
    total: float = 0.0

    def eval_score(self, name: str) -> inspect.EvalScore | None:
        if not self.scored:
            return None
        mean = inspect.EvalMetric(name="mean", value=self.total / self.scored)
        return inspect.EvalScore(
            name=name,
            scorer=name,
            scored_samples=self.scored,
            unscored_samples=self.unscored,
            metrics={"mean": mean},
        )


@dataclass
class LogTally:
    """What a log's header says of its samples, added up as they are written."""

    samples: int = 0
    errors: int = 0
    cancelled: int = 0
    epochs: int = 1
    sample_ids: list[str] = field(default_factory=list)
    """Each once: a sample's epochs come one after the other in report order."""
    started: datetime | None = None
    finished: datetime | None = None
    usage: inspect.ModelUsage | None = None
    models: set[str] = field(default_factory=set)
    scorers: dict[str, ScorerTally] = field(default_factory=dict)

    def add(self, result: Result, sample: inspect.EvalSample) -> inspect.EvalSample:
        """Counts the sample in, and gives it back to be written."""
        self.samples += 1
        self.errors += sample.error is not None
        self.cancelled += result.status is Status.CANCELLED
        self.epochs = max(self.epochs, sample.epoch)
        if not self.sample_ids or self.sample_ids[-1] != sample.id:
            self.sample_ids.append(sample.id)
        if self.started is None or result.started_at < self.started:
            self.started = result.started_at
        if self.finished is None or result.finished_at > self.finished:
            self.finished = result.finished_at
        if sample.output.usage is not None:
            self.usage = (
                sample.output.usage if self.usage is None else self.usage.plus(sample.output.usage)
            )
        if sample.output.model:
            self.models.add(sample.output.model)
        for name, score in (sample.scores or {}).items():
            if name != SCORE:
                tally = self.scorers.setdefault(name, ScorerTally())
                if math.isnan(score.value):
                    tally.unscored += 1
                else:
                    tally.scored += 1
                    tally.total += score.value
        return sample
