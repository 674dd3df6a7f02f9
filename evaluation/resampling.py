"""Bootstrap resamples as count matrices, shared by the multiclass and regression metrics.

A resample of ``n`` rows drawn with replacement is the same thing as a vector of counts:
how often each row was drawn. Every metric there is a sum of per-row statistics (or, for
ROC AUC, sums over sorted rows), so one matrix product of a chunk of count vectors with
the per-row statistics evaluates a whole chunk of resamples at once. The resamples are
:func:`modelgate.evaluation.metrics.bootstrap_indices`' (same seed, same rows as the
binary metrics).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
from modelgate.evaluation.metrics import bootstrap_indices

__all__ = ["bootstrap_counts"]

# Counts held in memory at once (32 MiB of float64).
_CHUNK_ELEMENTS = 1 << 22


def bootstrap_counts(n: int, *, n_bootstrap: int, seed: int) -> Iterator[npt.NDArray[np.float64]]:
    """Yield chunks of resamples as float64 counts of shape ``(chunk, n)``.

    Parameters
    ----------
    n : int
        Number of rows, at least 1.
    n_bootstrap : int
        Number of resamples, at least 0.
    seed : int
        Seed of the resamples (see ``bootstrap_indices``).

    Yields
    ------
    numpy.ndarray
        Row ``b`` counts how often each row was drawn in resample ``b``; it sums to ``n``.

    Examples
    --------
    >>> [c.tolist() for c in bootstrap_counts(3, n_bootstrap=2, seed=0)]
    [[[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]]]
    """
    chunk = max(1, _CHUNK_ELEMENTS // n)
    for idx in bootstrap_indices(n, n_bootstrap=n_bootstrap, seed=seed, chunk_size=chunk):
        b = idx.shape[0]
        flat = (idx.astype(np.int64) + np.arange(b, dtype=np.int64)[:, None] * n).ravel()
        yield np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)
