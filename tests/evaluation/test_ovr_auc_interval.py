"""The macro one-vs-rest ROC AUC's interval: DeLong's variance by brute force, a jackknife
and a row bootstrap written here, the logit Wald formula, the exact bound at separation."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.multiclass_compare import compare_multiclass
from modelgate.evaluation.ovr_auc import macro_ovr_auc_interval, macro_ovr_auc_variance
from scipy import special, stats
from sklearn.metrics import roc_auc_score
from support.row_bootstrap import row_resamples

from modelgate.intervals import satterthwaite_df


def _data(seed: int, n: int, c: int = 3, signal: float = 1.5, ties: bool = False
          ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    logits = rng.normal(size=(n, c)) + signal * np.eye(c)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if ties:
        proba = np.round(proba, 1)
        proba /= proba.sum(axis=1, keepdims=True)
    return y, proba


def _delong_by_pairs(pos: np.ndarray, neg: np.ndarray) -> float:
    """DeLong, DeLong and Clarke-Pearson (1988) from every positive-negative pair."""
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return float(v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size)


def _macro_auc(y: np.ndarray, proba: np.ndarray) -> float:
    return float(roc_auc_score(y, proba, multi_class="ovr", labels=list(range(proba.shape[1]))))


def _macro_auc_of_resamples(y: np.ndarray, proba: np.ndarray, resamples: np.ndarray) -> np.ndarray:
    """The macro one-vs-rest AUC of every resample at once: per class, Mann and Whitney's U
    from midranks (``scipy.stats.rankdata``, ties one half), ``(R_pos - n1 (n1 + 1) / 2) /
    (n1 n0)``; NaN where a resample lacks a class or its rest."""
    ys = y[resamples]
    aucs = []
    for k in range(proba.shape[1]):
        ranks = stats.rankdata(proba[resamples, k], axis=1)
        pos = ys == k
        n1 = pos.sum(axis=1).astype(float)
        n0 = ys.shape[1] - n1
        with np.errstate(invalid="ignore", divide="ignore"):
            aucs.append(((ranks * pos).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0))
    return np.mean(aucs, axis=0)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
def test_two_classes_give_the_binary_delong_variance(ties: bool) -> None:
    y, proba = _data(3, 120, c=2, ties=ties)
    proba[:, 0] = 1.0 - proba[:, 1]  # both columns rank the rows the same way, reversed
    want = _delong_by_pairs(proba[y == 1, 1], proba[y == 0, 1])
    assert macro_ovr_auc_variance(y, proba) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
def test_three_classes_agree_with_a_jackknife_and_a_row_bootstrap(ties: bool) -> None:
    """The classes' AUCs share rows and are correlated: the variance of their mean is not
    the mean of DeLong's variances over 9, which is checked to differ."""
    y, proba = _data(5, 400, ties=ties)
    got = macro_ovr_auc_variance(y, proba)
    n = len(y)
    without_row = np.array([np.delete(np.arange(n), i) for i in range(n)])
    leave_one_out = _macro_auc_of_resamples(y, proba, without_row)
    assert leave_one_out[7] == pytest.approx(_macro_auc(np.delete(y, 7), np.delete(proba, 7, axis=0)),
                                             abs=1e-12)
    jackknife = (n - 1) / n * np.sum((leave_one_out - leave_one_out.mean()) ** 2)
    assert got == pytest.approx(jackknife, rel=0.03)
    resampled = _macro_auc_of_resamples(y, proba, row_resamples(n, 800, seed=38))
    assert got == pytest.approx(resampled.var(ddof=1), rel=0.2)  # sd of a variance of 800: 5 %
    independent = sum(_delong_by_pairs(proba[y == k, k], proba[y != k, k]) for k in range(3)) / 9
    assert abs(got - independent) > 0.1 * got


def test_the_interval_is_the_logit_wald_formula_with_a_t_quantile() -> None:
    """``expit(logit(A) -+ q sqrt(V) / (A (1 - A)))``: symmetric on the logit scale, with
    ``q`` a t quantile of at most ``m - 1`` degrees of freedom (on a moderate model the
    effective degrees of freedom are close to ``m - 1``)."""
    y, proba = _data(7, 300)
    auc, variance = _macro_auc(y, proba), macro_ovr_auc_variance(y, proba)
    m = min(np.bincount(y).min(), len(y) - np.bincount(y).max())
    lower, upper = macro_ovr_auc_interval(auc, y, proba, 0.9) or (np.nan, np.nan)
    centre = special.logit(auc)
    assert centre - special.logit(lower) == pytest.approx(special.logit(upper) - centre,
                                                          rel=1e-9)
    q = (special.logit(upper) - centre) * auc * (1 - auc) / np.sqrt(variance)
    assert stats.t.ppf(0.95, m - 1) <= q <= 1.01 * stats.t.ppf(0.95, m - 1)
    report = evaluate_multiclass(y, proba, n_bootstrap=50, confidence_level=0.9).by_name()
    assert report["roc_auc_ovr_macro"].value == pytest.approx(auc, abs=1e-12)
    assert (report["roc_auc_ovr_macro"].ci_lower,
            report["roc_auc_ovr_macro"].ci_upper) == (lower, upper)


def test_satterthwaite_df_by_hand() -> None:
    """``2 V^2 / (sum d^4 - V^2 / n)``: deviations 3, 1, 1, 1 give V = 12, sum d^4 = 84,
    so 288 / (84 - 36) = 6."""
    assert satterthwaite_df(np.array([3.0, 1.0, -1.0, 1.0])) == pytest.approx(6.0)


def test_a_few_misplaced_rows_widen_the_interval_past_the_t_of_m() -> None:
    """A near-perfect model: a few rows carry the variance, the effective degrees of
    freedom are small and the interval is wider than with ``m - 1``."""
    y, proba = _data(11, 500, signal=3.5)
    auc = _macro_auc(y, proba)
    assert 0.999 < auc < 1.0
    variance = macro_ovr_auc_variance(y, proba)
    m = min(np.bincount(y).min(), len(y) - np.bincount(y).max())
    narrow = stats.t.ppf(0.975, m - 1) * np.sqrt(variance) / (auc * (1 - auc))
    lower, upper = macro_ovr_auc_interval(auc, y, proba, 0.95) or (np.nan, np.nan)
    assert lower < special.expit(special.logit(auc) - narrow)
    assert upper > special.expit(special.logit(auc) + narrow)
    assert 0.0 < lower < auc < upper < 1.0


def test_every_class_separated_gets_the_exact_bound() -> None:
    y = np.repeat([0, 1, 2], [30, 20, 25])
    proba = np.eye(3)[y] * 0.8 + 0.1 * (1 - np.eye(3)[y])
    report = evaluate_multiclass(y, proba, n_bootstrap=20).by_name()["roc_auc_ovr_macro"]
    assert report.value == 1.0 and report.ci_upper == 1.0
    assert report.ci_lower == pytest.approx(0.025 ** (1 / 20), rel=1e-12)  # m = 20 rows


def test_a_class_of_one_row_has_no_delong_variance() -> None:
    y, proba = _data(2, 60)
    y[:] = np.where(y == 2, 1, y)
    y[0] = 2
    assert np.isnan(macro_ovr_auc_variance(y, proba))
    assert macro_ovr_auc_interval(0.8, y, proba, 0.95) is None


def test_the_macro_auc_delta_is_the_joint_logit_normal_interval() -> None:
    """The two macro AUCs' logits jointly normal, their covariance here from a row
    bootstrap written here (DeLong's in the code, which it estimates), carried to the logit
    scale, t quantile of the rarer side's rows; the interval the quantiles of ``expit(g1) -
    expit(g2)`` from plain normal draws of this test's own generator."""
    y, new = _data(13, 300)
    old = np.roll(new, 1, axis=1) * 0.3 + new * 0.7  # a worse model on the same rows
    delta = compare_multiclass(y, new, old, n_bootstrap=50).by_name()["roc_auc_ovr_macro"]
    a = np.array([_macro_auc(y, new), _macro_auc(y, old)])
    resamples = row_resamples(len(y), 1500, seed=1313)
    # the vectorised rank-sum AUC is sklearn's on the data (and 3000 sklearn calls took 9 s)
    assert _macro_auc_of_resamples(y, new, np.arange(len(y))[None, :])[0] == pytest.approx(
        a[0], abs=1e-12)
    drawn = np.column_stack([_macro_auc_of_resamples(y, new, resamples),
                             _macro_auc_of_resamples(y, old, resamples)])
    cov = np.cov(drawn.T)
    assert 0.5 < cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]) < 0.99
    counts = np.bincount(y)
    m = int(min(counts.min(), (len(y) - counts).min()))
    factor = (stats.t.ppf(0.975, m - 1) / stats.norm.ppf(0.975)) ** 2
    jac = 1.0 / (a * (1 - a))
    g = np.random.default_rng(1314).multivariate_normal(
        special.logit(a), factor * cov * np.outer(jac, jac), size=200_000)
    want = np.quantile(special.expit(g[:, 0]) - special.expit(g[:, 1]), [0.025, 0.975])
    assert delta.delta == pytest.approx(a[0] - a[1], abs=1e-12)
    assert (delta.ci_lower, delta.ci_upper) == pytest.approx(want, abs=0.1 * (want[1] - want[0]))
    assert delta.ci_lower <= delta.delta <= delta.ci_upper


def test_identical_models_keep_the_exact_zero_delta() -> None:
    y, proba = _data(14, 200)
    delta = compare_multiclass(y, proba, proba, n_bootstrap=50).by_name()["roc_auc_ovr_macro"]
    assert (delta.ci_lower, delta.delta, delta.ci_upper) == (0.0, 0.0, 0.0)
