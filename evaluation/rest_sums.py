"""ROC AUC and DeLong's variance of a segment's rest, read off the column total's prefix sums.

The rest of a segment is every row of its column but the segment's, so its score table
is the total's minus the segment's, key by key.  Computing its AUC and DeLong variance
over that table costs O(the total's keys) per segment: with a column of 50 segments on
continuous scores, 50 passes over a table about as long as the rows (``bench/RESULTS.md``,
"Segments", Speed).  Here the sums both need are taken from the total's prefix sums,
evaluated at the segment's keys only, in O(segment's keys x log(total's keys)).

The algebra
-----------
With ``N_j``, ``P_j`` the total's negatives and positives at key ``j`` and ``n_j``,
``p_j`` the segment's, write ``H_j = 2 (negatives below j) + N_j`` and ``G_j = 2
(positives above j) + P_j`` (``h_j``, ``g_j`` the same of the segment).  A positive's
DeLong placement value is ``H_j / (2 n_neg)`` and a negative's ``G_j / (2 n_pos)``, so
``2 U = sum_j P_j H_j`` (the Mann-Whitney statistic, ties one half) and DeLong's variance
needs ``Q10 = sum_j P_j H_j**2`` and ``Q01 = sum_j N_j G_j**2``.  The rest's are those
sums over ``P - p``, ``H - h`` (and ``N - n``, ``G - g``).  Off the segment's keys
``p = n = 0`` and ``h``, ``g`` are constant between two consecutive segment keys
(``h = 2 x`` the segment's negatives below, ``g = 2 x`` its positives above), so over
each gap between segment keys

``sum (P H^2 - 2 c P H + c^2 P) = [P H^2] - 2 c [P H] + c^2 [P]``

with ``[.]`` a difference of the total's prefix sums; the gaps' ``[P H^2]`` together are
the total's sum less its value at the segment's keys.  ``2 U`` is exact in integers, so
the rest's AUC is bit-for-bit that of its table; ``Q10`` and ``Q01`` are float sums
(they exceed 2**63 at a few million rows), within a few units in the 13th digit of the
direct sums over the rest's table.

References
----------
.. [1] DeLong, E. R., DeLong, D. M. and Clarke-Pearson, D. L. (1988). Comparing the areas
   under two or more correlated receiver operating characteristic curves: a
   nonparametric approach. Biometrics 44(3), 837-845.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["RocSums", "TotalTable", "delong_from_sums", "rest_roc_sums", "table_roc_sums",
           "total_table"]

_IntArray = npt.NDArray[np.int64]
_FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RocSums:
    """What a score table's ROC AUC and DeLong variance need.

    Attributes
    ----------
    n_neg, n_pos : int
        Negatives and positives.
    twice_u : int
        ``2 U``: positive-negative pairs ordered right, twice, plus the tied pairs.
    q10, q01 : float
        ``sum_j P_j H_j**2`` and ``sum_j N_j G_j**2`` (see the module's docstring).
    """

    n_neg: int
    n_pos: int
    twice_u: int
    q10: float
    q01: float


@dataclass(frozen=True, slots=True)
class TotalTable:
    """A column total's score table with the exclusive prefix sums a rest is read from.

    Every ``*_before`` array has one entry more than the keys: entry ``j`` sums keys
    ``0 .. j - 1``.
    """

    keys: _FloatArray
    neg: _IntArray
    pos: _IntArray
    h: _IntArray
    g: _IntArray
    neg_before: _IntArray
    pos_before: _IntArray
    ph_before: _IntArray
    ng_before: _IntArray
    sums: RocSums


def _placements(neg: _IntArray, pos: _IntArray) -> tuple[_IntArray, _IntArray]:
    """``H = 2 x negatives below + neg`` and ``G = 2 x positives above + pos`` per key."""
    below = np.cumsum(neg) - neg
    above = pos.sum() - np.cumsum(pos)
    return 2 * below + neg, 2 * above + pos


def _square_sum(weight: _IntArray, value: _IntArray) -> float:
    v = value.astype(np.float64)
    return float((weight.astype(np.float64) * v * v).sum())


def table_roc_sums(neg: npt.ArrayLike, pos: npt.ArrayLike) -> RocSums:
    """:class:`RocSums` of a table of negatives and positives per sorted distinct key.

    Examples
    --------
    Negatives at keys 1, 2, positives at 2, 3: 2 U = 7 of 2 x 4 pairs (AUC 7/8):

    >>> r = table_roc_sums([1, 1, 0], [0, 1, 1])
    >>> r.twice_u, r.q10, r.q01
    (7, 25.0, 25.0)
    """
    n = np.asarray(neg, dtype=np.int64)
    p = np.asarray(pos, dtype=np.int64)
    h, g = _placements(n, p)
    return RocSums(int(n.sum()), int(p.sum()), int((p * h).sum()), _square_sum(p, h),
                   _square_sum(n, g))


def total_table(keys: npt.ArrayLike, neg: npt.ArrayLike, pos: npt.ArrayLike) -> TotalTable:
    """The prefix sums of a column total's table (sorted distinct keys), computed once."""
    n = np.asarray(neg, dtype=np.int64)
    p = np.asarray(pos, dtype=np.int64)
    h, g = _placements(n, p)

    def before(x: _IntArray) -> _IntArray:
        return np.concatenate([[0], np.cumsum(x)]).astype(np.int64)

    return TotalTable(np.asarray(keys, dtype=np.float64), n, p, h, g, before(n), before(p),
                      before(p * h), before(n * g),
                      RocSums(int(n.sum()), int(p.sum()), int((p * h).sum()), _square_sum(p, h),
                              _square_sum(n, g)))


def rest_roc_sums(total: TotalTable, at: npt.ArrayLike, neg: npt.ArrayLike,
                  pos: npt.ArrayLike) -> RocSums:
    """:class:`RocSums` of the total's table less a part's counts at the total's keys ``at``.

    Parameters
    ----------
    total : TotalTable
        From :func:`total_table`.
    at : array_like of int
        The part's keys as increasing, distinct indices into the total's keys.
    neg, pos : array_like of int
        The part's negatives and positives at those keys (at most the total's).

    Examples
    --------
    The total has negatives at keys 1, 2 and positives at 2, 3; the part is the
    positive at key 3, so the rest has one positive tied with one of two negatives:

    >>> t = total_table([1.0, 2.0, 3.0], [1, 1, 0], [0, 1, 1])
    >>> r = rest_roc_sums(t, [2], [0], [1])
    >>> r.n_neg, r.n_pos, r.twice_u, r == table_roc_sums([1, 1, 0], [0, 1, 0])
    (2, 1, 3, True)
    """
    t = np.asarray(at, dtype=np.intp)
    n = np.asarray(neg, dtype=np.int64)
    p = np.asarray(pos, dtype=np.int64)
    s = total.sums
    if t.size == 0:
        return s
    # the segment's own H and G at its keys, and their constant values over the gaps
    # between its keys (gap 0 before its first key, gap m after its m-th)
    n_up_to = np.concatenate([[0], np.cumsum(n)])
    p_from = int(p.sum()) - np.concatenate([[0], np.cumsum(p)])
    h = 2 * n_up_to[:-1] + n
    g = 2 * p_from[1:] + p
    c_pos, c_neg = 2 * n_up_to, 2 * p_from
    starts = np.concatenate([[0], t + 1])
    ends = np.concatenate([t, [total.keys.size]])

    def gap(before: _IntArray) -> _IntArray:
        return before[ends] - before[starts]

    big_p, big_n, big_h, big_g = total.pos[t], total.neg[t], total.h[t], total.g[t]
    rest_p, rest_n, rest_h, rest_g = big_p - p, big_n - n, big_h - h, big_g - g
    twice_u = (s.twice_u - int((big_p * big_h).sum()) - int((c_pos * gap(total.pos_before)).sum())
               + int((rest_p * rest_h).sum()))
    cp, cn = c_pos.astype(np.float64), c_neg.astype(np.float64)
    q10 = (s.q10 - _square_sum(big_p, big_h)
           - 2.0 * float((cp * gap(total.ph_before)).sum())
           + float((cp * cp * gap(total.pos_before)).sum()) + _square_sum(rest_p, rest_h))
    q01 = (s.q01 - _square_sum(big_n, big_g)
           - 2.0 * float((cn * gap(total.ng_before)).sum())
           + float((cn * cn * gap(total.neg_before)).sum()) + _square_sum(rest_n, rest_g))
    return RocSums(s.n_neg - int(n.sum()), s.n_pos - int(p.sum()), twice_u, q10, q01)


def delong_from_sums(sums: RocSums) -> float:
    """DeLong's AUC variance ``S10 / n_pos + S01 / n_neg`` from :class:`RocSums`.

    The placement values of the positives are ``H / (2 n_neg)`` with mean the AUC, so
    ``S10 = (Q10 - (2U)**2 / n_pos) / (4 n_neg**2 (n_pos - 1))`` (and ``S01`` alike):
    :func:`~.bootstrap_cells.delong_variance`'s formula.  NaN with fewer than two
    positives or negatives.

    Examples
    --------
    >>> delong_from_sums(table_roc_sums([1, 1, 0], [0, 1, 1]))  # delong_variance's example
    0.03125
    """
    n_neg, n_pos = sums.n_neg, sums.n_pos
    if n_pos < 2 or n_neg < 2:
        return float("nan")
    u2 = float(sums.twice_u) ** 2
    s10 = max(sums.q10 - u2 / n_pos, 0.0) / (4.0 * n_neg * n_neg * (n_pos - 1.0))
    s01 = max(sums.q01 - u2 / n_neg, 0.0) / (4.0 * n_pos * n_pos * (n_neg - 1.0))
    return float(s10 / n_pos + s01 / n_neg)
