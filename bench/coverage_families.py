"""Coverage of the multiclass and regression intervals: populations and one simulated set.

Used by ``bench/bench_coverage.py --family multiclass|regression`` (its docstring has the
commands); the rows it prints are summarised there.

Multiclass population: three classes with priors 0.5, 0.3, 0.2; features ``x ~ N(mu_k,
I)`` in two dimensions, ``mu_k`` at radius ``r`` and angles 0, 120 and 240 degrees;
probabilities the exact posterior ``softmax(log prior_k + mu_k . x - |mu_k|^2 / 2)``
(a calibrated model), predicted class the most probable.  ``moderate`` (r = 0.7):
macro one-vs-rest AUC 0.78, accuracy 0.63; ``confident`` (r = 1.8): AUC 0.98, accuracy
0.90.  Population metrics by
Monte Carlo on 2 x 10^7 rows of a fixed seed, the mean of twenty 10^6-row slices' values
(the truth's standard error about a twentieth of a 50,000-row set's; on 10^6 rows it was
a fifth, and the one draw's error of +0.0013 in the confident log loss, 0.6 of a
50,000-row set's standard error, read as under-coverage at that size).

Regression population: ``x ~ N(0, 1)``, ``y = x + sigma t`` with ``t`` Student t of 5
degrees of freedom scaled to unit variance (errors of real models are heavy-tailed);
prediction ``0.9 x + 0.1``, so the error is ``e = 0.1 - 0.1 x - sigma t``.  Exact:
``mean_error = 0.1``, ``rmse = sqrt(0.02 + sigma^2)``, ``r2 = 1 - (0.02 + sigma^2) / (1
+ sigma^2)``; ``mae`` by quadrature over ``t``.  ``moderate``: sigma 1 (r2 about 0.49);
``confident``: sigma 0.2 (r2 about 0.94).

Paired deltas (``--family multiclass-deltas|regression-deltas``): the multiclass champion is
the same posterior evaluated at ``x + e``, ``e ~ N(0, 0.5^2 I)`` (a noisier copy, as the
binary scenarios' champion), deltas' truths from the two models on the same 10^6 rows; the
regression champion predicts ``0.8 x + 0.2`` (error ``0.2 - 0.2 x - sigma t``: exact mse
``0.08 + sigma^2``, mean error 0.2, mae by quadrature).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.multiclass_compare import compare_multiclass
from modelgate.evaluation.regression import compare_regression, evaluate_regression
from scipy import integrate
from scipy.stats import norm
from scipy.stats import t as student_t

PRIORS = np.array([0.5, 0.3, 0.2])
RADIUS = {"moderate": 0.7, "confident": 1.8}
SIGMA = {"moderate": 1.0, "confident": 0.2}
_T_DF = 5


def _means(radius: float) -> np.ndarray:
    angles = np.array([0.0, 2 * np.pi / 3, 4 * np.pi / 3])
    return radius * np.column_stack([np.cos(angles), np.sin(angles)])


def _posterior(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    logits = np.log(PRIORS) + x @ mu.T - 0.5 * (mu**2).sum(axis=1)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def _multiclass_rows(radius: float, n: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    mu = _means(radius)
    y = rng.choice(3, size=n, p=PRIORS)
    x = mu[y] + rng.normal(size=(n, 2))
    return y, _posterior(x, mu)


def _multiclass_pair(radius: float, n: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, the candidate's and the champion's probabilities (posterior at ``x + e``)."""
    mu = _means(radius)
    y = rng.choice(3, size=n, p=PRIORS)
    x = mu[y] + rng.normal(size=(n, 2))
    return y, _posterior(x, mu), _posterior(x + rng.normal(scale=0.5, size=(n, 2)), mu)


@cache
def multiclass_delta_truth(scenario: str) -> dict[str, float]:
    """Every multiclass delta (candidate - champion) on 10^6 rows of the population."""
    y, new, old = _multiclass_pair(RADIUS[scenario], 1_000_000, np.random.default_rng(12345))
    a = {m.name: m.value for m in evaluate_multiclass(y, new, n_bootstrap=0).metrics}
    b = {m.name: m.value for m in evaluate_multiclass(y, old, n_bootstrap=0).metrics}
    return {f"delta {k}": a[k] - b[k] for k in a}


def simulate_multiclass_deltas(scenario: str, n: int, rng: np.random.Generator, resamples: int,
                               seed: int) -> dict[str, tuple[float, float, float]]:
    y, new, old = _multiclass_pair(RADIUS[scenario], n, rng)
    report = compare_multiclass(y, new, old, n_bootstrap=resamples, seed=seed)
    return {f"delta {d.name}": (d.delta, d.ci_lower, d.ci_upper) for d in report.deltas}


TRUTH_SLICES = 20


@cache
def multiclass_truth(scenario: str) -> dict[str, float]:
    """Every multiclass metric on the population: the mean of its values on
    :data:`TRUTH_SLICES` slices of 10^6 rows (seed 12345; exact means for the accuracy and
    the log loss, within O(10^-6) of the population for the ratios and the AUC)."""
    rng = np.random.default_rng(12345)
    total: dict[str, float] = {}
    for _ in range(TRUTH_SLICES):
        y, p = _multiclass_rows(RADIUS[scenario], 1_000_000, rng)
        for m in evaluate_multiclass(y, p, n_bootstrap=0).metrics:
            total[m.name] = total.get(m.name, 0.0) + m.value / TRUTH_SLICES
    return total


def simulate_multiclass(scenario: str, n: int, rng: np.random.Generator, resamples: int,
                        seed: int) -> dict[str, tuple[float, float, float]]:
    y, p = _multiclass_rows(RADIUS[scenario], n, rng)
    report = evaluate_multiclass(y, p, n_bootstrap=resamples, seed=seed)
    return {m.name: (m.value, m.ci_lower, m.ci_upper) for m in report.metrics}


def _regression_rows(sigma: float, n: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=n)
    noise = rng.standard_t(_T_DF, size=n) / np.sqrt(_T_DF / (_T_DF - 2))
    return x + sigma * noise, 0.9 * x + 0.1


@cache
def regression_truth(scenario: str, slope: float = 0.9) -> dict[str, float]:
    """Exact population metrics of the prediction ``slope x + (1 - slope)`` (mae by
    quadrature over the t variable)."""
    sigma = SIGMA[scenario]
    scale = np.sqrt(_T_DF / (_T_DF - 2))
    s = 1.0 - slope  # sd of the (1 - slope) x part of the error, and its mean

    def abs_given_t(t: float) -> float:
        m = s - sigma * t / scale  # e given t is N(m, s^2)
        return float(s * np.sqrt(2 / np.pi) * np.exp(-m * m / (2 * s * s))
                     + m * (1 - 2 * norm.cdf(-m / s)))

    mae = integrate.quad(lambda t: abs_given_t(t) * student_t.pdf(t, _T_DF), -np.inf, np.inf,
                         limit=400)[0]
    mse = 2 * s * s + sigma**2
    return {"rmse": float(np.sqrt(mse)), "mae": float(mae), "r2": 1.0 - mse / (1.0 + sigma**2),
            "mean_error": s}


def regression_delta_truth(scenario: str) -> dict[str, float]:
    """Exact deltas of the candidate (``0.9 x + 0.1``) against the champion (``0.8 x + 0.2``)."""
    a, b = regression_truth(scenario), regression_truth(scenario, 0.8)
    return {f"delta {k}": a[k] - b[k] for k in a}


def simulate_regression_deltas(scenario: str, n: int, rng: np.random.Generator, resamples: int,
                               seed: int) -> dict[str, tuple[float, float, float]]:
    y, pred = _regression_rows(SIGMA[scenario], n, rng)
    old = pred + 0.1 - 0.1 * (pred - 0.1) / 0.9  # 0.8 x + 0.2 from 0.9 x + 0.1
    report = compare_regression(y, pred, old, n_bootstrap=resamples, seed=seed)
    return {f"delta {d.name}": (d.delta, d.ci_lower, d.ci_upper) for d in report.deltas}


def simulate_regression(scenario: str, n: int, rng: np.random.Generator, resamples: int,
                        seed: int) -> dict[str, tuple[float, float, float]]:
    y, pred = _regression_rows(SIGMA[scenario], n, rng)
    report = evaluate_regression(y, pred, n_bootstrap=resamples, seed=seed)
    return {m.name: (m.value, m.ci_lower, m.ci_upper) for m in report.metrics}
