"""How sure a campaign's numbers are: intervals per target, and paired tests between targets.

A pass rate over 14 cases is a guess within some 20 points either way, and two targets a
few points apart may differ by noise alone; these numbers say which. The distributions and
tests are scipy's and statsmodels', never written here.

The unit of sampling is the case (dataset and case id): repeats of one case are not
independent, so standard errors are clustered by case (Miller 2024, "Adding Error Bars to
Evals") and paired differences average a case's repeats first. Only graded results count
(status `ok` or `model_failure`, with a score), as in the mean score and pass rate.

Spreads follow one rule: a sample's spread is estimated with one degree of freedom taken
for its mean (ddof=1; clustered by case, statsmodels' small-sample factor G/(G-1) over G
cases), as Student's t requires: the mean score's interval, the paired t-test and the
power. The pass rate's Wilson interval is the exception the rule itself makes: its
variance p(1-p)/n is the binomial model's, not a sample's, and the clustered variance
that sets its effective number of results is put on that same footing (no factor), so
that one result per case gives exactly Wilson's interval on the count.
"""

from __future__ import annotations

import importlib
import math
import threading
import warnings
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from pydantic import BaseModel

from evalrelay.bridge.results.result import Status

if TYPE_CHECKING:
    import numpy as np
    from statsmodels.regression.linear_model import RegressionResults

# scipy and statsmodels take seconds to import: each function imports what it uses, so
# only the commands that compute statistics pay for them.

LEVEL = 0.95
"""Every interval is a 95% one."""
ALPHA = 1 - LEVEL
"""A pair's difference is significant when its Holm-corrected p-value is below this."""
POWER = 0.8

Verdict = Literal["better", "worse", "no detectable difference"]


class TargetStatistics(BaseModel):
    """One target's numbers with their 95% intervals."""

    n: int
    """Graded cases (each counted once, however many repeats)."""
    results: int
    """Graded results: cases times their graded repeats."""
    pass_rate: float
    pass_rate_ci: tuple[float, float]
    """Wilson's, on the effective number of results when cases are repeated (see `_wilson`)."""
    mean_score: float
    mean_score_ci: tuple[float, float] | None
    """Clustered by case, on Student's t with one degree of freedom fewer than the cases,
    cut to 0..1; null with fewer than two cases."""
    pass_at_k: dict[int, float]
    """k → the chance that at least one of k answers to a case passes (Chen et al. 2021's
    unbiased estimator), for every k up to the fewest graded repeats of any case."""


class PairStatistics(BaseModel):
    """Target `b` set against target `a` on the cases both answered."""

    a: str
    b: str
    n_paired: int
    """Cases graded for both."""
    difference: float | None
    """Mean score of `b` less that of `a`: positive when `b` scores higher."""
    difference_ci: tuple[float, float] | None
    """The 95% interval of `test` on the case mean scores (a case's repeats averaged
    first), within -1..1; null with fewer than two shared cases, or when every case moved
    by the same amount (there is no spread to make one from)."""
    test: str = "paired t-test on the case mean scores"
    """The test behind `p_value`, the interval and the verdict: an exact sign-flip test
    below 30 cases or when every case moved alike, else the paired t-test (`paired_test`)."""
    p_value: float | None
    smallest_p_value: float | None = None
    """The smallest p-value `test` can give on these cases (0.5 on two): when it is not below
    0.05, no verdict of better or worse is possible, whatever the scores."""
    p_value_holm: float | None
    """`p_value` corrected by Holm's method across every pair of the comparison."""
    p_value_mcnemar: float | None
    """Exact McNemar on pass/fail; null when a case has several graded repeats."""
    verdict: Verdict
    """`better` or `worse` (said of `b`) when `p_value_holm` is below 0.05 (which the
    smallest p-value the test can give must allow)."""
    cases_for_80_power: int | None
    """About how many paired cases would detect this difference 80% of the time (at the
    5% level, before correction); null when there is no difference to detect."""


class Observed(Protocol):
    """What the statistics read of a result (a whole `Result`, or a report's `ResultHead`)."""

    @property
    def target(self) -> str: ...
    @property
    def dataset(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def repeat(self) -> int: ...
    @property
    def status(self) -> Status: ...
    @property
    def score(self) -> float | None: ...
    @property
    def passed(self) -> bool | None: ...


@dataclass
class _Graded:
    """One target's graded results in the order they came, 21 bytes each: the case (an
    index into `Observations.cases_seen`), the repeat, the score and the pass."""

    cases: array[int] = field(default_factory=lambda: array("I"))
    repeats: array[int] = field(default_factory=lambda: array("q"))
    scores: array[float] = field(default_factory=lambda: array("d"))
    passed: array[int] = field(default_factory=lambda: array("b"))

    def __len__(self) -> int:
        return len(self.cases)


@dataclass
class Observations:
    """The graded results of one campaign, by target and case. A campaign of a million
    graded results keeps them all until its summary, so they are kept as numbers in
    arrays, not a Python object each, and each case's name once, in one string, whatever
    the number of its targets and repeats."""

    cases_seen: dict[str, int] = field(default_factory=dict)
    """Each case once, to its index, in the order first graded: its dataset and id in one
    string, split at the first NUL (a dataset is named after a file: it holds none)."""
    by_target: dict[str, _Graded] = field(default_factory=dict)

    def add(
        self, target: str, dataset: str, case_id: str, repeat: int, score: float, passed: bool
    ) -> None:
        index = self.cases_seen.setdefault(f"{dataset}\0{case_id}", len(self.cases_seen))
        graded = self.by_target.get(target)
        if graded is None:
            graded = self.by_target[target] = _Graded()
        graded.cases.append(index)
        graded.repeats.append(repeat)
        graded.scores.append(score)
        graded.passed.append(passed)

    def observe(self, result: Observed) -> None:
        """Only graded results count, as in the mean score and pass rate."""
        if result.score is not None and Status(result.status).is_scored:
            self.add(
                result.target,
                result.dataset,
                result.case_id,
                result.repeat,
                result.score,
                bool(result.passed),
            )

    def __bool__(self) -> bool:
        """Whether any result was graded."""
        return any(self.by_target.values())

    def answers(self, target: str) -> Answers:
        """`target`'s graded answers, its cases in the order the campaign first graded them,
        each case's repeats in order; of a repeat graded twice (a retried job), the later
        line."""
        _libraries()
        import numpy as np

        graded = self.by_target.get(target, _Graded())
        seen = np.frombuffer(graded.cases, dtype=np.uint32).astype(np.int64)
        repeats = np.frombuffer(graded.repeats, dtype=np.int64)
        # By case, then repeat, then line; the last line of each (case, repeat) stays.
        order = np.lexsort((np.arange(len(seen)), repeats, seen))
        case, repeat = seen[order], repeats[order]
        last = np.ones(len(order), dtype=bool)
        last[:-1] = (case[1:] != case[:-1]) | (repeat[1:] != repeat[:-1])
        kept = order[last]
        numbers, rows = np.unique(seen[kept], return_inverse=True)
        names = list(self.cases_seen)
        return Answers(
            names=np.array([names[i] for i in numbers], dtype=object),
            cases=rows.reshape(-1),
            scores=np.frombuffer(graded.scores, dtype=np.float64)[kept],
            passes=np.frombuffer(graded.passed, dtype=np.int8)[kept].astype(np.float64),
        )


@dataclass(frozen=True)
class Answers:
    """One target's graded answers as arrays, a row per answer: its case (a number from 0,
    `names[number]` its name), score, and pass (1.0 or 0.0). A case's name is its dataset
    and id joined at a NUL, so that names sort as (dataset, id) pairs do: a dataset is
    named after a file, and holds none."""

    names: np.ndarray
    cases: np.ndarray
    scores: np.ndarray
    passes: np.ndarray

    def per_case(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each case's number of answers, mean score and number passed."""
        import numpy as np

        count = np.bincount(self.cases, minlength=len(self.names))
        scores = np.bincount(self.cases, weights=self.scores, minlength=len(self.names))
        passed = np.bincount(self.cases, weights=self.passes, minlength=len(self.names))
        return count, scores / np.maximum(count, 1), passed


def target_statistics(answers: Answers) -> TargetStatistics | None:
    """None when the target has no graded result."""
    _libraries()
    import numpy as np

    if not len(answers.scores):
        return None
    count, _, passed = answers.per_case()
    cases = len(answers.names)
    return TargetStatistics(
        n=cases,
        results=len(answers.scores),
        pass_rate=float(answers.passes.mean()),
        pass_rate_ci=_wilson(answers.passes, answers.cases, cases),
        mean_score=float(answers.scores.mean()),
        mean_score_ci=_clustered_ci(answers.scores, answers.cases, cases),
        pass_at_k=_pass_at_k(count, passed.astype(np.int64)),
    )


def pass_at_k(cases: Sequence[Sequence[bool]]) -> dict[int, float]:
    """The mean over cases of 1 - C(n-c, k) / C(n, k), n answers of which c passed."""
    _libraries()
    import numpy as np

    return _pass_at_k(
        np.array([len(runs) for runs in cases], dtype=np.int64),
        np.array([sum(runs) for runs in cases], dtype=np.int64),
    )


def _pass_at_k(count: np.ndarray, passed: np.ndarray) -> dict[int, float]:
    """`pass_at_k` from each case's number of answers and number passed, computed once
    for each (answers, passed) pair that occurs (a campaign has few), in exact integers."""
    import numpy as np
    from scipy.special import comb

    if not len(count):
        return {}
    pairs, times = np.unique(np.stack([count, passed]), axis=1, return_counts=True)
    values = {}
    for k in range(1, int(count.min()) + 1):
        chances = sum(
            int(many) * (1.0 - comb(int(n) - int(c), k, exact=True) / comb(int(n), k, exact=True))
            for (n, c), many in zip(pairs.T, times, strict=True)
        )
        values[k] = chances / len(count)
    return values


def _clustered(values: np.ndarray, groups: np.ndarray) -> RegressionResults:
    """The mean as an intercept-only regression, its standard error clustered by case."""
    import numpy as np
    from statsmodels.regression.linear_model import OLS

    model = OLS(values, np.ones_like(values))
    return model.fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)


def _clustered_ci(values: np.ndarray, groups: np.ndarray, cases: int) -> tuple[float, float] | None:
    if cases < 2:
        return None
    low, high = _clustered(values, groups).conf_int(ALPHA)[0]
    return _within(low, high, 0.0, 1.0)


def _within(low: float, high: float, least: float, most: float) -> tuple[float, float]:
    """An interval cut to the values a score (0 to 1) or a difference of two (-1 to 1) can
    take: with few cases, the t distribution's reaches past them."""
    return min(max(float(low), least), most), max(min(float(high), most), least)


def _wilson(passes: np.ndarray, groups: np.ndarray, cases: int) -> tuple[float, float]:
    """Wilson's interval on the effective number of results (Kish): as many as would give
    the binomial variance p(1-p)/n the variance clustered by case has (CR0: the binomial
    variance has no small-sample factor, so neither has this), so that one result per case
    is the plain count. Repeats that all pass (or all fail) have no variance to measure:
    they count as one result per case."""
    import numpy as np
    from statsmodels.regression.linear_model import OLS
    from statsmodels.stats.proportion import proportion_confint

    rate, nobs = float(passes.mean()), float(cases)
    if cases < len(passes) and 0 < rate < 1:
        fit = OLS(passes, np.ones_like(passes)).fit(
            cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}
        )
        spread = float(fit.bse[0]) ** 2
        # Every case with the same pass rate leaves no spread between cases to measure:
        # then no more is known than from the results as if independent.
        nobs = rate * (1 - rate) / spread if spread > 0 else float(len(passes))
    low, high = proportion_confint(rate * nobs, nobs, alpha=ALPHA, method="wilson")
    return _within(low, high, 0.0, 1.0)


def pair_statistics(a: str, b: str, a_answers: Answers, b_answers: Answers) -> PairStatistics:
    """`b` against `a` on their shared cases, before the Holm correction (see `corrected`)."""
    _libraries()
    import numpy as np

    # In name order, as the sampled sign-flip test's fixed patterns of signs need to give
    # the same p-value from one report to the next.
    shared, in_a, in_b = np.intersect1d(
        a_answers.names, b_answers.names, assume_unique=True, return_indices=True
    )
    a_count, a_means, a_passed = a_answers.per_case()
    b_count, b_means, b_passed = b_answers.per_case()
    differences = b_means[in_b] - a_means[in_a]
    tested = paired_test(differences)
    once = bool(len(shared)) and bool((a_count[in_a] == 1).all() and (b_count[in_b] == 1).all())
    return PairStatistics(
        a=a,
        b=b,
        n_paired=len(shared),
        difference=float(differences.mean()) if len(shared) else None,
        difference_ci=tested.ci,
        test=tested.name,
        p_value=tested.p_value,
        smallest_p_value=tested.smallest_p_value,
        p_value_holm=None,
        p_value_mcnemar=_mcnemar(a_passed[in_a] > 0, b_passed[in_b] > 0) if once else None,
        verdict="no detectable difference",
        cases_for_80_power=_cases_for_power(differences),
    )


class PairTest(NamedTuple):
    """The test a pair's differences got, its p-value, and the interval it gives."""

    name: str
    p_value: float | None
    ci: tuple[float, float] | None
    smallest_p_value: float | None


T_TEST_CASES = 30
"""From this many shared cases whose differences vary, the paired t-test: its p-value is
then close to the exact one. Below, and whenever every case moved alike, a sign-flip test."""

EXACT_CASES = 16
"""Up to this many cases, the sign-flip test tries every pattern of signs (2**16)."""

SAMPLED_SIGNS = 20_000
"""Past `EXACT_CASES`, the sign-flip test tries this many random sign patterns (the same
ones every time: the p-value does not change from one report to the next)."""

SIGN_FLIP = "exact sign-flip test on the case mean scores"
SAMPLED_SIGN_FLIP = f"sign-flip test on the case mean scores ({SAMPLED_SIGNS:,} sign patterns)"
T_TEST = "paired t-test on the case mean scores"


def paired_test(differences: np.ndarray) -> PairTest:
    """The test that suits the differences (b - a, one per case), two-sided.

    A t-test on a few cases, or on differences that do not vary, gives p-values that mean
    nothing (two cases that moved alike give p = 0). There the sign-flip test is exact: under
    no difference each case's difference is as likely negative as positive, so the p-value is
    the share of the 2**n sign patterns whose mean is at least as far from zero as the one
    observed. Two cases can then give no p-value below 0.5 (`smallest_p_value`), three none
    below 0.25, five none below 0.0625. Its interval holds the shifts the test does not
    reject."""
    import numpy as np
    from scipy.stats import binomtest, ttest_rel

    n = len(differences)
    if n < 2:
        return PairTest(T_TEST, None, None, None)
    moved = int(np.count_nonzero(differences))
    # 2 / 2**moved, written so that past 1,023 cases it underflows to 0 instead of raising.
    smallest = min(1.0, 2.0 ** (1 - moved)) if moved else 1.0
    if np.ptp(differences) == 0:
        # Every case moved alike: the sign test, which here is the sign-flip test.
        p_value = float(binomtest(moved, moved, 0.5).pvalue) if moved else 1.0
        return PairTest(SIGN_FLIP, p_value, None, smallest)
    if n >= T_TEST_CASES:
        test = ttest_rel(differences, np.zeros(n))
        low, high = test.confidence_interval(LEVEL)
        return PairTest(T_TEST, float(test.pvalue), _within(low, high, -1.0, 1.0), 0.0)
    flips = SignFlips(differences)
    name = SIGN_FLIP if flips.exact else SAMPLED_SIGN_FLIP
    return PairTest(name, flips.p_value(0.0), flips.interval(), smallest)


class SignFlips:
    """The sign-flip test of one set of differences, for any shift of them: the p-value that
    they are centred on `shift`, and the interval of shifts not rejected at the level."""

    def __init__(self, differences: np.ndarray) -> None:
        import numpy as np

        n = len(differences)
        self.exact = n <= EXACT_CASES
        if self.exact:
            codes = np.arange(2**n, dtype=np.uint32)[:, None] >> np.arange(n, dtype=np.uint32)
            signs = 1.0 - 2.0 * (codes & 1)
        else:
            rng = np.random.default_rng(20240601)
            signs = rng.choice(np.array([-1.0, 1.0]), size=(SAMPLED_SIGNS, n))
        self.differences = differences
        self.flipped, self.sums = signs @ differences, signs.sum(axis=1)

    def p_value(self, shift: float) -> float:
        import numpy as np

        observed = abs(float((self.differences - shift).sum()))
        tolerance = 1e-12 * max(1.0, observed)  # the same sum, added in another order
        flipped = np.abs(self.flipped - shift * self.sums)
        as_far = int(np.count_nonzero(flipped >= observed - tolerance))
        if self.exact:  # every pattern, the observed one among them
            return as_far / len(self.sums)
        return (as_far + 1) / (len(self.sums) + 1)

    def interval(self) -> tuple[float, float]:
        """The shifts, between -1 and 1, whose p-value is at least 5%: found by bisection from
        the mean (never rejected) outward."""
        centre = float(self.differences.mean())
        return self._edge(centre, -1.0), self._edge(centre, 1.0)

    def _edge(self, inside: float, outside: float) -> float:
        if self.p_value(outside) >= ALPHA:
            return outside
        for _ in range(40):
            middle = (inside + outside) / 2
            if self.p_value(middle) >= ALPHA:
                inside = middle
            else:
                outside = middle
        return inside


def _mcnemar(a_passed: np.ndarray, b_passed: np.ndarray) -> float:
    """Exact McNemar on cases graded once by each: of the cases where one passed and the
    other did not, is the split further from half and half than chance makes it? (A
    binomial test on the discordant.)"""
    from scipy.stats import binomtest

    only_b = int((b_passed & ~a_passed).sum())
    only_a = int((a_passed & ~b_passed).sum())
    if only_a + only_b == 0:
        return 1.0
    return float(binomtest(only_b, only_a + only_b, 0.5).pvalue)


def _cases_for_power(differences: np.ndarray) -> int | None:
    """Two cases (the fewest a paired test takes) when they already give 80% power; else
    statsmodels' solution; None when there is no difference, no spread, or no solution."""
    import numpy as np
    from statsmodels.stats.power import TTestPower

    if len(differences) < 2 or differences.mean() == 0 or np.ptp(differences) == 0:
        return None
    effect = abs(float(differences.mean())) / float(differences.std(ddof=1))
    power = TTestPower()
    if power.power(effect_size=effect, nobs=2, alpha=ALPHA) >= POWER:
        return 2
    needed = float(power.solve_power(effect_size=effect, alpha=ALPHA, power=POWER))
    return math.ceil(needed) if math.isfinite(needed) else None


def corrected(pairs: list[PairStatistics]) -> list[PairStatistics]:
    """The pairs with Holm's correction across all of them, and their verdicts."""
    _libraries()
    from statsmodels.stats.multitest import multipletests

    tested = [i for i, pair in enumerate(pairs) if pair.p_value is not None]
    if not tested:
        return pairs
    _, adjusted, _, _ = multipletests([pairs[i].p_value for i in tested], method="holm")
    result = list(pairs)
    for i, p_holm in zip(tested, adjusted, strict=True):
        pair = pairs[i]
        verdict: Verdict = "no detectable difference"
        reachable = pair.smallest_p_value is None or pair.smallest_p_value < ALPHA
        if p_holm < ALPHA and reachable and pair.difference:
            verdict = "better" if pair.difference > 0 else "worse"
        result[i] = pair.model_copy(update={"p_value_holm": float(p_holm), "verdict": verdict})
    return result


class CampaignStatistics(BaseModel):
    """`summary.json`'s `statistics`: per target, and per pair of targets."""

    targets: dict[str, TargetStatistics]
    pairs: list[PairStatistics]


LIBRARIES = (
    "numpy",
    "scipy.special",
    "scipy.stats",
    "statsmodels.tools.sm_exceptions",
    "statsmodels.regression.linear_model",
    "statsmodels.stats.multitest",
    "statsmodels.stats.power",
    "statsmodels.stats.proportion",
)
"""What the statistics import when first needed: a second or more of imports."""


_imported = threading.Event()
_starting = threading.Lock()
_started: list[threading.Thread] = []


def import_in_background() -> None:
    """Start importing the statistics' libraries on a thread of their own, once. A signal
    stops only the main thread: imported there, a Ctrl-C or SIGTERM in the middle of numpy's
    import left it half made, and the summary written on the way out failed with a traceback
    instead of the command stopping cleanly. The main thread waits for this thread instead
    (a wait a signal may cut safely) and never imports them itself."""

    def load() -> None:
        try:
            for name in LIBRARIES:
                importlib.import_module(name)
        finally:
            _imported.set()  # a library that failed fails again, with its error, where used

    with _starting:
        if not _started:
            thread = threading.Thread(target=load, name="evalrelay-statistics", daemon=True)
            _started.append(thread)
            thread.start()


def _libraries() -> None:
    import_in_background()
    _imported.wait()


def campaign_statistics(observations: Observations) -> CampaignStatistics:
    """Every target, and every pair of targets in name order (`b` against `a`, a < b).
    With no graded result there is nothing to compute, and the libraries (seconds of
    imports) are not waited for: a run of cases without evaluators never loads them."""
    if not observations:
        return CampaignStatistics(targets={}, pairs=[])
    with quiet():
        return _campaign_statistics(observations)


@contextmanager
def quiet() -> Iterator[None]:
    """scipy's and statsmodels' warnings (a root finder that did not converge, a t-test on
    identical numbers) would reach `run`'s terminal and the collector's log: the numbers
    they concern are null or said otherwise."""
    _libraries()
    import statsmodels.tools.sm_exceptions  # noqa: F401  # its own filters, set at import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _campaign_statistics(observations: Observations) -> CampaignStatistics:
    answers = {name: observations.answers(name) for name in sorted(observations.by_target)}
    targets = {}
    for name, graded in answers.items():
        stats = target_statistics(graded)
        if stats is not None:
            targets[name] = stats
    pairs = [
        pair_statistics(a, b, answers[a], answers[b]) for a, b in combinations(sorted(targets), 2)
    ]
    return CampaignStatistics(targets=targets, pairs=corrected(pairs))
