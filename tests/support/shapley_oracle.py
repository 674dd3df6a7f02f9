"""Interventional Shapley values from their definition, for the SHAP tests' fast tier.

Written out independently of modelgate/reports (no masks, keys or batching of its own): every
coalition ``S`` of the ``M`` features, ``v(S)`` the mean over the background rows ``b`` of
``f(x_S, b_rest)``, and ``phi_i = sum over S not holding i of |S|! (M - |S| - 1)! / M!
(v(S + i) - v(S))``. It is what ``shap.explainers.Exact`` computes with an independent masker,
without its numba kernels, whose compilation costs each test process several seconds; the tests
compare against shap itself in the e2e tier.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd


def brute_force_shapley(predict: Callable[[pd.DataFrame], np.ndarray], rows: pd.DataFrame,
                        background: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    """Shapley values ``(len(rows), len(names))`` of ``predict`` at each row, features masked
    by every background row in turn (module docstring); other columns come from the background.
    Columns keep their dtypes (strings stay strings)."""
    names = list(names)
    m = len(names)
    subsets = list(itertools.product([False, True], repeat=m))
    dtypes = background[names].dtypes.to_dict()
    xb = background[names].to_numpy(dtype=object)
    out = np.zeros((len(rows), m))
    for r in range(len(rows)):
        x = rows[names].to_numpy(dtype=object)[r]
        masked = np.concatenate([np.where(np.array(s), x, xb) for s in subsets])
        frame = pd.DataFrame(masked, columns=names).astype(dtypes)
        v = np.asarray(predict(frame), dtype=np.float64).reshape(len(subsets), len(xb)).mean(axis=1)
        value = dict(zip(subsets, v, strict=True))
        for s in subsets:
            size = sum(s)
            if size == m:
                continue  # no feature left to add
            weight = math.factorial(size) * math.factorial(m - size - 1) / math.factorial(m)
            for i in range(m):
                if not s[i]:
                    out[r, i] += weight * (value[s[:i] + (True,) + s[i + 1:]] - value[s])
    return out
