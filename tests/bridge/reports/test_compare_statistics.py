"""The statistics of a real campaign (`evalrelay run` on the embedded Redis, three mock
targets answering the same cases three times each) checked number by number against
scipy and statsmodels computed here from the JSONL; and `compare --gate` and its GitHub
output on that campaign.

The targets: `strong` answers every case right; `twin` answers as `strong` but for one
case, half right (a difference noise explains); `weak` answers 11 of 16 half right and
fails at random a third of the time (a regression no noise explains).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import comb
from scipy.stats import permutation_test
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower
from statsmodels.stats.proportion import proportion_confint

from tests.conftest import embedded_env, read_jsonl

COUNTRIES = [
    ("France", "Paris"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Peru", "Lima"),
    ("Kenya", "Nairobi"), ("Japan", "Tokyo"), ("Chile", "Santiago"), ("Egypt", "Cairo"),
    ("Norway", "Oslo"), ("Canada", "Ottawa"), ("Ghana", "Accra"), ("Laos", "Vientiane"),
    ("Cuba", "Havana"), ("Mali", "Bamako"), ("Fiji", "Suva"), ("Iran", "Tehran"),
]  # fmt: skip
REPEATS = 3
TARGETS = ("strong", "twin", "weak")


def answers(half_right: int) -> dict[str, str]:
    """Right (both evaluators: score 1) but for the first `half_right` cases, which name the
    city without saying `capital` (score 0.5, below the pass threshold)."""
    return {
        f"capital-{country.lower()}": (
            f"{city}, I believe." if n < half_right else f"The capital of {country} is {city}."
        )
        for n, (country, city) in enumerate(COUNTRIES)
    }


def targets_yaml() -> str:
    weak = {"failure_rate": 0.3, "failure_kind": "model_failure"}
    return json.dumps(
        {
            "targets": [
                {"name": "strong", "provider": "mock", "responses": answers(0)},
                {"name": "twin", "provider": "mock", "responses": answers(1)},
                {"name": "weak", "provider": "mock", "responses": answers(11), **weak},
            ]
        }
    )


def eval_file(target: str) -> str:
    """YAML with each case's `id` on a line of its own, for the annotations to point at."""
    lines = [f"dataset: capitals\ntarget: {target}\nevalcases:"]
    for country, city in COUNTRIES:
        lines.append(
            f"  - id: capital-{country.lower()}\n"
            f"    input_messages:\n"
            f"      - {{role: user, content: 'What is the capital of {country}?'}}\n"
            f"    evaluators:\n"
            f"      - {{name: city, type: contains, value: {city}}}\n"
            f"      - {{name: capital, type: icontains, value: capital}}"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The project's root and the campaign's results file."""
    root = tmp_path_factory.mktemp("project")
    (root / "evalrelay.yaml").write_text("{}\n")
    (root / "targets.yaml").write_text(targets_yaml())
    (root / "evals").mkdir()
    for target in TARGETS:
        (root / "evals" / f"{target}.yaml").write_text(eval_file(target))
    home = tmp_path_factory.mktemp("home")
    done = evalrelay(root, home, "run", "evals", "--repeats", str(REPEATS), "--name", "stats")
    assert done.returncode == 1, done.stdout + done.stderr  # weak's cases failed
    (results,) = (root / "results").glob("*stats*.jsonl")
    return root, results


def evalrelay(
    root: Path, home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalrelay", *args],
        cwd=root,
        env={**embedded_env(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=240,
    )


def compare(
    campaign: tuple[Path, Path], *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    root, results = campaign
    return evalrelay(root, root.parent / "compare-home", "compare", str(results), *args, env=env)


def sibling(results: Path, suffix: str) -> Path:
    return results.with_name(results.name.removesuffix(".jsonl") + suffix)


Graded = dict[tuple[str, str], list[tuple[float, bool]]]


def graded_by_target(results: Path) -> dict[str, Graded]:
    """Each target's graded answers (score, passed) by case, from the JSONL alone."""
    latest: dict[tuple[str, str, str, int], tuple[float, bool]] = {}
    for line in read_jsonl(results):
        if line["status"] in ("ok", "model_failure") and line["score"] is not None:
            key = (str(line["target"]), str(line["dataset"]), str(line["case_id"]), line["repeat"])
            latest[key] = (float(line["score"]), bool(line["passed"]))  # type: ignore[arg-type]
    found: dict[str, Graded] = defaultdict(dict)
    for (target, dataset, case, _), answer in sorted(latest.items()):
        found[target].setdefault((dataset, case), []).append(answer)
    return found


def expected_target(cases: Graded) -> dict[str, Any]:
    answers = [(s, p, i) for i, runs in enumerate(cases.values()) for s, p in runs]
    scores = np.array([a[0] for a in answers])
    passes = np.array([a[1] for a in answers], dtype=float)
    groups = np.array([a[2] for a in answers])

    def clustered(values: np.ndarray) -> Any:
        fit = OLS(values, np.ones_like(values))
        return fit.fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)

    low, high = clustered(scores).conf_int(0.05)[0]
    rate, nobs = passes.mean(), float(len(cases))  # all passed or all failed: the cases
    if 0 < rate < 1:  # every case was repeated: Kish's effective number, clustered by case
        cr0 = OLS(passes, np.ones(len(passes))).fit(
            cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}
        )
        nobs = rate * (1 - rate) / cr0.bse[0] ** 2
    wilson = proportion_confint(passes.mean() * nobs, nobs, alpha=0.05, method="wilson")
    fewest = min(len(runs) for runs in cases.values())
    pass_at_k = {
        str(k): float(
            np.mean(
                [
                    1
                    - comb(len(r) - sum(p for _, p in r), k, exact=True)
                    / comb(len(r), k, exact=True)
                    for r in cases.values()
                ]
            )
        )
        for k in range(1, fewest + 1)
    }
    return {
        "n": len(cases),
        "results": len(answers),
        "pass_rate": passes.mean(),
        "pass_rate_ci": [max(wilson[0], 0.0), min(wilson[1], 1.0)],
        "mean_score": scores.mean(),
        "mean_score_ci": [min(max(low, 0.0), 1.0), max(min(high, 1.0), 0.0)],
        "pass_at_k": pass_at_k,
    }


def expected_pairs(graded: dict[str, Graded], pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Below 30 cases the exact sign-flip test (scipy's permutation test, every sign pattern);
    its interval is checked apart (`interval_of`), being no scipy function's output."""
    found = []
    for a, b in pairs:
        shared = sorted(graded[a].keys() & graded[b].keys())
        a_means = np.array([np.mean([s for s, _ in graded[a][c]]) for c in shared])
        b_means = np.array([np.mean([s for s, _ in graded[b][c]]) for c in shared])
        differences = b_means - a_means
        assert len(shared) < 30 and np.ptp(differences) > 0  # the campaign's pairs
        effect = abs(differences.mean()) / differences.std(ddof=1)
        power = TTestPower().solve_power(effect_size=effect, alpha=0.05, power=0.8)
        if TTestPower().power(effect_size=effect, nobs=2, alpha=0.05) >= 0.8:
            power = 2  # the fewest cases a paired test takes
        found.append(
            {
                "a": a,
                "b": b,
                "n_paired": len(shared),
                "difference": differences.mean(),
                "difference_ci": differences,  # checked by `interval_of`
                "p_value": sign_flip_p(differences),
                "smallest_p_value": 2 / 2 ** np.count_nonzero(differences),
                "p_value_mcnemar": None,  # repeats: pass/fail is no single pair per case
                "cases_for_80_power": math.ceil(power),
            }
        )
    _, holm, _, _ = multipletests([p["p_value"] for p in found], method="holm")
    for pair, p_holm in zip(found, holm, strict=True):
        pair["p_value_holm"] = p_holm
        pair["verdict"] = (
            "no detectable difference"
            if p_holm >= 0.05
            else "better"
            if pair["difference"] > 0
            else "worse"
        )
    return found


def sign_flip_p(differences: np.ndarray) -> float:
    test = permutation_test((differences,), np.mean, permutation_type="samples", n_resamples=np.inf)
    return float(test.pvalue)


def interval_of(found: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Each interval holds the shifts the sign-flip test does not reject, and no more: at
    each end within -1..1, the test rejects a shift a little further out. An end is found
    by bisection to about 1e-12 of the shift where the p-value steps down, where scipy and
    evalrelay may count a tie of sums differently: it is checked a hair (1e-9) inside."""
    for pair, wanted in zip(found, expected, strict=True):
        differences = wanted.pop("difference_ci")
        low, high = pair.pop("difference_ci")
        assert -1 <= low <= pair["difference"] <= high <= 1
        for end, out in ((low, -1e-6), (high, 1e-6)):
            assert sign_flip_p(differences - end + out / 1000) >= 0.05 - 1e-9
            if abs(end) < 1:
                assert sign_flip_p(differences - end - out) < 0.05


def assert_close(found: Any, expected: Any, where: str) -> None:
    """Every number equal to within float rounding; keys and nulls exactly."""
    if isinstance(expected, dict):
        assert set(found) == set(expected), where
        for key in expected:
            assert_close(found[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list | tuple):
        assert len(found) == len(expected), where
        for i, (f, e) in enumerate(zip(found, expected, strict=True)):
            assert_close(f, e, f"{where}[{i}]")
    elif isinstance(expected, str) or expected is None:
        assert found == expected, where
    else:
        assert found == pytest.approx(float(expected), rel=1e-9, abs=1e-12), where


def test_summary_json_statistics_match_scipy_and_statsmodels(campaign: tuple[Path, Path]) -> None:
    _, results = campaign
    graded = graded_by_target(results)
    assert sorted(graded) == list(TARGETS)
    assert all(len(runs) == REPEATS for runs in graded["strong"].values())
    summary = json.loads(
        results.with_name(results.name.replace(".jsonl", ".summary.json")).read_text()
    )
    stats = summary["statistics"]
    for target in TARGETS:
        assert_close(stats["targets"][target], expected_target(graded[target]), target)
    pairs = [{k: v for k, v in p.items() if k != "test"} for p in stats["pairs"]]
    expected = expected_pairs(graded, list(combinations(TARGETS, 2)))
    interval_of(pairs, expected)
    assert_close(pairs, expected, "pairs")
    assert [p["verdict"] for p in stats["pairs"]] == [
        "no detectable difference",  # twin against strong: one case of sixteen
        "worse",  # weak against strong
        "worse",  # weak against twin
    ]


def test_compare_json_of_two_targets_matches_scipy_and_statsmodels(
    campaign: tuple[Path, Path],
) -> None:
    _, results = campaign
    done = compare(campaign, "--targets", "strong", "weak", "--json")
    assert done.returncode == 1, done.stderr  # cases regressed, and no --gate
    found = json.loads(done.stdout)
    graded = graded_by_target(results)
    assert found["before"] == found["after"] == results.name.removesuffix(".jsonl")
    for target in ("strong", "weak"):
        assert_close(found["targets"][target], expected_target(graded[target]), target)
    (pair,) = found["pairs"]
    assert pair.pop("test") == "exact sign-flip test on the case mean scores"
    expected = expected_pairs(graded, [("strong", "weak")])
    interval_of([pair], expected)
    assert_close([pair], expected, "pair")
    assert found["gate"] == {"min_effect": 0.0, "failed": [["strong", "weak"]]}


def test_gate_fails_on_a_significant_regression_only(campaign: tuple[Path, Path]) -> None:
    worse = compare(campaign, "--targets", "strong", "weak", "--gate")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "gate failed: worse beyond noise by 0 or more: weak vs strong (-" in worse.stdout
    noise = compare(campaign, "--targets", "strong", "twin", "--gate")
    assert noise.returncode == 0, noise.stdout + noise.stderr
    assert "regressed" in noise.stdout  # a case did regress: without --gate, exit 1
    assert compare(campaign, "--targets", "strong", "twin").returncode == 1
    small = compare(campaign, "--targets", "strong", "weak", "--gate", "--min-effect", "0.9")
    assert small.returncode == 0, small.stdout + small.stderr


def test_github_gets_the_pairs_and_an_annotation_at_each_regressed_case(
    campaign: tuple[Path, Path], tmp_path: Path
) -> None:
    root, results = campaign
    step_summary = tmp_path / "step-summary.md"
    done = compare(
        campaign,
        "--targets",
        "strong",
        "weak",
        "--json",
        GITHUB_ACTIONS="true",
        GITHUB_STEP_SUMMARY=str(step_summary),
    )
    annotations = [line for line in done.stderr.splitlines() if line.startswith("::")]
    record = json.loads(sibling(results, ".campaign.json").read_text())
    first_source = record["info"]["sources"][0]  # as `run` was given it: evals/strong.yaml
    source_lines = (root / first_source).read_text().splitlines()
    regressed = json.loads(done.stdout)["cases"]["regressed"]
    assert len(annotations) == regressed > 0
    for annotation in annotations:
        case = annotation.split("title=", 1)[1].split(" regressed", 1)[0]
        line = source_lines.index(f"  - id: {case}") + 1
        assert annotation == (
            f"::error file={first_source},line={line},title={case} regressed (strong → weak)"
            f"::ok 1.00 → {annotation.rsplit(' → ', 1)[1]}"
        )
        assert annotation.rsplit(" → ", 1)[1] in ("ok 0.50", "model_failure 0.00")
    summary = step_summary.read_text()
    assert "| a | b | cases | difference (b - a) [95% CI] |" in summary
    assert "| strong | weak | 16 |" in summary
