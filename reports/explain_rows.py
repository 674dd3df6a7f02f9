"""Which rows a report explains, and why each was chosen.

Deterministic picks (highest and lowest scores, the most confident false positives and
false negatives, or the largest and smallest errors), then seeded random rows of the rest.
No I/O; the same inputs always give the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

Reason = Literal["highest_score", "lowest_score", "false_positive", "false_negative", "random",
                 "largest_error", "smallest_error"]

__all__ = ["Reason", "RowSelection", "select_error_rows", "select_rows"]


@dataclass(frozen=True, slots=True, eq=False)
class RowSelection:
    """Rows chosen for explanation and why.

    Attributes
    ----------
    indices : ndarray of int64
        Positions of the chosen rows (use with ``frame.iloc``), in order of choice.
    reasons : tuple of tuple of str
        For each chosen row, every reason it was chosen for (``"highest_score"``,
        ``"lowest_score"``, ``"false_positive"``, ``"false_negative"``, ``"random"``).
    """

    indices: npt.NDArray[np.int64]
    reasons: tuple[tuple[Reason, ...], ...]


def select_rows(
    scores: npt.ArrayLike,
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    *,
    n_each: int = 3,
    n_random: int = 3,
    seed: int = 0,
) -> RowSelection:
    """Choose rows worth explaining and say why each was chosen.

    Picks the ``n_each`` highest and lowest scores, the ``n_each`` most confident false
    positives (highest scores) and false negatives (lowest scores), then ``n_random``
    further rows drawn at random (seeded) from those not yet chosen. Ties go to the
    earlier row. A row chosen for several reasons appears once with all its reasons.

    Parameters
    ----------
    scores : array-like of float, shape (n,)
        Model scores (probability of the positive class).
    y_true, y_pred : array-like of {0, 1}, shape (n,)
        True and predicted labels.
    n_each : int, default 3
        Rows per deterministic reason.
    n_random : int, default 3
        Random rows added.
    seed : int, default 0
        Seeds the random rows.

    Returns
    -------
    RowSelection

    Raises
    ------
    ValueError
        For arrays of different lengths, non-binary labels, non-finite scores or
        negative counts.

    Examples
    --------
    >>> sel = select_rows([0.9, 0.2, 0.6, 0.1], [0, 1, 1, 0], [1, 0, 1, 0], n_each=1, n_random=0)
    >>> sel.indices.tolist(), sel.reasons
    ([0, 3, 1], (('highest_score', 'false_positive'), ('lowest_score',), ('false_negative',)))
    """
    s, t, p = _validate_selection(scores, y_true, y_pred, n_each, n_random)
    by_high = np.argsort(-s, kind="stable")
    by_low = np.argsort(s, kind="stable")
    return _pick(len(s), [
        ("highest_score", by_high),
        ("lowest_score", by_low),
        ("false_positive", by_high[(p[by_high] == 1) & (t[by_high] == 0)]),
        ("false_negative", by_low[(p[by_low] == 0) & (t[by_low] == 1)]),
    ], n_each, n_random, seed)


def select_error_rows(errors: npt.ArrayLike, *, n_each: int = 3, n_random: int = 3,
                      seed: int = 0) -> RowSelection:
    """Choose rows of a multiclass or regression model to explain: the worst and best.

    Picks the ``n_each`` rows with the largest and the smallest ``errors`` (ties to the
    earlier row), then ``n_random`` further rows drawn at random (seeded) from the rest;
    what an error is belongs to the caller (``1 - p(true class)``, ``|prediction - y|``).

    Parameters
    ----------
    errors : array-like of float, shape (n,)
        One finite error per row, larger is worse.
    n_each, n_random, seed
        As for :func:`select_rows`.

    Returns
    -------
    RowSelection

    Raises
    ------
    ValueError
        For non-finite errors or negative counts.

    Examples
    --------
    >>> sel = select_error_rows([0.5, 2.0, 0.1, 1.0], n_each=1, n_random=0)
    >>> sel.indices.tolist(), sel.reasons
    ([1, 2], (('largest_error',), ('smallest_error',)))
    """
    e = np.asarray(errors, dtype=np.float64)
    if e.ndim != 1 or not np.all(np.isfinite(e)):
        raise ValueError(f"errors must be a 1-D array of finite floats; got shape {e.shape!r}")
    _validate_selection(e, np.zeros(e.shape), np.zeros(e.shape), n_each, n_random)
    return _pick(len(e), [("largest_error", np.argsort(-e, kind="stable")),
                          ("smallest_error", np.argsort(e, kind="stable"))], n_each, n_random, seed)


def _pick(n: int, candidates: list[tuple[Reason, npt.NDArray[np.intp]]], n_each: int,
          n_random: int, seed: int) -> RowSelection:
    """The first ``n_each`` rows of each ordering, with their reasons, then ``n_random``
    seeded random rows of the rest."""
    picks: dict[int, list[Reason]] = {}
    for reason, order in candidates:
        for i in order[:n_each]:
            picks.setdefault(int(i), []).append(reason)
    rest = np.setdiff1d(np.arange(n), np.fromiter(picks, dtype=np.int64, count=len(picks)))
    rng = np.random.default_rng(seed)
    for i in rng.choice(rest, size=min(n_random, len(rest)), replace=False):
        picks[int(i)] = ["random"]
    indices = np.fromiter(picks, dtype=np.int64, count=len(picks))
    return RowSelection(_read_only(indices), tuple(tuple(r) for r in picks.values()))


def _validate_selection(
    scores: npt.ArrayLike, y_true: npt.ArrayLike, y_pred: npt.ArrayLike, n_each: int, n_random: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be a 1-D array of finite floats; got shape {s.shape!r}")
    labels = []
    for name, arr in (("y_true", y_true), ("y_pred", y_pred)):
        a = np.asarray(arr)
        if a.shape != s.shape:
            raise ValueError(f"{name} must have shape {s.shape!r} like scores; got {a.shape!r}")
        if not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0 and 1; got {np.unique(a)[:5]!r}")
        labels.append(a.astype(np.int64))
    for name, value in (("n_each", n_each), ("n_random", n_random)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0; got {value!r}")
    return s, labels[0], labels[1]


def _read_only(a: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    a.setflags(write=False)
    return a
