"""The size-aware null of JS divergence and the drift rule's use of it (issue #39).

Oracles written here, not taken from the code under test: the exact null of a tiny case by
enumerating every pair of multinomial outcomes (scipy's pmf and scipy's JS), the chi-square law
of large counts (``8 ln 2 * JS / (1/n + 1/m)`` is Pearson's two-sample statistic to second
order, ``chi2(k - 1)``), and false alarms of a stable feed counted with scipy's JS.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from modelgate.drift.data_drift import DriftThresholds, categorical_drift_from_counts, numeric_drift
from modelgate.drift.js_null import js_null_draws, js_null_quantile
from modelgate.drift.reference import build_categorical_reference_from_counts, build_numeric_reference
from modelgate.drift.w1_null import w1_null_draws, w1_null_quantile
from scipy.spatial.distance import jensenshannon
from scipy.stats import chi2, multinomial


def _exact_null(counts: list[int], m: int) -> tuple[np.ndarray, np.ndarray]:
    """Every JS value of (reference redrawn, current drawn) and its probability."""
    n, p = sum(counts), np.asarray(counts) / sum(counts)
    values, weights = [], []
    for a in itertools.product(range(n + 1), repeat=len(counts)):
        if sum(a) != n:
            continue
        for b in itertools.product(range(m + 1), repeat=len(counts)):
            if sum(b) != m:
                continue
            values.append(jensenshannon(a, b, base=2) ** 2)
            weights.append(multinomial.pmf(a, n, p) * multinomial.pmf(b, m, p))
    order = np.argsort(values)
    return np.round(np.asarray(values)[order], 12), np.asarray(weights)[order]


def test_the_draws_follow_the_exact_null_of_a_tiny_case() -> None:
    values, weights = _exact_null([3, 2, 1], 4)
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    draws = np.round(js_null_draws([3, 2, 1], 4, draws=20_000, seed=3), 12)
    assert set(np.unique(draws)) <= set(values)  # every draw is a possible value
    for cut in np.quantile(values, [0.2, 0.5, 0.8, 0.95]):  # CDF at a few atoms
        exact = weights[values <= cut].sum()
        assert np.mean(draws <= cut) == pytest.approx(exact, abs=0.012)  # 20,000 draws: sd <= 0.0035


def test_the_quantile_matches_the_chi_square_law_of_large_counts() -> None:
    counts, m = np.array([400_000, 250_000, 150_000, 120_000, 80_000]), 2_000
    scale = (1 / counts.sum() + 1 / m) / (8 * math.log(2))
    draws = js_null_draws(counts, m, draws=20_000, seed=1)
    assert np.mean(draws) == pytest.approx(4 * scale, rel=0.03)  # chi2(4) has mean 4
    got = js_null_quantile(counts, m, level=0.99, draws=20_000, seed=1)
    assert got == pytest.approx(chi2.ppf(0.99, 4) * scale, rel=0.06)


def test_the_null_is_seeded_and_shrinks_with_the_sample() -> None:
    counts = [400, 250, 150, 120, 80]
    assert js_null_quantile(counts, 50) == js_null_quantile(counts, 50)
    assert js_null_quantile(counts, 50, seed=1) != js_null_quantile(counts, 50)
    q = [js_null_quantile(counts, m) for m in (50, 200, 1000)]
    assert q[0] > q[1] > q[2]
    assert js_null_draws([7, 0, 0], 9, draws=4).tolist() == [0.0] * 4  # one category: no noise


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"reference_counts": [1.5, 2]}, "whole, non-negative counts"),
    ({"reference_counts": [0, 0]}, "positive sum"),
    ({"m": 0}, "m .the current sample's size. must be an integer >= 1, got 0"),
    ({"draws": 0}, "draws must be an integer >= 1, got 0"),
    ({"level": 1.0}, r"level must be in \(0, 1\), got 1.0"),
])
def test_bad_arguments_are_refused(kwargs: dict[str, object], match: str) -> None:
    args = {"reference_counts": [3, 2], "m": 5, **kwargs}
    with pytest.raises(ValueError, match=match):
        js_null_quantile(**args)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="null_level must be None or a number in"):
        DriftThresholds(null_level=0.0)


LEVELS = ("a", "b", "c", "d", "e")
PROBS = np.array([0.4, 0.25, 0.15, 0.12, 0.08])


def test_a_stable_categorical_feed_of_50_rows_rarely_alarms() -> None:
    """The bench's five-level feed: the old rule alarmed in 30 % of 50-row intervals."""
    rng = np.random.default_rng(39)
    alarms = old_alarms = total = 0
    for _ in range(4):  # references are samples too
        counts = dict(zip(LEVELS, rng.multinomial(5000, PROBS).tolist(), strict=True))
        ref = build_categorical_reference_from_counts(counts, name="c", seed=int(rng.integers(1000)))
        current = rng.multinomial(50, PROBS, size=1000)
        js = jensenshannon(np.asarray(ref.counts[:5])[None, :], current, axis=1, base=2) ** 2
        sample = dict(zip(LEVELS, current[0].tolist(), strict=True))
        res = categorical_drift_from_counts(ref, sample)
        old = categorical_drift_from_counts(ref, sample, thresholds=DriftThresholds(null_level=None))
        # the threshold is the old rule's or the null's quantile, whichever is higher
        assert res.threshold == max(old.threshold, js_null_quantile(ref.counts, 50))
        alarms += int(np.count_nonzero(js > res.threshold))
        old_alarms += int(np.count_nonzero(js > old.threshold))
        total += js.size
    assert alarms / total < 0.03 < 0.15 < old_alarms / total


def test_a_modest_categorical_shift_is_still_found_at_200_rows() -> None:
    rng = np.random.default_rng(7)
    counts = dict(zip(LEVELS, rng.multinomial(5000, PROBS).tolist(), strict=True))
    ref = build_categorical_reference_from_counts(counts, name="c")
    shifted = PROBS + np.array([-0.15, 0, 0, 0, 0.15])
    threshold = categorical_drift_from_counts(ref, dict(zip(LEVELS, [40] * 5, strict=True))).threshold
    js = jensenshannon(np.asarray(ref.counts[:5])[None, :], rng.multinomial(200, shifted, size=500),
                       axis=1, base=2) ** 2
    assert np.mean(js > threshold) > 0.95


def test_binned_js_uses_the_reference_bins_and_w1_the_reference_values() -> None:
    ref = build_numeric_reference(np.random.default_rng(2).normal(size=2000), name="x")
    cur = np.random.default_rng(3).normal(size=60)
    js = numeric_drift(ref, cur, thresholds=DriftThresholds(numeric_statistic="js_divergence"))
    bins = np.rint(ref.probabilities * ref.n).astype(np.int64)
    assert bins.sum() == 2000 and js.threshold >= js_null_quantile(bins, 60)
    w1, old = numeric_drift(ref, cur), numeric_drift(ref, cur, thresholds=DriftThresholds(null_level=None))
    assert w1.threshold == max(old.threshold, w1_null_quantile(ref.values, 2000, 60) / ref.scale)


def test_w1_draws_match_scipy_on_samples_drawn_from_the_reference() -> None:
    """The null's draws against a brute-force bootstrap: scipy's W1 between the reference and
    m of its values drawn with replacement; and the Brownian-bridge mean for uniform data,
    sqrt(m) E W1 -> E int_0^1 |B(t)| dt = sqrt(2 pi) / 8."""
    from scipy.stats import wasserstein_distance

    rng = np.random.default_rng(8)
    ref = np.sort(rng.exponential(size=400))
    brute = [wasserstein_distance(ref, rng.choice(ref, 40)) for _ in range(1500)]
    draws = w1_null_draws(ref, 40, draws=3000, seed=2)
    assert np.mean(draws) == pytest.approx(np.mean(brute), rel=0.04)
    assert np.quantile(draws, 0.95) == pytest.approx(np.quantile(brute, 0.95), rel=0.08)
    uniform = w1_null_draws(np.linspace(0, 1, 500), 400, draws=2000, seed=2)
    assert np.mean(uniform) * np.sqrt(400) == pytest.approx(np.sqrt(2 * np.pi) / 8, rel=0.03)
    # two samples: the one-sample quantile times sqrt((1/n + 1/m) / (1/m))
    assert w1_null_quantile(ref, 400, 40, draws=3000, seed=2) == pytest.approx(
        np.quantile(draws, 0.99, method="higher") * np.sqrt(1 + 40 / 400), rel=1e-12)
