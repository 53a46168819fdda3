"""The statistics on numbers small enough to check: without repeats, the Wilson interval
and exact McNemar are the textbook ones on the counts; Holm corrects across every pair;
the degenerate cases (one case, no difference) say so instead of inventing a number."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evalrelay.bridge.results.statistics import Observations, campaign_statistics, pass_at_k


def observed(scores: dict[str, list[float]], repeats: int = 1) -> Observations:
    """Target → one score per case (repeated as given); passed at 0.8 and above."""
    observations = Observations()
    for target, values in scores.items():
        for case, score in enumerate(values):
            for repeat in range(repeats):
                observations.add(target, "d", f"c{case}", repeat, score, score >= 0.8)
    return observations


def test_without_repeats_wilson_and_mcnemar_are_those_of_the_counts() -> None:
    a = [1.0] * 10 + [0.0] * 4
    b = [1.0] * 3 + [0.0] * 7 + [1.0] * 1 + [0.0] * 3  # 7 of a's passes lost, 1 gained
    stats = campaign_statistics(observed({"a": a, "b": b}))
    assert stats.targets["a"].pass_rate_ci == pytest.approx(
        proportion_confint(10, 14, alpha=0.05, method="wilson")
    )
    assert stats.targets["b"].n == stats.targets["b"].results == 14
    (pair,) = stats.pairs
    assert pair.p_value_mcnemar == pytest.approx(binomtest(1, 8, 0.5).pvalue)
    # Differences of -1, 0 and +1 only: the exact sign-flip test is the exact sign test,
    # McNemar's (p 0.07): not a difference 14 cases can show (the t-test said p 0.02).
    assert pair.p_value == pytest.approx(pair.p_value_mcnemar)
    assert (pair.a, pair.b, pair.verdict) == ("a", "b", "no detectable difference")
    assert pair.difference == pytest.approx(-6 / 14)


def test_holm_corrects_across_every_pair_of_targets() -> None:
    base = [1.0, 0.0] * 8
    stats = campaign_statistics(observed({"a": base, "b": [*base[:-2], 0.0, 0.0], "c": [0.0] * 16}))
    raw = [pair.p_value for pair in stats.pairs]
    assert [(p.a, p.b) for p in stats.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert [p.p_value_holm for p in stats.pairs] == pytest.approx(
        list(multipletests(raw, method="holm")[1])
    )


def test_repeats_widen_the_pass_rate_interval_to_the_cases_behind_them() -> None:
    """Three identical repeats of 12 cases are 12 cases' worth of evidence, not 36."""
    scores = [1.0] * 8 + [0.0] * 4
    once = campaign_statistics(observed({"t": scores})).targets["t"]
    thrice = campaign_statistics(observed({"t": scores}, repeats=3)).targets["t"]
    assert thrice.results == 36 and thrice.n == 12
    assert thrice.pass_rate_ci == pytest.approx(once.pass_rate_ci)
    assert thrice.pass_at_k == pytest.approx({1: 8 / 12, 2: 8 / 12, 3: 8 / 12})


def test_pass_at_k_is_chen_et_al_s_unbiased_estimator() -> None:
    # n=4, c=1: pass@2 = 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k([[True, False, False, False]]) == pytest.approx(
        {1: 0.25, 2: 0.5, 3: 0.75, 4: 1.0}
    )
    assert pass_at_k([[True, False], [False]]) == pytest.approx({1: 0.25})  # up to the fewest


def test_one_case_or_no_difference_give_no_interval_and_no_verdict() -> None:
    single = campaign_statistics(observed({"a": [1.0], "b": [0.0]}))
    assert single.targets["a"].mean_score_ci is None
    assert single.pairs[0].difference_ci is None and single.pairs[0].p_value is None
    assert single.pairs[0].verdict == "no detectable difference"
    same = campaign_statistics(observed({"a": [1.0, 0.5, 0.0], "b": [1.0, 0.5, 0.0]}))
    (pair,) = same.pairs
    assert (pair.difference, pair.difference_ci, pair.p_value) == (0.0, None, 1.0)
    assert pair.cases_for_80_power is None and pair.verdict == "no detectable difference"


scores = st.sampled_from([0.0, 1 / 3, 0.333333, 0.5, 2 / 3, 1.0])
answers = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(0, 5), st.integers(0, 2), scores),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(answers)
def test_any_campaign_gets_statistics_never_an_error(
    found: list[tuple[str, int, int, float]],
) -> None:
    """A summary must always be written: identical differences, one case, all passed, a
    root finder that finds nothing; every interval is ordered and within its range."""
    observations = Observations()
    for target, case, repeat, score in found:
        observations.add(target, "d", f"c{case}", repeat, score, score >= 0.8)
    stats = campaign_statistics(observations)
    for target in stats.targets.values():
        for low, high in filter(None, (target.pass_rate_ci, target.mean_score_ci)):
            assert 0 <= low <= high <= 1
    for pair in stats.pairs:
        if pair.difference_ci is not None:
            assert -1 <= pair.difference_ci[0] <= pair.difference_ci[1] <= 1
        assert pair.cases_for_80_power is None or pair.cases_for_80_power >= 2


def test_cases_with_the_same_mixed_repeats_get_the_interval_of_their_results() -> None:
    """Two cases that each pass one repeat of two: no spread between cases, so the cluster
    variance is 0 (it once divided by it); the interval is that of the four results."""
    from statsmodels.stats.proportion import proportion_confint

    observations = Observations()
    for case, repeat, passed in [(0, 0, False), (0, 1, True), (1, 0, True), (1, 1, False)]:
        observations.add("b", "d", f"c{case}", repeat, float(passed), passed)
    stats = campaign_statistics(observations)
    expected = proportion_confint(2, 4, alpha=0.05, method="wilson")
    assert stats.targets["b"].pass_rate_ci == pytest.approx(expected)


def test_the_same_difference_in_every_case_needs_no_power_calculation() -> None:
    """Seven cases each a third lower: the mean of the differences is off by rounding, so
    their spread is not quite 0 and the power solver finds no solution (it once failed
    the summary)."""
    stats = campaign_statistics(observed({"a": [1.0] * 7, "b": [0.666667] * 7}))
    (pair,) = stats.pairs
    assert pair.cases_for_80_power is None
    assert pair.difference_ci is None  # no spread to make an interval from
    assert pair.p_value == pytest.approx(2 / 2**7)  # the sign test: 7 cases, all one way
    assert pair.verdict == "worse"


@pytest.mark.parametrize(("cases", "p"), [(2, 0.5), (3, 0.25), (5, 0.0625)])
def test_a_few_cases_all_one_way_get_the_exact_sign_test_and_no_verdict(
    cases: int, p: float
) -> None:
    """Two cases can never show a difference at 5%: the t-test on differences with no
    spread said p 0 ("better, p <0.001" on two cases)."""
    stats = campaign_statistics(observed({"a": [0.0] * cases, "b": [1.0] * cases}))
    (pair,) = stats.pairs
    assert pair.p_value == pytest.approx(p) == binomtest(cases, cases, 0.5).pvalue
    assert pair.p_value_holm == pytest.approx(p)  # the verdict's p is the one printed
    assert pair.smallest_p_value == pytest.approx(p)
    assert pair.test.startswith("exact sign-flip")
    assert pair.verdict == "no detectable difference"
    varied = [1.0, 0.9, 0.8, 0.95, 0.85][:cases]  # spread, still all one way: the same p
    (spread,) = campaign_statistics(observed({"a": [0.0] * cases, "b": varied})).pairs
    assert spread.p_value == pytest.approx(p)
    assert spread.verdict == "no detectable difference"
    assert spread.difference_ci is not None and spread.difference_ci[0] <= 0.0


def test_nine_cases_four_lost_are_no_detectable_difference_as_the_exact_tests_say() -> None:
    """The t-test said `worse, p 0.035`; exact McNemar, Wilcoxon and sign-flip say 0.125."""
    from scipy.stats import wilcoxon

    a, b = [1.0] * 4 + [1.0, 0.0] * 2 + [0.0], [0.0] * 4 + [1.0, 0.0] * 2 + [0.0]
    (pair,) = campaign_statistics(observed({"a": a, "b": b})).pairs
    assert pair.p_value == pytest.approx(0.125) == pair.p_value_mcnemar
    moved = [y - x for x, y in zip(a, b, strict=True) if y != x]
    assert wilcoxon(moved, method="exact").pvalue == pytest.approx(pair.p_value)
    assert pair.verdict == "no detectable difference"


def test_the_sign_flip_test_is_scipy_s_exact_permutation_test() -> None:
    import numpy as np
    from scipy.stats import permutation_test

    a = [0.2, 0.5, 0.1, 0.9, 0.4, 0.3, 0.6, 0.7, 0.2, 0.5, 0.4, 0.8]
    b = [0.5, 0.6, 0.1, 1.0, 0.3, 0.6, 0.9, 0.7, 0.6, 0.4, 0.8, 0.9]
    (pair,) = campaign_statistics(observed({"a": a, "b": b})).pairs
    differences = np.array(b) - np.array(a)
    expected = permutation_test(
        (differences,), np.mean, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert pair.p_value == pytest.approx(expected)
    assert pair.verdict == ("better" if expected < 0.05 else "no detectable difference")
    assert pair.difference_ci is not None
    low, high = pair.difference_ci
    assert low <= pair.difference <= high
    assert (low > 0) == (pair.p_value < 0.05)  # the interval and the test agree


def test_thirty_cases_with_a_clear_effect_are_better_by_the_t_test() -> None:
    a = [0.2 + 0.01 * i for i in range(30)]
    b = [x + 0.3 + 0.02 * (i % 5) for i, x in enumerate(a)]
    (pair,) = campaign_statistics(observed({"a": a, "b": b})).pairs
    assert pair.test == "paired t-test on the case mean scores"
    assert pair.p_value is not None and pair.p_value < 0.001
    assert pair.verdict == "better"


INTERRUPTED_IMPORT = """
import os, signal, threading
from evalrelay.bridge.results.statistics import Observations, campaign_statistics
observations = Observations()
observations.add("t", "d", "c", 0, 1.0, True)
threading.Timer(float(os.environ["DELAY"]), os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    campaign_statistics(observations)  # its libraries take longer than DELAY to import
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
print(campaign_statistics(observations).targets["t"].pass_rate)
"""


def test_a_signal_during_the_first_statistics_leaves_them_whole_for_the_next() -> None:
    """Ctrl-C (or SIGTERM, turned into the same) while numpy and statsmodels load: the
    command's summary on the way out must still be computed, not fail on a module left half
    imported (it once did, and `run` ended with a traceback instead of stopping cleanly)."""
    # At several moments of the imports, in parallel: where the signal lands decides whether
    # an import cut in the main thread recovers.
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", INTERRUPTED_IMPORT],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "DELAY": str(delay)},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        for delay in (0.05, 0.15, 0.3, 0.5)
    ]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        assert out.split() == ["interrupted", "1.0"], out + err


def test_answers_come_back_by_case_in_first_graded_order_a_retried_repeat_as_its_last_line() -> (
    None
):
    """Each case is named by dataset and id (a NUL in an id included), numbered in the order
    the campaign first graded it; its repeats come in order, and of a repeat graded twice
    (a retried job) the later line."""
    observations = Observations()
    for target, dataset, case_id, repeat, score in [
        ("a", "d1", "second\0half", 1, 0.5),
        ("b", "d2", "x", 0, 1.0),
        ("a", "d1", "first", 0, 0.0),
        ("a", "d1", "second\0half", 0, 1.0),
        ("a", "d1", "second\0half", 1, 0.9),  # the retried repeat's new line
    ]:
        observations.add(target, dataset, case_id, repeat, score, score >= 0.8)

    def rows(target: str) -> list[tuple[str, float, float]]:
        answers = observations.answers(target)
        return [
            (answers.names[case], score, passed)
            for case, score, passed in zip(
                answers.cases.tolist(),
                answers.scores.tolist(),
                answers.passes.tolist(),
                strict=True,
            )
        ]

    assert rows("a") == [
        ("d1\0second\0half", 1.0, 1.0),
        ("d1\0second\0half", 0.9, 1.0),
        ("d1\0first", 0.0, 0.0),
    ]
    assert rows("b") == [("d2\0x", 1.0, 1.0)]
    assert rows("c") == []


@pytest.mark.parametrize("alike", [True, False], ids=["every-case-moved-alike", "mixed"])
def test_two_targets_differing_on_thousands_of_cases_get_their_statistics(alike: bool) -> None:
    """The smallest p-value a sign-flip test can give, 2 / 2**moved, once overflowed past
    1,023 cases that moved, and the summary of such a campaign failed."""
    a = [1.0] * 2000
    b = [0.0] * 2000 if alike else [0.0] * 1500 + [1.0] * 400 + [0.5] * 100
    (pair,) = campaign_statistics(observed({"a": a, "b": b})).pairs
    assert pair.smallest_p_value == 0.0
    assert pair.p_value is not None and pair.p_value < 1e-10
    assert pair.verdict == "worse"
