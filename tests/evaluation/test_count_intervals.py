"""Recall, precision, F1 and Brier intervals of the binary metrics (issue #38).

Oracles written here: the textbook Wilson score interval, scipy's
``binomtest(...).proportion_ci(method="wilson")``, and a studentized bootstrap over the
test's own row resamples (``tests/support/row_bootstrap.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.metrics import evaluate
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect, merge
from scipy.special import expit
from scipy.stats import binomtest, norm
from support.row_bootstrap import row_resamples

Z = norm.ppf(0.975)


def _wilson(successes: int, trials: int, z: float = Z) -> tuple[float, float]:
    """Wilson (1927): the roots in p of ``(phat - p)^2 = z^2 p (1 - p) / n``."""
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return centre - half, centre + half


def _data(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    return y, expit(2.5 * rng.normal(2.0 * y, 1.0) - 2.5)


def _confusion(y: np.ndarray, s: np.ndarray) -> tuple[int, int, int]:
    predicted = s >= 0.5
    return (int((predicted & (y == 1)).sum()), int((predicted & (y == 0)).sum()),
            int((~predicted & (y == 1)).sum()))


@pytest.mark.parametrize("seed", [1, 2], ids=["seed-1", "seed-2"])
def test_recall_precision_and_f1_are_wilson_intervals_of_their_counts(seed: int) -> None:
    y, s = _data(seed, 300)
    parts = [collect(y[i::4], s[i::4], threshold=0.5) for i in range(4)]
    report = performance_from_statistics(merge(parts), n_bootstrap=50).candidate.by_name()
    tp, fp, fn = _confusion(y, s)
    for name, (k, m) in {"recall": (tp, tp + fn), "precision": (tp, tp + fp)}.items():
        got = (report[name].ci_lower, report[name].ci_upper)
        assert got == pytest.approx(_wilson(k, m), abs=1e-12), name
        ci = binomtest(k, m).proportion_ci(0.95, method="wilson")
        assert got == pytest.approx((ci.low, ci.high), abs=1e-12), name
    # F1 = 2 J / (1 + J) with J = tp / (tp + fp + fn), J's Wilson interval mapped
    low, high = _wilson(tp, tp + fp + fn)
    f1 = report["f1"]
    assert f1.value == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=1e-15)
    assert (f1.ci_lower, f1.ci_upper) == pytest.approx(
        (2 * low / (1 + low), 2 * high / (1 + high)), abs=1e-12)
    assert f1.ci_lower <= f1.value <= f1.ci_upper


def test_the_row_level_evaluate_gives_the_same_count_intervals() -> None:
    y, s = _data(3, 250)
    rows = evaluate(y, s, n_bootstrap=50, seed=1).by_name()
    table = performance_from_statistics(collect(y, s, threshold=0.5), n_bootstrap=50,
                                        seed=1).candidate.by_name()
    for name in ("recall", "precision", "f1", "accuracy"):
        assert (rows[name].ci_lower, rows[name].ci_upper) == (
            table[name].ci_lower, table[name].ci_upper), name


def test_24_positives_all_found_read_recall_1_with_a_wilson_interval_not_a_point() -> None:
    """The issue's case: a percentile interval over the cells read recall 1 [1, 1]."""
    y = np.r_[np.ones(24, int), np.zeros(176, int)]
    s = np.r_[np.linspace(0.6, 0.99, 24), np.linspace(0.01, 0.7, 176)]
    recall = performance_from_statistics(collect(y, s, threshold=0.5),
                                         n_bootstrap=200).candidate.by_name()["recall"]
    assert recall.value == 1.0 and recall.ci_upper == 1.0
    # at p = 1 Wilson's lower end is n / (n + z^2)
    assert recall.ci_lower == pytest.approx(24 / (24 + Z * Z), abs=1e-12)
    assert round(recall.ci_lower, 4) == 0.862


def test_brier_interval_is_within_resampling_noise_of_a_row_bootstrap_t() -> None:
    y, s = _data(9, 300)
    resamples = 2000
    loss = (s - y) ** 2
    ours = performance_from_statistics(collect(y, s, threshold=0.5), n_bootstrap=resamples,
                                       seed=3).candidate.by_name()["brier"]
    idx = row_resamples(len(y), resamples, seed=17)
    mean, se = loss.mean(), loss.std(ddof=1) / np.sqrt(len(y))
    t = np.sort((loss[idx].mean(axis=1) - mean)
                / (loss[idx].std(axis=1, ddof=1) / np.sqrt(len(y))))
    assert ours.value == pytest.approx(mean, rel=1e-12)
    for end, q in ((ours.ci_lower, 0.975), (ours.ci_upper, 0.025)):
        spread = np.sqrt(resamples * q * (1 - q))  # one binomial sd of the order statistic
        lo = t[max(int(np.floor(resamples * q - 4 * spread)), 0)]
        hi = t[min(int(np.ceil(resamples * q + 4 * spread)), resamples - 1)]
        assert mean - hi * se - 1e-12 <= end <= mean - lo * se + 1e-12, (end, q)
    assert 0.0 <= ours.ci_lower <= ours.value <= ours.ci_upper <= 1.0


def test_brier_of_rows_all_exactly_right_is_not_the_point_zero() -> None:
    """Every row's squared error 0: a bootstrap gives [0, 0]; at most the Clopper-Pearson
    share 1 - 0.025^(1/n) of the population can err, by at most 1 each."""
    y = np.r_[np.ones(10, int), np.zeros(14, int)]
    s = y.astype(float)
    brier = performance_from_statistics(collect(y, s, threshold=0.5),
                                        n_bootstrap=100).candidate.by_name()["brier"]
    assert brier.value == 0.0 and brier.ci_lower == 0.0
    assert brier.ci_upper == pytest.approx(1.0 - 0.025 ** (1 / 24), abs=1e-12)


@pytest.mark.parametrize("n", [12, 30], ids=["12-rows", "30-rows"])
def test_few_rows_never_give_a_point_interval(n: int) -> None:
    y, s = _data(5, n)
    y[:2] = [0, 1]  # both classes
    report = performance_from_statistics(collect(y, s, threshold=0.5),
                                         n_bootstrap=200).candidate
    for m in report.metrics:
        if m.undefined_reason is None:
            assert m.ci_upper > m.ci_lower, m
            assert 0.0 <= m.ci_lower <= m.value <= m.ci_upper, m
            assert m.name == "log_loss" or m.ci_upper <= 1.0, m


def test_mapped_and_one_process_intervals_are_equal() -> None:
    y, s = _data(6, 400)
    rng = np.random.default_rng(7)
    champion = np.clip(s + rng.normal(0.0, 0.1, len(y)), 0.0, 1.0)
    whole = performance_from_statistics(
        collect(y, s, threshold=0.5, champion_score=champion, champion_threshold=0.5),
        n_bootstrap=300, seed=2)
    order = rng.permutation(len(y))
    parts = [collect(y[i], s[i], threshold=0.5, champion_score=champion[i],
                     champion_threshold=0.5) for i in np.array_split(order, 5)]
    mapped = performance_from_statistics(merge(parts), n_bootstrap=300, seed=2)
    assert mapped.candidate.metrics == whole.candidate.metrics
    assert mapped.comparison is not None and whole.comparison is not None
    for a, b in zip(mapped.comparison.deltas, whole.comparison.deltas, strict=True):
        assert (a.delta, a.ci_lower, a.ci_upper) == pytest.approx(
            (b.delta, b.ci_lower, b.ci_upper), abs=1e-12), a.name


def test_a_recall_delta_of_two_models_that_find_every_positive_is_not_the_point_zero() -> None:
    """Both models find all 30 positives: every resample's recall difference is 0, and the
    percentile interval was [0, 0]. Tango's score interval with no discordant positive:
    ``(b - c - n d)^2 = z^2 n d (1 - d)`` at ``b = c = 0`` gives ``d = -+ z^2 / (n + z^2)``."""
    rng = np.random.default_rng(12)
    y = np.r_[np.ones(30, int), np.zeros(90, int)]
    s = np.r_[rng.uniform(0.6, 1.0, 30), rng.uniform(0.0, 0.7, 90)]
    h = np.r_[rng.uniform(0.55, 1.0, 30), rng.uniform(0.0, 0.8, 90)]
    stats = collect(y, s, threshold=0.5, champion_score=h, champion_threshold=0.5)
    comparison = performance_from_statistics(stats, n_bootstrap=300).comparison
    assert comparison is not None
    delta = comparison.by_name()["recall"]
    end = Z * Z / (30 + Z * Z)
    assert delta.delta == 0.0
    assert (delta.ci_lower, delta.ci_upper) == pytest.approx((-end, end), abs=1e-12)
