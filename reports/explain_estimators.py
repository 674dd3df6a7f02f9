"""The two SHAP estimators behind :func:`modelgate.reports.explanation.explain`.

``exact_values``
    Exact Shapley values: every one of the ``2**M`` coalitions of every row is evaluated
    (through :class:`~modelgate.reports.explain_masking.MaskedEvaluator`, so all coalitions
    of a block of rows go to the model in a few large batches) and combined with the
    Shapley weights ``|S|! (M - |S| - 1)! / M!``. Its standard errors are 0.

``permutation_values``
    An estimate with a standard error per value: for each row, ``P`` orderings of the
    features are drawn with their reverses (antithetic pairs); along each ordering the
    features are switched on one at a time and each is credited with the change of the
    masked output (the estimator of ``shap.PermutationExplainer``). A Shapley value is the
    mean of a feature's credit over its ``M`` positions, each position equally likely. The
    first and last positions are cheap to know exactly (``v({i}) - v({})`` and
    ``v(N) - v(N - {i})``: ``2 M`` coalitions, which the orderings mostly evaluate anyway),
    so the estimate is stratified by position: ``(first_i + last_i) / M`` exactly, plus
    ``(M - 2) / M`` times the mean of the credits ``i`` got in a middle position. The
    orderings' share of end positions is random, so this misses ``f(x) - E[f(X)]`` by a
    small amount, which is shared out equally (the estimate stays additive). At equal
    coalition evaluations this was 4-15% closer to exact values than plain antithetic
    sampling on 12- and 16-feature MLPs (bench/RESULTS.md). The ``P`` pairs are independent
    draws, so the standard error is the jackknife over pairs (leave one pair out; needs
    ``P >= 2``), shrunk towards the row's pooled variance so that it cannot collapse where
    the pairs happened to agree (:mod:`modelgate.reports.explain_errors` says how and why).

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

from .explain_errors import PRIOR_DF, pooled_standard_errors
from .explain_masking import MaskedEvaluator, unique_rows

__all__ = ["Estimate", "exact_values", "permutation_evaluations", "permutation_values"]


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
    """Exact Shapley values over all ``2**m`` coalitions of each of ``n_rows`` rows.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> product = lambda f: (f["a"] * f["b"]).to_numpy()
    >>> ev = MaskedEvaluator(product, ("a", "b"), [np.array([1.0]), np.array([1.0])],
    ...                      [np.array([0.0]), np.array([0.0])], "value", 1000)
    >>> exact_values(ev, 1, 2).values.tolist()  # the interaction is split equally
    [[0.5, 0.5]]
    """
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
    ev: MaskedEvaluator, n_rows: int, m: int, n_permutations: int, rng: np.random.Generator,
    *, prior_df: float = PRIOR_DF,
) -> Estimate:
    """Antithetic permutation estimate, stratified by position, with jackknife standard
    errors over its ``n_permutations >= 2`` independent pairs, each shrunk towards its row's
    pooled variance with weight ``prior_df`` (0: the jackknife alone; see
    :func:`~modelgate.reports.explain_errors.pooled_standard_errors`).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> linear = lambda f: f[["a", "b", "c", "d"]].to_numpy() @ np.array([1.0, 2.0, 3.0, 4.0])
    >>> ev = MaskedEvaluator(linear, ("a", "b", "c", "d"), [np.ones(1)] * 4, [np.zeros(1)] * 4,
    ...                      "value", 1000)
    >>> est = permutation_values(ev, 1, 4, 3, np.random.default_rng(0))
    >>> est.values.round(12).tolist(), est.standard_errors.round(12).tolist()  # additive: exact
    ([[1.0, 2.0, 3.0, 4.0]], [[0.0, 0.0, 0.0, 0.0]])
    """
    base, full = ev.endpoints()
    forward = rng.permuted(np.tile(np.arange(m), (n_rows, n_permutations, 1)), axis=2)
    orders = np.concatenate([forward, forward[:, :, ::-1]], axis=1)  # (rows, 2P, M)
    rank = np.argsort(orders, axis=2)  # rank[r, o, f] = position of feature f
    steps = np.arange(1, m)
    masks = rank[:, :, None, :] < steps[None, None, :, None]  # (rows, 2P, M-1, M)
    ends = np.concatenate([np.eye(m, dtype=bool), ~np.eye(m, dtype=bool)])  # {i}, then N - {i}
    all_masks = np.concatenate([masks.reshape(n_rows, -1, m),
                                np.broadcast_to(ends, (n_rows, 2 * m, m))], axis=1)
    row_of = np.broadcast_to(np.arange(n_rows)[:, None], all_masks.shape[:2])
    keyed = np.concatenate([row_of.reshape(-1, 1), all_masks.reshape(-1, m)], axis=1)
    # coalitions repeated across the orderings of a row (and the end strata) are evaluated once
    unique, inverse = unique_rows(keyed.astype(np.int64))
    v_unique = ev.coalitions(unique[:, 0].astype(np.intp), unique[:, 1:].astype(bool))
    v_all = v_unique[inverse.ravel()].reshape(all_masks.shape[:2])
    v = np.empty(masks.shape[:2] + (m + 1,), dtype=np.float64)
    v[:, :, 0] = base
    v[:, :, m] = full[:, None]
    v[:, :, 1:m] = v_all[:, : masks.shape[1] * (m - 1)].reshape(masks.shape[:3])
    ends_mean = (v_all[:, -2 * m : -m] - base + full[:, None] - v_all[:, -m:]) / m
    credit = np.take_along_axis(np.diff(v, axis=2), rank, axis=2)  # (rows, 2P, M)
    middle = (rank > 0) & (rank < m - 1)
    # per pair (axis 1): credits in the middle positions, how many, and all credits
    pair_mid = (credit * middle).reshape(n_rows, 2, n_permutations, m).sum(axis=1)
    pair_n = middle.reshape(n_rows, 2, n_permutations, m).sum(axis=1)
    pair_all = credit.reshape(n_rows, 2, n_permutations, m).sum(axis=1)
    total = _stratified(pair_mid.sum(1), pair_n.sum(1), pair_all.sum(1), 2 * n_permutations,
                        ends_mean, full - base, m)
    # jackknife: the estimate without each pair in turn (pairs are independent draws)
    leave_out = _stratified(pair_mid.sum(1)[:, None] - pair_mid, pair_n.sum(1)[:, None] - pair_n,
                            pair_all.sum(1)[:, None] - pair_all, 2 * n_permutations - 2,
                            ends_mean[:, None], (full - base)[:, None], m)
    spread = np.square(leave_out - leave_out.mean(axis=1, keepdims=True)).sum(axis=1)
    errors = np.sqrt((n_permutations - 1) / n_permutations * spread)
    errors = pooled_standard_errors(errors, n_permutations, prior_df=prior_df)
    return Estimate(total, errors, np.full(n_rows, base), full)


def _stratified(
    mid_sum: npt.NDArray[np.float64], mid_n: npt.NDArray[np.int64], all_sum: npt.NDArray[np.float64],
    n_orders: int, ends_mean: npt.NDArray[np.float64], delta: npt.NDArray[np.float64], m: int,
) -> npt.NDArray[np.float64]:
    """``(first + last) / M + (M - 2) / M * mean middle credit``, made additive.

    A feature that no ordering put in a middle position (few features and pairs) takes the
    mean of all its credits instead. The estimate misses ``delta`` by a small amount (the
    strata's sampled shares differ from their true ones); it is shared out equally.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        mid_mean = np.where(mid_n > 0, mid_sum / np.maximum(mid_n, 1), all_sum / n_orders)
    est = ends_mean + (m - 2) / m * mid_mean
    return est + (delta - est.sum(axis=-1))[..., None] / m


def permutation_evaluations(m: int, n_permutations: int) -> int:
    """Most coalitions :func:`permutation_values` evaluates per row, endpoints included.

    The orderings' prefixes of sizes 2 .. M-2, the ``M`` singletons and ``M`` complements
    (the end strata), and the empty and full coalitions; never more than ``2**M``.

    Examples
    --------
    >>> permutation_evaluations(12, 10), permutation_evaluations(3, 10)
    (206, 8)
    """
    return min(2**m, 2 * n_permutations * max(m - 3, 0) + 2 * m + 2)
