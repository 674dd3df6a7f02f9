"""performance_from_statistics on tiny cases: point metrics against scikit-learn, the records,
options, undefined metrics, the calibration table, the AUC error bound and the draws' chunks."""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np
import pytest
from modelgate.evaluation import performance
from modelgate.evaluation.performance import PerformanceSummary, performance_from_statistics
from modelgate.evaluation.sufficient import collect
from sklearn import metrics as skm

Y = np.array([0, 1, 1, 0, 1, 0, 1, 0])
S = np.array([0.2, 0.9, 0.4, 0.45, 0.55, 0.6, 0.8, 0.1])
H = np.array([0.3, 0.7, 0.6, 0.2, 0.4, 0.5, 0.9, 0.35])


def _sklearn(y: np.ndarray, s: np.ndarray, threshold: float) -> dict[str, float]:
    pred = (s >= threshold).astype(int)
    return {"roc_auc": skm.roc_auc_score(y, s), "accuracy": skm.accuracy_score(y, pred),
            "precision": skm.precision_score(y, pred), "recall": skm.recall_score(y, pred),
            "f1": skm.f1_score(y, pred), "log_loss": skm.log_loss(y, s),
            "brier": skm.brier_score_loss(y, s)}


def test_point_metrics_and_deltas_of_a_tiny_case_are_scikit_learn_s() -> None:
    stats = collect(Y, S, threshold=0.5, champion_score=H, champion_threshold=0.45)
    summary = performance_from_statistics(stats, n_bootstrap=50, seed=2)
    new, old = _sklearn(Y, S, 0.5), _sklearn(Y, H, 0.45)
    assert summary.champion is not None and summary.comparison is not None
    for report, expected in ((summary.candidate, new), (summary.champion, old)):
        assert {m.name: m.value for m in report.metrics} == pytest.approx(expected, rel=1e-12)
        assert all(m.n == 8 and m.undefined_reason is None for m in report.metrics)
        assert (report.n, report.n_bootstrap, report.confidence_level, report.seed) == (8, 50,
                                                                                        0.95, 2)
    assert (summary.candidate.threshold, summary.champion.threshold) == (0.5, 0.45)
    for d in summary.comparison.deltas:
        assert (d.candidate, d.champion) == pytest.approx((new[d.name], old[d.name]), rel=1e-12)
        assert d.delta == pytest.approx(new[d.name] - old[d.name], rel=1e-9, abs=1e-15)
        assert d.ci_lower <= d.delta <= d.ci_upper and d.n == 8
    c = summary.comparison
    assert (c.n, c.threshold, c.n_bootstrap, c.confidence_level, c.seed) == (8, 0.5, 50, 0.95, 2)
    assert summary.distinct_scores == 8 and summary.auc_error_bound == 0.0


def test_without_a_champion_there_is_no_comparison() -> None:
    summary = performance_from_statistics(collect(Y, S, threshold=0.5), n_bootstrap=20)
    assert summary.champion is None and summary.comparison is None
    assert [m.name for m in summary.candidate.metrics] == ["roc_auc", "accuracy", "precision",
                                                           "recall", "f1", "log_loss", "brier"]


def test_undefined_metrics_and_deltas_carry_their_reasons() -> None:
    # all labels 1 and no score above the candidate's threshold, worked by hand
    stats = collect([1, 1, 1], [0.2, 0.3, 0.4], threshold=0.5,
                    champion_score=[0.6, 0.7, 0.1], champion_threshold=0.5)
    summary = performance_from_statistics(stats, n_bootstrap=20)
    cand = summary.candidate.by_name()
    for name, reason in (("roc_auc", "label has one class only"),
                         ("precision", "no predicted positives at this threshold")):
        assert math.isnan(cand[name].value) and math.isnan(cand[name].ci_lower)
        assert math.isnan(cand[name].ci_upper) and cand[name].undefined_reason == reason
        assert cand[name].n == 3
    assert cand["recall"].value == 0.0 and cand["f1"].value == 0.0
    assert summary.comparison is not None
    deltas = summary.comparison.by_name()
    assert deltas["roc_auc"].undefined_reason == "candidate: label has one class only"
    assert deltas["precision"].undefined_reason == (
        "candidate: no predicted positives at this threshold")
    assert math.isnan(deltas["precision"].delta) and deltas["precision"].champion == 1.0
    assert deltas["recall"].delta == pytest.approx(-2 / 3) and deltas["recall"].n == 3
    # the champion's reason when only the champion's metric is undefined
    swapped = performance_from_statistics(collect(
        [1, 1, 1], [0.6, 0.7, 0.1], threshold=0.5, champion_score=[0.2, 0.3, 0.4],
        champion_threshold=0.5), n_bootstrap=20).comparison
    assert swapped is not None
    assert swapped.by_name()["precision"].undefined_reason == (
        "champion: no predicted positives at this threshold")


def test_the_calibration_table_of_a_tiny_case() -> None:
    table = performance_from_statistics(collect(Y, S, threshold=0.5), n_bootstrap=0).candidate.calibration
    assert (table.strategy, table.n_bins, len(table.bins)) == ("uniform", 10, 10)
    assert [b.lower for b in table.bins] == pytest.approx([i / 10 for i in range(10)])
    assert [b.upper for b in table.bins] == pytest.approx([i / 10 for i in range(1, 11)])
    # scores 0.1 -> bin 0 (an inner edge counts below), 0.2 -> 1, 0.4 -> 3, 0.45 -> 4,
    # 0.55 and 0.6 -> 5, 0.8 -> 7, 0.9 -> 8, by hand
    assert [b.n for b in table.bins] == [1, 1, 0, 1, 1, 2, 0, 1, 1, 0]
    five = table.bins[5]
    assert (five.mean_predicted, five.observed_rate) == pytest.approx((0.575, 0.5))
    assert math.isnan(table.bins[2].mean_predicted) and math.isnan(table.bins[2].observed_rate)
    assert (table.bins[8].mean_predicted, table.bins[8].observed_rate) == (0.9, 1.0)


def test_no_resamples_give_nan_percentile_intervals() -> None:
    summary = performance_from_statistics(collect(Y, S, threshold=0.5), n_bootstrap=0,
                                          interval="percentile")
    for m in summary.candidate.metrics:
        assert math.isfinite(m.value) and math.isnan(m.ci_lower) and math.isnan(m.ci_upper), m.name


def test_options_are_checked_keyword_only_and_default_as_documented() -> None:
    stats = collect(Y, S, threshold=0.5)
    with pytest.raises(ValueError, match="interval must be 'per_metric', 'percentile' or 'bca'; "
                                         "got 'wald'"):
        performance_from_statistics(stats, interval="wald")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        performance_from_statistics(stats, 100)  # type: ignore[misc]
    defaults = {k: p.default for k, p in inspect.signature(performance_from_statistics)
                .parameters.items() if k != "stats"}
    assert defaults == {"n_bootstrap": 1000, "confidence_level": 0.95, "seed": 0,
                        "interval": "per_metric"}
    by_default = performance_from_statistics(stats=stats, n_bootstrap=30).candidate
    explicit = performance_from_statistics(stats, n_bootstrap=30, confidence_level=0.95, seed=0,
                                           interval="per_metric").candidate
    assert by_default.metrics == explicit.metrics and by_default.seed == 0
    other = performance_from_statistics(stats, n_bootstrap=30, seed=1, interval="percentile")
    assert other.candidate.metrics != performance_from_statistics(
        stats, n_bootstrap=30, interval="percentile").candidate.metrics  # the seed matters
    assert performance_from_statistics(stats, n_bootstrap=1000).candidate.metrics == \
        performance_from_statistics(stats).candidate.metrics


@pytest.mark.parametrize("y", [[1, 1, 1], [0, 0, 0]], ids=["positives-only", "negatives-only"])
def test_a_grid_table_of_one_class_has_no_error_bound(y: list[int]) -> None:
    # max_distinct=1 puts the scores on the grid; one class makes the AUC undefined
    summary = performance_from_statistics(collect(y, [0.1, 0.5, 0.5 + 2**-22], threshold=0.5,
                                                  max_distinct=1), n_bootstrap=0)
    assert summary.auc_error_bound == 0.0


def test_the_error_bound_is_the_larger_of_the_two_models() -> None:
    width = 2.0**-20
    y = [1, 0, 0, 1]
    tied = [0.5 + 0.75 * width, 0.5 + 0.25 * width, 0.1, 0.9]  # one pair in one grid cell
    apart = [0.9, 0.1, 0.2, 0.8]
    for cand, champ in ((tied, apart), (apart, tied)):
        stats = collect(y, cand, threshold=0.5, champion_score=champ, champion_threshold=0.5,
                        max_distinct=2)
        bound = performance_from_statistics(stats, n_bootstrap=0).auc_error_bound
        assert bound == 1 / 8  # 1 tied pair of 2 x 2, counted one half


def test_the_summary_is_frozen_and_slotted() -> None:
    summary = performance_from_statistics(collect(Y, S, threshold=0.5), n_bootstrap=0)
    assert isinstance(summary, PerformanceSummary)
    with pytest.raises(dataclasses.FrozenInstanceError):
        summary.auc_error_bound = 1.0  # type: ignore[misc]
    assert not hasattr(summary, "__dict__")
    ends = performance._Ends(0.95, "percentile", np.ones(2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ends.method = "bca"  # type: ignore[misc]
    assert not hasattr(ends, "__dict__")


def test_draws_in_chunks_are_the_draws_of_one_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    # numpy's multinomial draws rows one after the other: 2 + 2 + 1 rows are the 5 of one call
    p = np.full(8, 1 / 8)
    whole = np.random.default_rng(3).multinomial(8, p, size=5)
    rng = np.random.default_rng(3)
    assert np.array_equal(whole, np.concatenate([rng.multinomial(8, p, size=k) for k in (2, 2, 1)]))
    stats = collect(Y, S, threshold=0.5, champion_score=H, champion_threshold=0.45)
    one = performance_from_statistics(stats, n_bootstrap=5, seed=3, interval="percentile")
    # 8 distinct scores per model: 8 cells
    assert len(stats.bootstrap.counts) == 8
    # 16 elements: chunks of 2 resamples (2, 2, 1); 1 element, fewer than the cells: of 1
    for elements in (16, 1):
        monkeypatch.setattr(performance, "_CHUNK_ELEMENTS", elements)
        chunked = performance_from_statistics(stats, n_bootstrap=5, seed=3, interval="percentile")
        assert chunked.champion is not None and one.champion is not None
        assert chunked.comparison is not None and one.comparison is not None
        # the same draws; only sums of the loss replicates may round differently (2.8e-17 seen)
        for got, want in ((chunked.candidate.metrics, one.candidate.metrics),
                          (chunked.champion.metrics, one.champion.metrics),
                          (chunked.comparison.deltas, one.comparison.deltas)):
            assert [e for m in got for e in (m.ci_lower, m.ci_upper)] == pytest.approx(
                [e for m in want for e in (m.ci_lower, m.ci_upper)], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("interval", ["percentile", "bca"])
def test_separated_classes_on_the_grid_give_an_auc_of_one_in_every_resample(interval: str) -> None:
    # every positive scores above every negative, so every resample with both classes has
    # AUC 1 (by hand); max_distinct=1 keeps the grid table, max_cells=16 coarse bootstrap cells,
    # one of them ([0.34375, 0.359375)) holding the negatives 0.345..0.355 and the positive 0.3575
    score = np.r_[0.26 + 0.005 * np.arange(20), 0.3575 + 0.005 * np.arange(20)]
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    stats = collect(y, score, threshold=0.5, max_distinct=1, max_cells=16)
    assert stats.candidate.scores.grid > 0
    auc = performance_from_statistics(stats, n_bootstrap=50, interval=interval)
    got = auc.candidate.by_name()["roc_auc"]
    assert (got.value, got.ci_lower, got.ci_upper) == (1.0, 1.0, 1.0)


def test_one_resample_gives_finite_percentile_ends() -> None:
    # one draw: every replicate interval is that draw's value, widened to hold the point
    summary = performance_from_statistics(collect(Y, S, threshold=0.5), n_bootstrap=1,
                                          interval="percentile")
    for m in summary.candidate.metrics:
        assert math.isfinite(m.ci_lower) and m.ci_lower <= m.value <= m.ci_upper, m.name
