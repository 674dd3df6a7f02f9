"""The default binary intervals (``interval="per_metric"``) against oracles written here.

ROC AUC: a logit-scale Wald interval with DeLong's variance, the oracle computing the
placement values by comparing every positive with every negative (no cumulative counts);
accuracy: the Wilson score interval by its textbook formula; log loss: a studentized
(bootstrap-t) interval, the oracle a row bootstrap-t with this test's own generator.
"""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect, merge
from scipy.special import expit, logit
from scipy.stats import norm
from scipy.stats import t as student_t
from support.row_bootstrap import row_resamples

Z = norm.ppf(0.975)


def _confident(seed: int, n: int = 228) -> tuple[np.ndarray, np.ndarray]:
    """Most scores within 1e-3 of 0 or 1 (as test_eval_binary_intervals.py)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.37).astype(int)
    return y, expit(8.0 * rng.normal(3.0 * y, 1.0) - 12.0)


def _tied(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    return y, np.round(expit(rng.normal(1.5 * y, 1.0) - 0.5), 2)  # many ties


def _delong_oracle(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """AUC and DeLong's variance from all positive-negative pairs (ties one half)."""
    pos, neg = s[y == 1], s[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return float(psi.mean()), float(v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg))


@pytest.mark.parametrize("data", [lambda: _tied(1, 300), lambda: _confident(4)],
                         ids=["tied-scores", "confident-n228"])
def test_auc_interval_is_the_logit_wald_interval_of_delong_s_variance(data) -> None:  # type: ignore[no-untyped-def]
    y, s = data()
    parts = [collect(y[i::3], s[i::3], threshold=0.5) for i in range(3)]  # merged partitions
    auc = performance_from_statistics(merge(parts), n_bootstrap=50).candidate.by_name()["roc_auc"]
    value, variance = _delong_oracle(y, s)
    # Student's t quantile, min(n_pos, n_neg) - 1 degrees of freedom
    quantile = student_t.ppf(0.975, min(y.sum(), len(y) - y.sum()) - 1)
    half = quantile * np.sqrt(variance) / (value * (1.0 - value))
    assert auc.value == pytest.approx(value, abs=1e-12)
    assert auc.ci_lower == pytest.approx(expit(logit(value) - half), abs=1e-12)
    assert auc.ci_upper == pytest.approx(expit(logit(value) + half), abs=1e-12)
    assert 0.0 < auc.ci_lower <= auc.value <= auc.ci_upper < 1.0


@pytest.mark.parametrize(("n_neg", "n_pos", "smaller"), [(30, 12, 12), (9, 25, 9)],
                         ids=["fewer-positives", "fewer-negatives"])
def test_a_perfect_separation_has_the_exact_lower_bound_of_its_smaller_class(
        n_neg: int, n_pos: int, smaller: int) -> None:
    y = np.array([0] * n_neg + [1] * n_pos)
    s = np.r_[np.linspace(0.01, 0.4, n_neg), np.linspace(0.6, 0.99, n_pos)]
    auc = performance_from_statistics(collect(y, s, threshold=0.5),
                                      n_bootstrap=50).candidate.by_name()["roc_auc"]
    # every one of `smaller` disjoint pairs ordered right has probability AUC**smaller: at most 2.5 %
    assert auc.value == 1.0 and auc.ci_upper == 1.0
    assert auc.ci_lower == pytest.approx(0.025 ** (1 / smaller), abs=1e-12)


def test_accuracy_interval_is_wilson_s_score_interval() -> None:
    y, s = _confident(4)
    acc = performance_from_statistics(collect(y, s, threshold=0.5),
                                      n_bootstrap=50).candidate.by_name()["accuracy"]
    n, p = len(y), float(np.mean((s >= 0.5) == y))
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * np.sqrt(p * (1 - p) / n + Z**2 / (4 * n * n)) / (1 + Z**2 / n)
    assert (acc.ci_lower, acc.ci_upper) == pytest.approx((centre - half, centre + half), abs=1e-12)


def test_log_loss_interval_is_within_resampling_noise_of_a_row_bootstrap_t() -> None:
    y, s = _confident(9, 300)
    resamples = 2000
    loss = -np.log(np.where(y == 1, s, 1.0 - s))
    ours = performance_from_statistics(collect(y, s, threshold=0.5), n_bootstrap=resamples,
                                       seed=3).candidate.by_name()["log_loss"]
    idx = row_resamples(len(y), resamples, seed=17)
    mean, se = loss.mean(), loss.std(ddof=1) / np.sqrt(len(y))
    t = (loss[idx].mean(axis=1) - mean) / (loss[idx].std(axis=1, ddof=1) / np.sqrt(len(y)))
    t = np.sort(t)
    assert ours.value == pytest.approx(mean, rel=1e-12)
    for end, q in ((ours.ci_lower, 0.975), (ours.ci_upper, 0.025)):
        spread = np.sqrt(resamples * q * (1 - q))  # one binomial sd of the order statistic
        lo = t[max(int(np.floor(resamples * q - 4 * spread)), 0)]
        hi = t[min(int(np.ceil(resamples * q + 4 * spread)), resamples - 1)]
        assert mean - hi * se - 1e-12 <= end <= mean - lo * se + 1e-12, (end, q)
    assert 0.0 <= ours.ci_lower <= ours.value <= ours.ci_upper
    # the skewed losses stretch it upwards, unlike a symmetric Wald interval
    assert ours.ci_upper - ours.value > ours.value - ours.ci_lower


def test_no_resamples_still_give_nan_intervals() -> None:
    y, s = _confident(4)
    report = performance_from_statistics(collect(y, s, threshold=0.5), n_bootstrap=0).candidate
    for name in ("roc_auc", "accuracy", "log_loss"):
        m = report.by_name()[name]
        assert np.isnan(m.ci_lower) and np.isnan(m.ci_upper), name


def _confident_population_truth() -> dict[str, float]:
    """AUC, accuracy and log loss of ``expit(4 x - 8)``, ``x ~ N(4 y + 0.4 b, 1)``, ``y ~
    Bernoulli(0.4)``, ``b ~ Bernoulli(0.4)`` (the bench's confident population): closed forms
    and quadrature, written here."""
    from scipy import integrate
    from scipy.special import log_expit

    comps = [(0.6, 0.0), (0.4, 0.4)]
    auc = sum(w1 * w0 * norm.cdf((4.0 + m1 - m0) / np.sqrt(2.0)) for w1, m1 in comps for w0, m0 in comps)
    accuracy = sum(w * (0.4 * norm.sf(2.0, 4.0 + m, 1.0) + 0.6 * norm.cdf(2.0, m, 1.0)) for w, m in comps)

    def expected_loss(mean: float, sign: float) -> float:
        return integrate.quad(lambda x: -log_expit(sign * (4.0 * x - 8.0)) * norm.pdf(x, mean, 1.0),
                              mean - 12.0, mean + 12.0, limit=200)[0]

    log_loss = sum(w * (0.4 * expected_loss(4.0 + m, 1.0) + 0.6 * expected_loss(m, -1.0))
                   for w, m in comps)
    return {"roc_auc": float(auc), "accuracy": float(accuracy), "log_loss": float(log_loss)}


@pytest.mark.e2e
def test_a_confident_model_at_n200_is_covered_in_93_to_97_percent() -> None:
    """Seeded simulation (a minute or two): 400 sets of 200 rows, AUC 0.997. The percentile
    interval covers the AUC in about 83 % of such sets (bench/RESULTS.md); the per-metric
    intervals must be consistent with 93-97 % for AUC and accuracy (2.5 Monte Carlo
    standard errors, 2.7 points, as tests/intervals/test_interval_coverage.py), and the log loss with
    at least 90 % (92.7 % in the bench's 1,000 sets)."""
    truth, rng, sets = _confident_population_truth(), np.random.default_rng(2027), 400
    hits = {name: 0 for name in truth}
    percentile_auc = 0
    for rep in range(sets):
        y = (rng.random(200) < 0.4).astype(int)
        x = rng.normal(4.0 * y + 0.4 * (rng.random(200) < 0.4), 1.0)
        stats = collect(y, expit(4.0 * x - 8.0), threshold=0.5)
        report = performance_from_statistics(stats, n_bootstrap=300, seed=rep).candidate
        for name in hits:
            m = report.by_name()[name]
            assert 0.0 <= m.ci_lower <= m.value <= m.ci_upper, m
            hits[name] += m.ci_lower <= truth[name] <= m.ci_upper
        auc = performance_from_statistics(stats, n_bootstrap=300, seed=rep,
                                          interval="percentile").candidate.by_name()["roc_auc"]
        percentile_auc += auc.ci_lower <= truth["roc_auc"] <= auc.ci_upper
    noise = 2.5 * np.sqrt(0.95 * 0.05 / sets)
    rates = {name: h / sets for name, h in hits.items()}
    print(rates, percentile_auc / sets)  # the figures, shown with -s or on failure
    assert percentile_auc <= 0.90 * sets  # the shortfall the per-metric intervals are for
    for name in ("roc_auc", "accuracy"):
        assert 0.93 - noise <= rates[name] <= 0.97 + noise, rates
    assert rates["log_loss"] >= 0.90, rates


def test_a_metric_name_built_at_run_time_gets_its_method() -> None:
    from modelgate.evaluation.metric_intervals import per_metric_interval

    name = "".join(["roc", "_", "auc"])  # equal to "roc_auc" but not the same object
    none = {name: np.array([0.9])}
    got = per_metric_interval(name, 1.0, none, none, 30, 34, 25, 0.0, 0.95)
    assert got == pytest.approx((0.025 ** (1 / 9), 1.0), abs=1e-12)
