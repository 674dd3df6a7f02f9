"""Adjusted p-values (q-values) of a family of tests: Benjamini-Hochberg, Benjamini-Yekutieli, Holm.

A test of the family is a discovery at level ``alpha`` when its adjusted p-value is at
most ``alpha``; that rejects the same tests as the step-up (BH, BY) or step-down (Holm)
procedure at ``alpha``.  What each controls:

* ``"bh"`` (Benjamini and Hochberg 1995): the false-discovery rate, for independent or
  positively dependent tests (PRDS); under the global null (no true difference
  anywhere) the FDR is the chance of any discovery, so it also bounds that.
* ``"by"`` (Benjamini and Yekutieli 2001): the false-discovery rate under any
  dependence, at the price of a factor ``sum(1 / k, k = 1..m)`` on every p-value.
* ``"holm"`` (Holm 1979): the family-wise error rate (the chance of any false
  discovery) under any dependence.

Hand-written in numpy (a few lines each) because the numeric cores must not need
statsmodels at run time; the tests hold them to
``statsmodels.stats.multitest.multipletests`` (``fdr_bh``, ``fdr_by``, ``holm``).

Examples
--------
>>> [round(q, 4) for q in adjusted_p_values([0.01, 0.04, 0.03, 0.2], "bh").tolist()]
[0.04, 0.0533, 0.0533, 0.2]
>>> [round(q, 4) for q in adjusted_p_values([0.01, 0.04, 0.03, 0.2], "holm").tolist()]
[0.04, 0.09, 0.09, 0.2]
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["CORRECTIONS", "Correction", "adjusted_p_values"]

Correction = Literal["bh", "by", "holm"]
#: The corrections by name, with what each controls (stated with every family of tests).
CORRECTIONS: dict[str, str] = {
    "bh": "Benjamini-Hochberg (false-discovery rate)",
    "by": "Benjamini-Yekutieli (false-discovery rate, any dependence)",
    "holm": "Holm (family-wise error rate)",
}


def adjusted_p_values(p_values: npt.ArrayLike, correction: str = "bh") -> npt.NDArray[np.float64]:
    """Adjusted p-values of one family of tests.

    Parameters
    ----------
    p_values : array_like of shape (m,)
        One p-value per test, in [0, 1]; NaN marks a test that was not made (it stays
        NaN and does not count in the family's size).
    correction : {"bh", "by", "holm"}, default "bh"
        See the module's docstring.

    Returns
    -------
    ndarray of shape (m,)
        Adjusted p-values in [0, 1], each at least its p-value, in the input's order.

    Raises
    ------
    ValueError
        On an unknown correction, a p-value outside [0, 1] or input not one-dimensional.

    Examples
    --------
    >>> adjusted_p_values([float("nan"), 0.02, 0.5], "by").round(4).tolist()
    [nan, 0.06, 0.75]
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}; got {correction!r}")
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be one-dimensional; got shape {p.shape!r}")
    made = ~np.isnan(p)
    if np.any((p[made] < 0) | (p[made] > 1)):
        raise ValueError("p_values must lie in [0, 1] (NaN for a test not made)")
    out = np.full(p.shape, np.nan)
    family = p[made]
    m = family.size
    if m == 0:
        return out
    order = np.argsort(family, kind="stable")
    ranked = family[order]
    rank = np.arange(1, m + 1, dtype=np.float64)
    if correction == "holm":
        # step-down: (m - i + 1) p_(i), made non-decreasing from the smallest p up
        adjusted = np.maximum.accumulate(np.minimum((m - rank + 1.0) * ranked, 1.0))
    else:
        factor = np.sum(1.0 / rank) if correction == "by" else 1.0
        # step-up: m c(m) p_(i) / i, made non-decreasing from the largest p down
        adjusted = np.minimum.accumulate((factor * m * ranked / rank)[::-1])[::-1]
        adjusted = np.minimum(adjusted, 1.0)
    result = np.empty(m)
    result[order] = adjusted
    out[made] = result
    return out
