"""Mergeable sufficient statistics: scikit-learn/fairlearn numbers, merges, coverage."""

from __future__ import annotations

import numpy as np
import pytest
from fairlearn.metrics import equalized_odds_difference
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import FALLBACK_GRID, collect, merge
from modelgate.fairness.disaggregate import encode_groups, table_from_counts
from modelgate.fairness.metrics import fairness_report, fairness_report_from_table
from scipy.stats import norm
from sklearn import metrics as skm


def _data(seed: int, n: int = 3000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    x = rng.normal(y * 1.2, 1.0)
    score = np.round(1.0 / (1.0 + np.exp(-x)), 3)  # rounded: many ties
    champion = 1.0 / (1.0 + np.exp(-(x + rng.normal(0.0, 0.7, n))))
    group = rng.choice(np.array(["a", "b", "c"], dtype=object), size=n, p=[0.5, 0.3, 0.2])
    return {"y": y, "score": score, "champion": champion, "group": group}


def _collect(d: dict[str, np.ndarray], bounds: list[int], max_cells: int = 1 << 15) -> list:
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        groups = {"group": encode_groups(d["group"][lo:hi])}
        parts.append(collect(d["y"][lo:hi], d["score"][lo:hi], threshold=0.5,
                             champion_score=d["champion"][lo:hi], champion_threshold=0.4,
                             groups=groups, max_cells=max_cells))
    return parts


def _sklearn(y: np.ndarray, s: np.ndarray, threshold: float) -> dict[str, float]:
    pred = (s >= threshold).astype(int)
    return {
        "roc_auc": skm.roc_auc_score(y, s), "accuracy": skm.accuracy_score(y, pred),
        "precision": skm.precision_score(y, pred), "recall": skm.recall_score(y, pred),
        "f1": skm.f1_score(y, pred), "log_loss": skm.log_loss(y, s),
        "brier": skm.brier_score_loss(y, s),
    }


def test_merged_partitions_give_scikit_learn_metrics_and_deltas() -> None:
    d = _data(0)
    merged = merge(_collect(d, [0, 1000, 1700, 3000]))
    summary = performance_from_statistics(merged, n_bootstrap=200, seed=0)
    expected = _sklearn(d["y"], d["score"], 0.5)
    expected_champion = _sklearn(d["y"], d["champion"], 0.4)
    for m in summary.candidate.metrics:
        assert m.value == pytest.approx(expected[m.name], rel=1e-12), m.name
        assert m.ci_lower <= m.value <= m.ci_upper, m.name
    for m in summary.champion.metrics:
        assert m.value == pytest.approx(expected_champion[m.name], rel=1e-12), m.name
    for delta in summary.comparison.deltas:
        assert delta.delta == pytest.approx(expected[delta.name] - expected_champion[delta.name],
                                            rel=1e-9, abs=1e-12), delta.name
        assert delta.ci_lower <= delta.delta <= delta.ci_upper, delta.name
    assert summary.auc_error_bound == 0.0
    assert summary.distinct_scores == len(np.unique(d["score"]))


def test_calibration_table_counts_as_scikit_learn() -> None:
    from sklearn.calibration import calibration_curve

    d = _data(1)
    merged = merge(_collect(d, [0, 1500, 3000]))
    bins = [b for b in performance_from_statistics(merged, n_bootstrap=0).candidate.calibration.bins
            if b.n > 0]
    rate, mean = calibration_curve(d["y"], d["score"], n_bins=10, strategy="uniform")
    np.testing.assert_allclose([b.observed_rate for b in bins], rate, rtol=1e-12)
    np.testing.assert_allclose([b.mean_predicted for b in bins], mean, rtol=1e-12)


@pytest.mark.parametrize("max_cells", [1 << 15, 256], ids=["exact-cells", "coarse-cells"])
def test_how_the_rows_are_partitioned_does_not_change_the_numbers(max_cells: int) -> None:
    d = _data(2)
    whole = merge(_collect(d, [0, 3000], max_cells), max_cells=max_cells)
    parts = _collect(d, [0, 10, 900, 2999, 3000], max_cells)
    split = merge([merge(parts[:2], max_cells=max_cells), merge(parts[2:], max_cells=max_cells)],
                  max_cells=max_cells)
    # the parts sit at finer levels than the whole; the merge ends at the whole's level
    assert split.bootstrap.level == whole.bootstrap.level
    if max_cells == 256:
        assert max(p.bootstrap.level for p in parts) > whole.bootstrap.level
    else:
        assert whole.bootstrap.level == 52  # every distinct score its own cell
    np.testing.assert_array_equal(split.bootstrap.cells, whole.bootstrap.cells)
    np.testing.assert_array_equal(split.bootstrap.counts, whole.bootstrap.counts)
    one = performance_from_statistics(whole, n_bootstrap=300, seed=3)
    many = performance_from_statistics(split, n_bootstrap=300, seed=3)
    for a, b in zip(one.candidate.metrics + one.comparison.deltas,
                    many.candidate.metrics + many.comparison.deltas, strict=True):
        exact = a.name not in ("log_loss", "brier")  # float sums, added in another order
        for x, y in ((getattr(a, "value", None), getattr(b, "value", None)), (a.ci_lower, b.ci_lower),
                     (a.ci_upper, b.ci_upper)):
            if x is not None:
                assert x == (y if exact else pytest.approx(y, rel=1e-12)), a.name


def test_intervals_are_close_to_the_row_bootstrap() -> None:
    from modelgate.evaluation.metrics import compare, evaluate

    d = _data(3, n=5000)
    summary = performance_from_statistics(merge(_collect(d, [0, 2500, 5000])), n_bootstrap=1000,
                                          interval="percentile")  # the row bootstrap's method
    rows = evaluate(d["y"], d["score"], threshold=0.5, n_bootstrap=1000)
    paired = compare(d["score"], d["champion"], d["y"], threshold=0.5, champion_threshold=0.4,
                     n_bootstrap=1000)
    for ours, theirs in zip(summary.candidate.metrics + summary.comparison.deltas,
                            rows.metrics + paired.deltas, strict=True):
        width = theirs.ci_upper - theirs.ci_lower
        assert abs(ours.ci_lower - theirs.ci_lower) < 0.15 * width, ours.name
        assert abs(ours.ci_upper - theirs.ci_upper) < 0.15 * width, ours.name


def test_merged_group_counts_give_the_row_fairness_report_and_fairlearn() -> None:
    d = _data(4)
    merged = merge(_collect(d, [0, 400, 3000]))
    counted = merged.groups[0]
    pred = (d["score"] >= 0.5).astype(int)
    from_counts = fairness_report_from_table(table_from_counts(counted.labels, counted.counts),
                                             sensitive_feature="group", n_bootstrap=200)
    from_rows = fairness_report(d["y"], pred, d["group"], sensitive_feature="group", n_bootstrap=200)
    assert from_counts.estimates == from_rows.estimates
    eod = from_counts.by_name()["equalized_odds_difference"].value
    assert eod == pytest.approx(equalized_odds_difference(d["y"], pred, sensitive_features=d["group"]))


def test_groups_seen_in_later_partitions_are_added_and_missing_stays_last() -> None:
    y, s = np.array([1, 0, 1, 0]), np.array([0.9, 0.1, 0.8, 0.7])
    first = collect(y[:2], s[:2], threshold=0.5, groups={"g": encode_groups(np.array(["b", None],
                                                                                        dtype=object))})
    second = collect(y[2:], s[2:], threshold=0.5, groups={"g": encode_groups(np.array(["a", "b"],
                                                                                         dtype=object))})
    counted = merge([first, second]).groups[0]
    assert counted.labels == ("b", "a", "__missing__")
    # tn, fp, fn, tp: b has a true positive and a false positive, a a true positive
    assert counted.counts.tolist() == [[0, 1, 0, 1], [0, 0, 0, 1], [1, 0, 0, 0]]


def test_too_many_distinct_scores_fall_back_to_a_grid_with_a_reported_error_bound() -> None:
    # two scores in one grid cell of width 2**-20: one positive above one negative
    width = 1.0 / FALLBACK_GRID
    y = np.array([1, 0, 0, 1])
    s = np.array([0.5 + 0.75 * width, 0.5 + 0.25 * width, 0.1, 0.9])
    summary = performance_from_statistics(collect(y, s, threshold=0.5, max_distinct=2), n_bootstrap=0)
    auc = summary.candidate.by_name()["roc_auc"].value
    exact = skm.roc_auc_score(y, s)
    assert exact == 1.0 and auc == pytest.approx(1.0 - 1 / 8)  # the tied pair counts one half
    assert summary.auc_error_bound == pytest.approx(1 / 8)  # 1 tied pair of 2 x 2 pairs, / 2
    assert abs(auc - exact) <= summary.auc_error_bound


def test_bad_input_names_the_problem() -> None:
    with pytest.raises(ValueError, match="champion_threshold is required"):
        collect([0, 1], [0.1, 0.9], threshold=0.5, champion_score=[0.2, 0.8])
    with pytest.raises(ValueError, match="score must be probabilities"):
        collect([0, 1], [0.1, 1.5], threshold=0.5)
    with pytest.raises(ValueError, match="max_cells must be an integer >= 16"):
        collect([0, 1], [0.1, 0.9], threshold=0.5, max_cells=3)
    with_champion = collect([0, 1], [0.1, 0.9], threshold=0.5, champion_score=[0.2, 0.8],
                            champion_threshold=0.5)
    with pytest.raises(ValueError, match="with and without a champion"):
        merge([with_champion, collect([0, 1], [0.1, 0.9], threshold=0.5)])
    with pytest.raises(ValueError, match="different thresholds"):
        merge([collect([0, 1], [0.1, 0.9], threshold=0.5), collect([0, 1], [0.1, 0.9], threshold=0.6)])


@pytest.mark.e2e  # 400 simulated sets: 6-7 s, a coverage simulation for the slow tier
def test_auc_interval_covers_a_known_auc_in_93_to_97_percent_of_400_simulations() -> None:
    """Binormal scores: negatives N(0, 1), positives N(d, 1), so AUC = Phi(d / sqrt(2))."""
    shift, n, repetitions = 1.0, 500, 400
    truth = norm.cdf(shift / np.sqrt(2.0))
    rng = np.random.default_rng(7)
    covered = 0
    for rep in range(repetitions):
        y = rng.integers(0, 2, n)
        score = 1.0 / (1.0 + np.exp(-rng.normal(y * shift, 1.0)))
        auc = performance_from_statistics(collect(y, score, threshold=0.5), n_bootstrap=400,
                                          seed=rep).candidate.by_name()["roc_auc"]
        covered += auc.ci_lower <= truth <= auc.ci_upper
    assert 0.93 <= covered / repetitions <= 0.97
