"""Coverage of the 95 % bootstrap intervals by simulation: multiclass, regression, fairness.

Each test draws many data sets from a population whose metric is known, from a closed
form or (for the multiclass metrics) scikit-learn on a 400,000-row sample, and counts how
often the interval holds it. A coverage passes when it is consistent with a true coverage
in 93-97 % (95 % nominal, moderate n): within 2.5 Monte Carlo standard errors,
``2.5 sqrt(0.95 * 0.05 / repetitions)``, of that band (1.9 points at 800 repetitions), so
that a seed does not decide the verdict. Every interval of every repetition must also lie
in its metric's range and hold its point estimate. The simulations that take more than a
second or two are marked ``e2e``.
"""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.regression import evaluate_regression
from modelgate.fairness.metrics import fairness_report
from modelgate.fairness.regression import regression_fairness_report
from scipy import stats
from sklearn import metrics as skm

_UNIT = (0.0, 1.0)


def _check_interval(name: str, lower: float, value: float, upper: float,
                    limits: tuple[float, float]) -> None:
    assert limits[0] <= lower <= value <= upper <= limits[1], (name, lower, value, upper)


def _assert_covers(hits: dict[str, list[bool]]) -> None:
    rates = {name: round(float(np.mean(h)), 4) for name, h in hits.items()}
    print(rates)  # the figures, shown with -s or on failure
    for name, h in hits.items():
        noise = 2.5 * np.sqrt(0.95 * 0.05 / len(h))
        assert 0.93 - noise <= rates[name] <= 0.97 + noise, (name, rates)


# ---- multiclass --------------------------------------------------------------------------


def _multiclass(rng: np.random.Generator, n: int, signal: float, temperature: float
                ) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 3, n)
    logits = (rng.normal(size=(n, 3)) + signal * np.eye(3)[y]) * temperature
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    return y, proba / proba.sum(axis=1, keepdims=True)


def _multiclass_truth(y: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    pred = proba.argmax(axis=1)
    labels = [0, 1, 2]
    return {"accuracy": skm.accuracy_score(y, pred),
            "macro_f1": skm.f1_score(y, pred, average="macro"),
            "weighted_f1": skm.f1_score(y, pred, average="weighted"),
            "roc_auc_ovr_macro": skm.roc_auc_score(y, proba, multi_class="ovr", labels=labels),
            "log_loss": skm.log_loss(y, proba, labels=labels),
            **{f"recall[{k}]": v for k, v in enumerate(skm.recall_score(y, pred, average=None))},
            **{f"precision[{k}]": v
               for k, v in enumerate(skm.precision_score(y, pred, average=None))}}


MULTICLASS = [(1.5, 1.0, 500), (1.5, 0.05, 500), (2.8, 1.0, 800)]


@pytest.mark.e2e
@pytest.mark.parametrize(("signal", "temperature", "n"), MULTICLASS,
                         ids=["moderate", "narrow-scores", "near-separable"])
def test_multiclass_intervals_cover_in_93_to_97_percent(signal: float, temperature: float,
                                                        n: int) -> None:
    """Accuracy about 0.77 (moderate; narrow: every probability within a few hundredths of
    1/3) and 0.96 (near-separable); 600 repetitions of n rows, 300 resamples each."""
    rng = np.random.default_rng(31)
    truth = _multiclass_truth(*_multiclass(rng, 400_000, signal, temperature))
    hits: dict[str, list[bool]] = {}
    for rep in range(600):
        y, proba = _multiclass(rng, n, signal, temperature)
        for m in evaluate_multiclass(y, proba, n_bootstrap=300, seed=rep).metrics:
            limits = (0.0, np.inf) if m.name == "log_loss" else _UNIT
            _check_interval(m.name, m.ci_lower, m.value, m.ci_upper, limits)
            family = m.name.split("[")[0]  # one rate per class family: recall, precision
            hits.setdefault(family, []).append(m.ci_lower <= truth[m.name] <= m.ci_upper)
    _assert_covers(hits)


@pytest.mark.e2e
def test_multiclass_intervals_cover_with_a_handful_of_errors() -> None:
    """About 2 errors per class (accuracy 0.99, n = 500, macro one-vs-rest AUC 0.9996): the
    percentile interval of that AUC held the truth in 0.86 of 400 runs, the per-class
    recall and precision's in 0.87 / 0.89; the logit Wald interval with DeLong's variance
    (effective degrees of freedom) and Wilson's intervals cover (issue #38)."""
    rng = np.random.default_rng(35)
    truth = _multiclass_truth(*_multiclass(rng, 400_000, 3.5, 1.0))
    hits: dict[str, list[bool]] = {}
    for rep in range(400):
        for m in evaluate_multiclass(*_multiclass(rng, 500, 3.5, 1.0), n_bootstrap=300,
                                     seed=rep).metrics:
            hits.setdefault(m.name.split("[")[0], []).append(
                m.ci_lower <= truth[m.name] <= m.ci_upper)
    _assert_covers(hits)


# ---- regression --------------------------------------------------------------------------


def _regression(rng: np.random.Generator, n: int, errors: str) -> tuple[np.ndarray, np.ndarray]:
    y = rng.normal(scale=3.0, size=n)
    scale = 1.0 if errors == "normal" else 0.5 + np.abs(y) / 3.0
    return y, y + 0.4 + scale * rng.normal(size=n)


def _folded_mean(scale: float) -> float:
    """``E|0.4 + scale Z|`` for a standard normal ``Z`` (folded normal mean)."""
    return (scale * np.sqrt(2.0 / np.pi) * np.exp(-0.08 / scale**2)
            + 0.4 * (1.0 - 2.0 * stats.norm.cdf(-0.4 / scale)))


def _regression_truth(errors: str) -> dict[str, float]:
    """Closed forms for error ``0.4 + s Z`` with ``y ~ N(0, 9)``: ``s = 1`` (normal) or
    ``s = 0.5 + |y| / 3`` (heteroscedastic: ``E s^2 = 0.25 + E|y| / 3 + 1``, ``E|y| = 3
    sqrt(2 / pi)``; the MAE integrates the folded normal mean over ``y``)."""
    if errors == "normal":
        mse, mae = 1.16, _folded_mean(1.0)
    else:
        mse = 0.16 + 0.25 + np.sqrt(2.0 / np.pi) + 1.0
        mae = stats.norm(scale=3.0).expect(lambda y: _folded_mean(0.5 + abs(y) / 3.0))
    return {"rmse": float(np.sqrt(mse)), "mae": float(mae), "r2": 1.0 - mse / 9.0,
            "mean_error": 0.4}


_REGRESSION_LIMITS = {"rmse": (0.0, np.inf), "mae": (0.0, np.inf), "r2": (-np.inf, 1.0),
                      "mean_error": (-np.inf, np.inf)}


def _regression_coverage(errors: str, repetitions: int) -> None:
    rng = np.random.default_rng(32)
    truth = _regression_truth(errors)
    hits: dict[str, list[bool]] = {}
    for rep in range(repetitions):
        y, pred = _regression(rng, 300, errors)
        for m in evaluate_regression(y, pred, n_bootstrap=300, seed=rep).metrics:
            _check_interval(m.name, m.ci_lower, m.value, m.ci_upper, _REGRESSION_LIMITS[m.name])
            hits.setdefault(m.name, []).append(m.ci_lower <= truth[m.name] <= m.ci_upper)
    _assert_covers(hits)


@pytest.mark.e2e
@pytest.mark.parametrize("errors", ["normal", "heteroscedastic"])
def test_regression_intervals_cover_in_93_to_97_percent(errors: str) -> None:
    """n = 300, 800 repetitions of 300 resamples."""
    _regression_coverage(errors, 800)


@pytest.mark.e2e
@pytest.mark.xfail(strict=True, reason="Student t errors with 3 degrees of freedom (infinite fourth "
                   "moment) at n = 300: RMSE covers in 85 % of 800 runs with the studentized "
                   "interval widened by t_df / z (82 % without the widening, 74 % percentile), "
                   "r2 in 80 % (percentile); no bootstrap interval tried reaches 93 % with so "
                   "heavy a tail")
def test_regression_intervals_cover_with_heavy_tailed_errors() -> None:
    rng = np.random.default_rng(36)
    mse = 3.0 + 0.16
    truth = {"rmse": np.sqrt(mse), "mae": stats.t(3).expect(lambda x: abs(x + 0.4)),
             "r2": 1.0 - mse / 9.0, "mean_error": 0.4}
    hits: dict[str, list[bool]] = {k: [] for k in truth}
    for rep in range(800):
        y = rng.normal(scale=3.0, size=300)
        pred = y + 0.4 + rng.standard_t(3, size=300)
        for m in evaluate_regression(y, pred, n_bootstrap=300, seed=rep).metrics:
            hits[m.name].append(m.ci_lower <= truth[m.name] <= m.ci_upper)
    _assert_covers(hits)


# ---- fairness: binary gaps (the multiclass one-vs-rest gaps are these per class) ---------


def _binary_fairness(rng: np.random.Generator, n: int, tpr: np.ndarray, fpr: np.ndarray
                     ) -> tuple[np.ndarray, ...]:
    groups = rng.choice(3, n, p=[0.4, 0.35, 0.25])
    y = (rng.random(n) < 0.4).astype(int)
    pred = (rng.random(n) < np.where(y == 1, tpr[groups], fpr[groups])).astype(int)
    return y, pred, np.array(["a", "b", "c"])[groups]


def _binary_gaps(tpr: np.ndarray, fpr: np.ndarray) -> dict[str, float]:
    """Closed forms with base rate 0.4 in every group."""
    selection = 0.4 * tpr + 0.6 * fpr
    tpr_gap, fpr_gap = float(np.ptp(tpr)), float(np.ptp(fpr))
    return {"tpr_gap": tpr_gap, "fpr_gap": fpr_gap,
            "equalized_odds_difference": max(tpr_gap, fpr_gap),
            "tpr_fpr_gap_sum": tpr_gap + fpr_gap,
            "demographic_parity_difference": float(np.ptp(selection)),
            "predictive_parity_difference": float(np.ptp(0.4 * tpr / selection))}


def _binary_fairness_misses(tpr: list[float], fpr: list[float], n: int, repetitions: int
                            ) -> dict[str, tuple[list[bool], list[bool]]]:
    """Per gap, for each repetition: whether the truth lies below the interval, and above."""
    rng = np.random.default_rng(33)
    rates = np.array(tpr), np.array(fpr)
    truth = _binary_gaps(*rates)
    misses: dict[str, tuple[list[bool], list[bool]]] = {k: ([], []) for k in truth}
    for _ in range(repetitions):
        report = fairness_report(*_binary_fairness(rng, n, *rates), sensitive_feature="g")
        for e in report.estimates:
            top = 2.0 if e.name == "tpr_fpr_gap_sum" else 1.0
            _check_interval(e.name, e.ci_lower, e.value, e.ci_upper, (0.0, top))
            misses[e.name][0].append(truth[e.name] < e.ci_lower)
            misses[e.name][1].append(truth[e.name] > e.ci_upper)
    return misses


@pytest.mark.e2e
def test_fairness_gap_intervals_cover_separated_groups_in_93_to_97_percent() -> None:
    """Group rates well apart (TPR 0.85 / 0.55 / 0.70, FPR 0.25 / 0.05 / 0.15), n = 2000.
    ``tpr_fpr_gap_sum`` adds the ends of the two families' intervals, so it covers more:
    at least 93 % is asserted for it."""
    misses = _binary_fairness_misses([0.85, 0.55, 0.7], [0.25, 0.05, 0.15], 2000, 800)
    hits = {k: [not (a or b) for a, b in zip(*m, strict=True)] for k, m in misses.items()}
    _assert_covers({k: h for k, h in hits.items() if k != "tpr_fpr_gap_sum"})
    assert np.mean(hits["tpr_fpr_gap_sum"]) >= 0.93


@pytest.mark.e2e
def test_nine_groups_near_1_do_not_push_the_lower_end_past_a_lowered_group() -> None:
    """Ten groups of about 60 positives, nine at a TPR of 0.977 and one lowered by 0.2
    (n = 2,000): the nine show 57-60 of 60, and a window fitted with each group at its own rate
    put its top at the groups of 60 of 60, so the lower end (then at 4 %) lay above the true
    gap in 7.8 % of these 800 samples.  With the near-edge groups held on the edge while the
    window is fitted (``gap_lower_end.window_rates``): 3.8 % at 4 %; the interval's lower end,
    at 5 % for ten groups (``gap_intervals.end_shares``), within its level plus one point."""
    from modelgate.fairness.gap_intervals import gap_interval_of_families

    rng = np.random.default_rng(38)
    rates = np.full(10, 0.977)
    rates[0] -= 0.2
    above_truth = []
    for positives in rng.binomial(2000, 0.3, size=800):
        trials = rng.multinomial(positives, np.full(10, 0.1)).astype(float)
        x = rng.binomial(trials.astype(int), rates).astype(float)
        low = min(gap_interval_of_families([x], [trials], 0.95)[0],
                  float(np.ptp(x / trials)))  # holds its point
        above_truth.append(low > 0.2)
    assert np.mean(above_truth) <= 0.06


NEAR_TIE = ([0.75, 0.7, 0.7], [0.2, 0.2, 0.22])


@pytest.mark.e2e
def test_near_tied_fairness_gaps_have_a_conservative_upper_bound() -> None:
    """TPR 0.75 / 0.70 / 0.70 and FPR 0.20 / 0.20 / 0.22 at n = 1000: the upper bound misses
    the truth at most at its nominal 2.5 %, plus noise."""
    misses = _binary_fairness_misses(*NEAR_TIE, 1000, 400)
    above = {k: float(np.mean(m[1])) for k, m in misses.items()}
    assert all(rate <= 0.04 for rate in above.values()), above


@pytest.mark.e2e
def test_near_tied_fairness_gaps_cover_at_least_93_percent_and_rarely_lie_above_the_truth() -> None:
    """Near a tie the percentile interval of a max-minus-min gap lay too high (its lower end
    above the truth in 14-45 % of runs, issue #38); the pairwise interval's lower end reaches
    the truth: coverage at least 93 % (95.3-98 % here, 99 % for ``tpr_fpr_gap_sum``, which adds
    two ends; see bench/RESULTS.md) and the truth below the interval at most 5 % plus noise."""
    misses = _binary_fairness_misses(*NEAR_TIE, 1000, 400)
    noise = 2.5 * np.sqrt(0.95 * 0.05 / 400)
    for name, (below, above) in misses.items():
        hits = [not (a or b) for a, b in zip(below, above, strict=True)]
        assert np.mean(hits) >= 0.93 - noise, name
        assert np.mean(below) <= 0.05 + noise, name


# ---- fairness: regression gaps ------------------------------------------------------------


_SHIFT, _SCALE = np.array([0.0, 0.6, -0.2]), np.array([0.8, 0.8, 1.5])


def _regression_fairness(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    groups = rng.choice(3, n, p=[0.5, 0.35, 0.15])
    y = rng.normal(scale=2.0, size=n)
    pred = y + _SHIFT[groups] + _SCALE[groups] * rng.normal(size=n)
    return y, pred, np.array(["a", "b", "c"])[groups]


@pytest.mark.e2e
def test_regression_fairness_gap_intervals_cover_in_93_to_97_percent() -> None:
    """Group errors N(shift, scale^2) with y ~ N(0, 4): MAE is the folded normal mean
    ``s sqrt(2/pi) exp(-m^2 / 2 s^2) + m (1 - 2 Phi(-m / s))``, RMSE ``sqrt(m^2 + s^2)``, mean
    prediction ``m``; n = 1000, 800 repetitions of 300 resamples."""
    mae = (_SCALE * np.sqrt(2 / np.pi) * np.exp(-_SHIFT**2 / (2 * _SCALE**2))
           + _SHIFT * (1 - 2 * stats.norm.cdf(-_SHIFT / _SCALE)))
    truth = {"mae_gap": np.ptp(mae), "rmse_gap": np.ptp(np.hypot(_SHIFT, _SCALE)),
             "mean_prediction_gap": np.ptp(_SHIFT)}
    rng = np.random.default_rng(34)
    hits: dict[str, list[bool]] = {k: [] for k in truth}
    for rep in range(800):
        report = regression_fairness_report(*_regression_fairness(rng, 1000),
                                            sensitive_feature="g", n_bootstrap=300, seed=rep)
        for e in report.estimates:
            _check_interval(e.name, e.ci_lower, e.value, e.ci_upper, (0.0, np.inf))
            hits[e.name].append(e.ci_lower <= truth[e.name] <= e.ci_upper)
    _assert_covers(hits)
