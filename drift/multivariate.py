"""Multivariate data drift: sliced Wasserstein distance on standardised numeric features.

Per-feature statistics compare marginals only, so a change in how features move together (a
correlation that flips sign, a new cluster between existing ones) passes them unnoticed. The
sliced Wasserstein distance [1]_ projects both samples on ``n_projections`` random unit
directions and averages the 1-D Wasserstein-p distances of the projections:

    SW_p = (mean over directions of W_p(reference . theta, current . theta) ** p) ** (1 / p)

Features are standardised with the REFERENCE mean and standard deviation first (so a feature
in large units does not dominate, and the current sample cannot rescale itself away). The
directions are drawn once, from ``seed``, when the reference is built, and kept with it: every
run is compared along the same directions. POT [2]_ draws the directions
(``ot.sliced.get_random_projections``); the 1-D distances are POT's ``ot.wasserstein_1d``
computed with the level merge shared by every direction (tests compare with POT's
``sliced_wasserstein_distance``).

Row samples
-----------
Both sides are at most ``max_rows`` rows (a seeded uniform sample when larger). The statistic
is a sample estimate either way, and the verdict accounts for the noise of the sizes actually
compared (below), so sampling moves the threshold, not the false-alarm rate. Rows with a
missing or infinite value in any of the features are left out and counted.

Verdict rule
------------
The same rule as the per-feature statistics (:mod:`modelgate.drift.data_drift`): the baseline
is SW between two random halves of the kept reference sample (mean over ``baseline_repeats``
splits), rescaled to the sizes compared by ``sqrt((1/n + 1/m) / (1/h1 + 1/h2))``, and the run
drifts when ``statistic > max(floor, relative * baseline)``.

References
----------
.. [1] Bonneel, Rabin, Peyre, Pfister (2015). Sliced and Radon Wasserstein barycenters of
   measures. Journal of Mathematical Imaging and Vision 51(1), 22-45.
.. [2] Flamary et al. (2021). POT: Python Optimal Transport. JMLR 22(78), 1-8.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import ot
from numpy.typing import ArrayLike, NDArray

from modelgate.records import finite_or_none

from .payloads import load_arrays

__all__ = [
    "MultivariateDrift",
    "MultivariateReference",
    "build_multivariate_reference",
    "multivariate_drift",
]

_FORMAT = "modelgate-multivariate-v1"
_KEYS = ("features", "mean", "scale", "projections", "projected", "meta", "baseline")
Verdict = Literal["ok", "drift", "no_data"]

#: Default number of random directions.
DEFAULT_N_PROJECTIONS = 64
#: Default most rows compared on each side.
DEFAULT_MAX_ROWS = 20_000


def _readonly(arr: NDArray[Any]) -> NDArray[Any]:
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, slots=True, eq=False)
class MultivariateReference:
    """What a multivariate drift run needs from the reference.

    Attributes
    ----------
    features : tuple of str
        Numeric feature names, in column order.
    mean, scale : ndarray of float64, shape (n_features,)
        Reference mean and standard deviation (ddof=0; 1.0 for a constant column).
    projections : ndarray of float64, shape (n_features, n_projections)
        Unit directions (columns).
    projected : ndarray of float64, shape (n_kept, n_projections)
        Standardised reference sample projected on each direction, each column sorted.
    n : int
        Complete reference rows (before the ``max_rows`` sample).
    n_incomplete : int
        Reference rows left out for a missing or infinite value.
    baseline : float
        SW_p between two random halves of the kept sample (mean over splits).
    half_sizes : tuple of int
    p : int
        Order of the Wasserstein distance.
    max_rows : int
        Most rows compared on each side.
    seed : int
        Seed of the directions and samples.
    """

    features: tuple[str, ...]
    mean: NDArray[np.float64]
    scale: NDArray[np.float64]
    projections: NDArray[np.float64]
    projected: NDArray[np.float64]
    n: int
    n_incomplete: int
    baseline: float
    half_sizes: tuple[int, int]
    p: int
    max_rows: int
    seed: int

    @property
    def n_kept(self) -> int:
        """Reference rows compared (at most ``max_rows``)."""
        return int(self.projected.shape[0])

    def to_bytes(self) -> bytes:
        """Serialise to an ``.npz`` payload (no pickle); inverse of :meth:`from_bytes`."""
        buf = io.BytesIO()
        meta = np.array([self.n, self.n_incomplete, *self.half_sizes, self.p, self.max_rows, self.seed])
        np.savez(buf, format=np.array(_FORMAT), features=np.array(self.features, dtype=str),
                 mean=self.mean, scale=self.scale, projections=self.projections,
                 projected=self.projected, meta=meta.astype(np.int64),
                 baseline=np.array([self.baseline]))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, payload: bytes) -> MultivariateReference:
        """Load a reference written by :meth:`to_bytes`.

        Raises
        ------
        ValueError
            If the payload is not a multivariate reference (empty, truncated, another format,
            or without one of its arrays).
        """
        data = load_arrays(payload, "a multivariate reference")
        if str(data.get("format", "")) != _FORMAT:
            raise ValueError(f"payload must be a multivariate reference in format {_FORMAT!r}")
        absent = [k for k in _KEYS if k not in data]
        if absent:
            raise ValueError(f"payload is not a multivariate reference: it has no {', '.join(absent)}")
        meta = data["meta"].tolist()
        return cls(
            features=tuple(str(f) for f in data["features"].tolist()),
            mean=_readonly(data["mean"]), scale=_readonly(data["scale"]),
            projections=_readonly(data["projections"]), projected=_readonly(data["projected"]),
            n=meta[0], n_incomplete=meta[1], baseline=float(data["baseline"][0]),
            half_sizes=(meta[2], meta[3]), p=meta[4], max_rows=meta[5], seed=meta[6],
        )


@dataclass(frozen=True, slots=True)
class MultivariateDrift:
    """Multivariate drift of one run.

    Attributes
    ----------
    features : tuple of str
        Features compared.
    statistic : float or None
        Sliced Wasserstein-p distance in reference standard deviations (None: no data).
    baseline : float or None
        Size-adjusted reference-vs-reference value.
    threshold : float or None
        ``max(floor, relative * baseline)``.
    verdict : {"ok", "drift", "no_data"}
    n_reference : int
        Reference rows compared.
    n_current : int
        Complete current rows (before the ``max_rows`` sample).
    n_compared : int
        Current rows compared.
    n_incomplete_current : int
        Current rows left out for a missing or infinite value.
    n_projections : int
    p : int
    """

    features: tuple[str, ...]
    statistic: float | None
    baseline: float | None
    threshold: float | None
    verdict: Verdict
    n_reference: int
    n_current: int
    n_compared: int
    n_incomplete_current: int
    n_projections: int
    p: int

    def to_record(self) -> dict[str, Any]:
        """Flat record for the store and JSON output; numbers None where not finite.

        Examples
        --------
        >>> x = np.random.default_rng(0).normal(size=(2000, 2))
        >>> ref = build_multivariate_reference(x[:1000], features=["a", "b"])
        >>> r = multivariate_drift(ref, x[1000:]).to_record()
        >>> r["statistic_name"], r["verdict"], r["n_features"], r["n_current"]
        ('sliced_wasserstein_2', 'ok', 2, 1000)
        """
        return {
            "statistic_name": f"sliced_wasserstein_{self.p}",
            "statistic_value": finite_or_none(self.statistic),
            "baseline": finite_or_none(self.baseline), "threshold": finite_or_none(self.threshold),
            "verdict": self.verdict,
            "n_features": len(self.features), "n_projections": self.n_projections,
            "n_reference": self.n_reference, "n_current": self.n_current,
            "n_compared": self.n_compared, "n_incomplete_current": self.n_incomplete_current,
        }


def _complete_rows(data: ArrayLike, n_features: int, name: str) -> tuple[NDArray[np.float64], int]:
    arr = np.asarray(data, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != n_features:
        raise ValueError(f"{name} must have shape (n_rows, {n_features}), got {arr.shape!r}")
    # A row sum is finite unless the row holds NaN/inf (or overflows, hence the exact check on
    # the suspects): one matrix-vector product instead of an n x d boolean temporary.
    complete = np.isfinite(arr @ np.ones(arr.shape[1]))
    suspects = np.flatnonzero(~complete)
    if suspects.size:
        complete[suspects] = np.isfinite(arr[suspects]).all(axis=1)
    n_bad = int(arr.shape[0] - np.count_nonzero(complete))
    return (arr[complete] if n_bad else arr), n_bad


def _sample_rows(arr: NDArray[np.float64], max_rows: int, rng: np.random.Generator) -> NDArray[np.float64]:
    if arr.shape[0] <= max_rows:
        return arr
    return arr[np.sort(rng.choice(arr.shape[0], size=max_rows, replace=False))]


def _sorted_projections(rows: NDArray[np.float64], mean: NDArray[np.float64], scale: NDArray[np.float64],
                        directions: NDArray[np.float64]) -> NDArray[np.float64]:
    """Standardised rows projected on each direction, each column sorted, shape (n, K)."""
    # sorted as contiguous rows of the transpose: 1.5-2x faster than sorting strided columns
    return np.sort(directions.T @ ((rows - mean) / scale).T, axis=1).T


def _sliced(sorted_a: NDArray[np.float64], sorted_b: NDArray[np.float64], p: int) -> float:
    if sorted_a.shape == sorted_b.shape:
        # Equal sizes (the usual case: both sides sampled to max_rows, even halves): the
        # quantile functions step at the same points, so W_p^p is the mean of |a_i - b_i|^p.
        # POT's general merge costs about 20x more here.
        per_direction = np.mean(np.abs(sorted_a - sorted_b) ** p, axis=0)
    else:
        weights, ia, ib = _merged_quantile_steps(sorted_a.shape[0], sorted_b.shape[0])
        per_direction = weights @ (np.abs(sorted_a[ia] - sorted_b[ib]) ** p)
    return float(np.mean(per_direction) ** (1.0 / p))


def _merged_quantile_steps(
        n: int, m: int) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Steps of the two empirical quantile functions of ``n`` and ``m`` equally weighted points.

    Both jump at levels ``i/n`` and ``j/m``, the same for every direction, so the merge is
    done once, exactly, in units of ``1/(n*m)``: between consecutive merged levels the
    quantiles are the sorted values at ``ceil(level*n) - 1`` and ``ceil(level*m) - 1``.
    POT's ``wasserstein_1d`` merges each direction again with float levels, 30-40x slower here.
    """
    steps = np.union1d(np.arange(1, n + 1, dtype=np.int64) * m, np.arange(1, m + 1, dtype=np.int64) * n)
    weights = np.diff(steps, prepend=0) / (n * m)
    return weights, -(-steps // m) - 1, -(-steps // n) - 1


def _check_options(n_projections: int, p: int, max_rows: int, baseline_repeats: int) -> None:
    for name, value, low in (("n_projections", n_projections, 1), ("p", p, 1),
                             ("max_rows", max_rows, 4), ("baseline_repeats", baseline_repeats, 1)):
        if not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def build_multivariate_reference(
    data: ArrayLike,
    *,
    features: Sequence[str],
    n_projections: int = DEFAULT_N_PROJECTIONS,
    p: int = 2,
    max_rows: int = DEFAULT_MAX_ROWS,
    baseline_repeats: int = 5,
    seed: int = 0,
) -> MultivariateReference:
    """Build the multivariate reference from reference rows.

    Parameters
    ----------
    data : array_like of float, shape (n_rows, n_features)
        Reference rows, one column per feature; rows with NaN or +-inf are left out.
    features : sequence of str
        Names of the columns (at least one, unique).
    n_projections : int, default 64
        Number of random unit directions.
    p : int, default 2
        Order of the Wasserstein distance.
    max_rows : int, default 20_000
        Most rows compared on each side (seeded sample when larger).
    baseline_repeats : int, default 5
        Random half splits averaged into the baseline.
    seed : int, default 0
        Seeds the directions, the row sample and the splits.

    Returns
    -------
    MultivariateReference

    Raises
    ------
    ValueError
        On a bad shape or option, duplicate names, fewer than 4 complete rows, or a feature
        whose standard deviation overflows float64.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ref = build_multivariate_reference(rng.normal(size=(1000, 3)), features=["a", "b", "c"])
    >>> ref.projections.shape, ref.n_kept, 0 < ref.baseline < 0.2
    ((3, 64), 1000, True)
    """
    _check_options(n_projections, p, max_rows, baseline_repeats)
    names = tuple(str(f) for f in features)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"features must be non-empty and unique, got {list(names)!r}")
    rows, n_bad = _complete_rows(data, len(names), "data")
    if rows.shape[0] < 4:
        raise ValueError(f"data must have at least 4 complete rows, got {rows.shape[0]}")
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        mean = rows.mean(axis=0)
        std = rows.std(axis=0)
    wide = [name for name, s in zip(names, std.tolist(), strict=True) if not math.isfinite(s)]
    if wide:
        # squares of deviations past ~1e154 overflow: a scale of inf would quietly make that
        # feature invisible to every comparison (NaN, where the mean overflows: every statistic)
        raise ValueError(f"data's features {wide!r} spread too widely for float64: their standard "
                         "deviation overflows")
    scale = np.where(std > 0, std, 1.0)
    directions = np.asarray(ot.sliced.get_random_projections(len(names), n_projections, seed=seed),
                            dtype=np.float64)
    kept = _sample_rows(rows, max_rows, rng)
    raw = directions.T @ ((kept - mean) / scale).T  # (K, n): one contiguous row per direction
    halves = (kept.shape[0] // 2, kept.shape[0] - kept.shape[0] // 2)
    splits = []
    for _ in range(baseline_repeats):
        mask = np.zeros(kept.shape[0], dtype=bool)
        mask[rng.choice(kept.shape[0], size=halves[0], replace=False)] = True
        splits.append(_sliced(np.sort(raw[:, mask], axis=1).T, np.sort(raw[:, ~mask], axis=1).T, p))
    return MultivariateReference(
        features=names, mean=_readonly(mean), scale=_readonly(scale),
        projections=_readonly(directions), projected=_readonly(np.sort(raw, axis=1).T),
        n=int(rows.shape[0]), n_incomplete=n_bad, baseline=float(np.mean(splits)),
        half_sizes=halves, p=int(p), max_rows=int(max_rows), seed=int(seed),
    )


def multivariate_drift(
    reference: MultivariateReference,
    current: ArrayLike,
    *,
    relative: float = 1.8,
    floor: float = 0.05,
    seed: int = 0,
) -> MultivariateDrift:
    """Sliced Wasserstein drift of ``current`` against the reference, with a verdict.

    Parameters
    ----------
    reference : MultivariateReference
    current : array_like of float, shape (n_rows, n_features)
        Current rows, columns in ``reference.features`` order; rows with NaN or +-inf are
        left out. No complete row gives verdict ``"no_data"``; a finite row so far out that its
        projections overflow float64 gives a statistic of inf (verdict ``"drift"``).
    relative : float, default 1.8
        Drift when the statistic exceeds ``relative`` times the size-adjusted baseline.
    floor : float, default 0.05
        Absolute floor of the threshold, in reference standard deviations.
    seed : int, default 0
        Seeds the current row sample (used only beyond ``reference.max_rows`` rows).

    Returns
    -------
    MultivariateDrift

    Raises
    ------
    ValueError
        On a bad shape or a negative or non-finite ``relative`` or ``floor``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(4000, 2))
    >>> ref = build_multivariate_reference(x[:2000], features=["a", "b"])
    >>> multivariate_drift(ref, x[2000:]).verdict
    'ok'
    >>> multivariate_drift(ref, np.c_[x[2000:, 0], x[2000:, 0]]).verdict  # b copies a
    'drift'
    """
    for name, value in (("relative", relative), ("floor", floor)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    rows, n_bad = _complete_rows(current, len(reference.features), "current")
    result = MultivariateDrift(
        features=reference.features, statistic=None, baseline=None, threshold=None,
        verdict="no_data", n_reference=reference.n_kept, n_current=int(rows.shape[0]),
        n_compared=0, n_incomplete_current=n_bad,
        n_projections=int(reference.projections.shape[1]), p=reference.p,
    )
    if rows.shape[0] == 0:
        return result
    kept = _sample_rows(rows, reference.max_rows, np.random.default_rng(seed))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught just below
        projected = _sorted_projections(kept, reference.mean, reference.scale, reference.projections)
    # a finite row far enough out (about 1e308 reference deviations) overflows its projections,
    # where inf - inf in the product gives NaN (and an "ok" verdict): it is beyond float64, not
    # undefined. The reference's projections are finite (its deviations are refused otherwise).
    finite = bool(np.isfinite(projected).all())
    statistic = _sliced(reference.projected, projected, reference.p) if finite else math.inf
    h1, h2 = reference.half_sizes
    factor = math.sqrt((1 / reference.n_kept + 1 / kept.shape[0]) / (1 / h1 + 1 / h2))
    baseline = reference.baseline * factor
    threshold = max(floor, relative * baseline)
    return MultivariateDrift(
        features=reference.features, statistic=statistic, baseline=baseline, threshold=threshold,
        verdict="drift" if statistic > threshold else "ok", n_reference=reference.n_kept,
        n_current=int(rows.shape[0]), n_compared=int(kept.shape[0]), n_incomplete_current=n_bad,
        n_projections=result.n_projections, p=reference.p,
    )
