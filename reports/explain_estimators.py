"""The two SHAP estimators behind :func:`modelgate.reports.explain.explain`.

``exact_values``
    Exact Shapley values: every one of the ``2**M`` coalitions of every row is evaluated
    (through :class:`~modelgate.reports.explain_masking.MaskedEvaluator`, so all coalitions
    of a block of rows go to the model in a few large batches) and combined with the
    Shapley weights ``|S|! (M - |S| - 1)! / M!``. Its standard errors are 0.

``permutation_values``
    An estimate with a standard error per value: for each row, ``P`` orderings of the
    features are drawn with their reverses (antithetic pairs); along each ordering the
    features are switched on one at a time and each is credited with the change of the
    masked output (the estimator of ``shap.PermutationExplainer``). Every ordering's
    credits add up to ``f(x) - E[f(X)]``, so the estimate is additive by construction. The
    ``P`` pair means of a value are independent and identically distributed, so its
    standard error is their sample standard deviation over ``sqrt(P)`` (needs ``P >= 2``).

Why permutations and not paired kernel sampling above the exact budget: the kernel
estimator's regression couples every value to every sampled coalition, so its standard
error needs a bootstrap or the paired-sampling variance of Covert and Lee (2021), while a
permutation pair is a plain independent draw. The kernel regression was only clearly more
accurate while its coalitions covered a good share of the ``2**M`` (about ``M <= 9`` at
shap's default budget), and those models are now computed exactly.
``bench/bench_shap_accuracy.py`` compares the estimate with shap's Permutation and Kernel
explainers at the same number of coalition evaluations.

References
----------
.. [1] Lundberg, S. M. and Lee, S.-I. (2017). A Unified Approach to Interpreting Model
   Predictions. NeurIPS 30.
.. [2] Mitchell, R., Cooper, J., Frank, E. and Holmes, G. (2022). Sampling Permutations for
   Shapley Value Estimation. JMLR 23(43) (antithetic orderings).
.. [3] Covert, I. and Lee, S.-I. (2021). Improving KernelSHAP: Practical Shapley Value
   Estimation Using Linear Regression. AISTATS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .explain_masking import MaskedEvaluator, unique_rows

__all__ = ["Estimate", "exact_values", "permutation_values"]


@dataclass(frozen=True, slots=True, eq=False)
class Estimate:
    """SHAP values of a block of rows with their standard errors.

    Attributes
    ----------
    values, standard_errors : ndarray of float64, shape (n_rows, n_features)
        The values, and the standard error of each (0 for exact values).
    base_values, model_output : ndarray of float64, shape (n_rows,)
        Mean output over the background, and the output on each row.
    """

    values: npt.NDArray[np.float64]
    standard_errors: npt.NDArray[np.float64]
    base_values: npt.NDArray[np.float64]
    model_output: npt.NDArray[np.float64]


def exact_values(ev: MaskedEvaluator, n_rows: int, m: int) -> Estimate:
    """Exact Shapley values over all ``2**m`` coalitions of each of ``n_rows`` rows."""
    base, full = ev.endpoints()
    codes = np.arange(2**m)
    bits = ((codes[:, None] >> np.arange(m)) & 1).astype(bool)
    inner = codes[1:-1]
    v = np.empty((n_rows, 2**m), dtype=np.float64)
    v[:, 0], v[:, -1] = base, full
    if len(inner):
        row_idx = np.repeat(np.arange(n_rows), len(inner))
        masks = np.tile(bits[inner], (n_rows, 1))
        v[:, 1:-1] = ev.coalitions(row_idx, masks).reshape(n_rows, len(inner))
    size = bits.sum(axis=1)
    weight = np.array(
        [math.factorial(s) * math.factorial(m - s - 1) / math.factorial(m) for s in range(m)]
    )
    values = np.empty((n_rows, m), dtype=np.float64)
    for i in range(m):
        without = codes[~bits[:, i]]
        gains = v[:, without | (1 << i)] - v[:, without]
        values[:, i] = gains @ weight[size[without]]
    return Estimate(values, np.zeros_like(values), np.full(n_rows, base), full)


def permutation_values(
    ev: MaskedEvaluator, n_rows: int, m: int, n_permutations: int, rng: np.random.Generator
) -> Estimate:
    """Antithetic permutation estimate with standard errors; ``n_permutations >= 2`` pairs."""
    base, full = ev.endpoints()
    forward = rng.permuted(np.tile(np.arange(m), (n_rows, n_permutations, 1)), axis=2)
    orders = np.concatenate([forward, forward[:, :, ::-1]], axis=1)  # (rows, 2P, M)
    rank = np.argsort(orders, axis=2)  # rank[r, o, f] = position of feature f
    steps = np.arange(1, m)
    masks = rank[:, :, None, :] < steps[None, None, :, None]  # (rows, 2P, M-1, M)
    row_of = np.broadcast_to(np.arange(n_rows)[:, None, None], masks.shape[:3])
    keyed = np.concatenate([row_of.reshape(-1, 1), masks.reshape(-1, m)], axis=1)
    # coalitions repeated across the orderings of a row are evaluated once
    unique, inverse = unique_rows(keyed.astype(np.int64))
    v_unique = ev.coalitions(unique[:, 0].astype(np.intp), unique[:, 1:].astype(bool))
    v = np.empty(masks.shape[:2] + (m + 1,), dtype=np.float64)
    v[:, :, 0] = base
    v[:, :, m] = full[:, None]
    v[:, :, 1:m] = v_unique[inverse.ravel()].reshape(masks.shape[:3])
    step_gain = np.diff(v, axis=2)  # gain of the feature added at each position
    credit = np.take_along_axis(step_gain, rank, axis=2)  # (rows, 2P, M), per feature
    pairs = (credit[:, :n_permutations] + credit[:, n_permutations:]) / 2  # (rows, P, M)
    values = pairs.mean(axis=1)
    errors = pairs.std(axis=1, ddof=1) / math.sqrt(n_permutations)
    return Estimate(values, errors, np.full(n_rows, base), full)
