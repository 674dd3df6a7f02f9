"""Attribution drift: has the share of the model's reliance on each feature moved?

The attribution profile of a set of rows is the mean absolute SHAP value per feature,
normalised to shares that sum to 1 (Vertex AI Model Monitoring's feature attribution drift
compares the same normalised profile). Two profiles are compared with the total variation
distance ``0.5 * sum(|share_ref - share_cur|)``: the fraction of the model's attribution that
moved from some features to others, between 0 (same profile) and 1 (disjoint).

Verdict rule
------------
The threshold is a high quantile (``null_level``, default 99 %) of a *split null*: the total
variation between the profiles of two disjoint random subsets of the reference rows, of sizes
``(n - k, k)``, at a few subset sizes ``k`` (5, 10, 20, 35 and 50 % of ``n``, at most ``n // 2``;
``null_repeats`` splits each). A split, not a bootstrap of ``m`` rows against the whole
reference, because the live check compares two *independent* estimates (``n`` reference rows
and ``m`` live rows) and a bootstrap against the reference's own profile leaves the reference's
sampling noise out (too low a threshold); disjoint rows also never repeat a row. Each
quantile is stored divided by ``sqrt(1/(n - k) + 1/k)`` (a distance between two means scales
so); at check time the standardised quantile is interpolated on the ``1/sqrt(m)`` scale
(clamped at the ends), multiplied back by ``sqrt(1/n + 1/m)`` and by ``relative``
(default 1), and the run drifts when ``distance > max(floor, relative * q(m))``. The floor
(default 1e-4) guards only against numerical noise (float32 model outputs), it does not set
the threshold. A reference stored before the null was kept (no ``null_sizes``) keeps its old
rule ``max(max(floor, 0.1), relative * 1.8 * baseline)``.

The ``baseline`` reported beside it is the mean distance between two random halves of the
reference (mean over ``baseline_repeats`` splits) rescaled to the sizes compared by
``sqrt((1/n + 1/m) / (1/h1 + 1/h2))``: the typical distance, for reading.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from modelgate.records import finite_or_none

__all__ = [
    "AttributionDrift",
    "AttributionReference",
    "attribution_drift",
    "attribution_shares",
    "build_attribution_reference",
    "split_null",
]

Verdict = Literal["ok", "drift", "no_data"]


def attribution_shares(values: ArrayLike) -> NDArray[np.float64]:
    """Normalised mean |SHAP| per feature (sums to 1; uniform when every value is 0).

    Parameters
    ----------
    values : array_like of float, shape (n_rows, n_features)
        SHAP values.

    Returns
    -------
    ndarray of float64, shape (n_features,)

    Raises
    ------
    ValueError
        On a bad shape, no row, or a non-finite value.

    Examples
    --------
    >>> attribution_shares([[1.0, -3.0], [-1.0, 1.0]]).tolist()
    [0.3333333333333333, 0.6666666666666666]
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"values must have shape (n_rows >= 1, n_features >= 1), got {arr.shape!r}")
    if not np.isfinite(arr).all():
        raise ValueError("values must be finite SHAP values, got NaN or inf")
    mean_abs = np.abs(arr).mean(axis=0)
    total = float(mean_abs.sum())
    if total == 0:
        return np.full(arr.shape[1], 1.0 / arr.shape[1])
    return mean_abs / total


def _tv(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    return float(0.5 * np.abs(a - b).sum())


@dataclass(frozen=True, slots=True, eq=False)
class AttributionReference:
    """Attribution profile of the reference rows.

    Attributes
    ----------
    features : tuple of str
    shares : ndarray of float64
        Normalised mean |SHAP| per feature.
    mean_abs_shap : ndarray of float64
        Mean |SHAP| per feature (in the explained output's units).
    n : int
        Rows explained.
    baseline : float
        Total variation between the profiles of two random halves (mean over splits).
    half_sizes : tuple of int
    null_sizes : tuple of int
        Subset sizes ``k`` of the split null (increasing; empty for a reference stored before
        the null was kept).
    null_quantiles : tuple of float
        The null's ``null_level`` quantile of the total variation at each size, divided by
        ``sqrt(1/(n - k) + 1/k)``.
    null_level : float
        The quantile level (0.99 by default).
    """

    features: tuple[str, ...]
    shares: NDArray[np.float64]
    mean_abs_shap: NDArray[np.float64]
    n: int
    baseline: float
    half_sizes: tuple[int, int]
    null_sizes: tuple[int, ...] = ()
    null_quantiles: tuple[float, ...] = ()
    null_level: float = 0.99

    def null_threshold(self, m: int) -> float | None:
        """The null's quantile of the total variation between the ``n`` reference rows and
        ``m`` other rows (None when no null was kept).

        Examples
        --------
        >>> ref = AttributionReference(("a",), np.array([1.0]), np.array([1.0]), 100, 0.0,
        ...                            (50, 50), (25, 50), (0.2, 0.4))
        >>> round(ref.null_threshold(50) / math.sqrt(1 / 100 + 1 / 50), 12)
        0.4
        """
        if not self.null_sizes:
            return None
        x = [1 / math.sqrt(k) for k in self.null_sizes][::-1]  # increasing, for np.interp
        q = float(np.interp(1 / math.sqrt(m), x, list(self.null_quantiles)[::-1]))
        return q * math.sqrt(1 / self.n + 1 / m)


@dataclass(frozen=True, slots=True)
class AttributionDrift:
    """Attribution drift of one run.

    Attributes
    ----------
    features : tuple of str
    reference_shares, current_shares : tuple of float
        Profiles, in ``features`` order (``current_shares`` empty when there is no data).
    distance : float or None
        Total variation distance between the profiles.
    baseline : float or None
        Size-adjusted mean reference-vs-reference distance (for reading).
    threshold : float or None
        ``max(floor, relative * q(m))``, ``q(m)`` the split null's quantile at the sizes
        compared.
    verdict : {"ok", "drift", "no_data"}
    n_reference, n_current : int
        Rows explained on each side.
    """

    features: tuple[str, ...]
    reference_shares: tuple[float, ...]
    current_shares: tuple[float, ...]
    distance: float | None
    baseline: float | None
    threshold: float | None
    verdict: Verdict
    n_reference: int
    n_current: int

    def to_record(self) -> dict[str, Any]:
        """Flat record for the store and JSON output (shares as a feature -> share mapping);
        numbers None where not finite.

        Examples
        --------
        >>> ref = build_attribution_reference([[2.0, 0.1], [1.0, 0.2]] * 10, features=["a", "b"])
        >>> r = attribution_drift(ref, [[0.1, 1.0], [0.2, 2.0]] * 10).to_record()
        >>> r["statistic_name"], r["verdict"], sorted(r["current_shares"])
        ('total_variation', 'drift', ['a', 'b'])
        """
        return {
            "statistic_name": "total_variation", "statistic_value": finite_or_none(self.distance),
            "baseline": finite_or_none(self.baseline), "threshold": finite_or_none(self.threshold),
            "verdict": self.verdict,
            "n_reference": self.n_reference, "n_current": self.n_current,
            "reference_shares": dict(zip(self.features, self.reference_shares, strict=True)),
            "current_shares": dict(zip(self.features, self.current_shares, strict=True))
            if self.current_shares else {},
        }


_NULL_FRACTIONS = (0.05, 0.1, 0.2, 0.35, 0.5)


def _split_tvs(arr: NDArray[np.float64], k: int, repeats: int, rng: np.random.Generator) -> list[float]:
    """Total variation between the profiles of ``repeats`` random disjoint (n - k, k) splits."""
    out = []
    for _ in range(repeats):
        mask = np.zeros(arr.shape[0], dtype=bool)
        mask[rng.choice(arr.shape[0], size=k, replace=False)] = True
        out.append(_tv(attribution_shares(arr[mask]), attribution_shares(arr[~mask])))
    return out


def split_null(values: ArrayLike, *, level: float = 0.99, repeats: int = 400,
               seed: int = 0) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Split-null quantiles of the total variation at a few subset sizes, standardised.

    Parameters
    ----------
    values : array_like of float, shape (n_rows >= 2, n_features)
        SHAP values of the reference rows.
    level : float, default 0.99
        Quantile level (``numpy.quantile``'s default linear interpolation).
    repeats : int, default 400
        Random splits per size.
    seed : int, default 0

    Returns
    -------
    sizes : tuple of int
        Subset sizes ``k`` (increasing, unique): 5, 10, 20, 35 and 50 % of ``n``, rounded,
        between 1 and ``n // 2``.
    quantiles : tuple of float
        The ``level`` quantile of the TV between ``(n - k, k)`` splits, divided by
        ``sqrt(1/(n - k) + 1/k)``.

    Raises
    ------
    ValueError
        On fewer than 2 rows or a bad option.

    Examples
    --------
    >>> split_null([[1.0, 0.0], [0.0, 1.0]], repeats=3)  # every split moves all the attribution
    ((1,), (0.7071067811865475,))
    """
    arr = np.abs(np.asarray(values, dtype=np.float64))
    attribution_shares(arr)  # shape and finiteness
    n = arr.shape[0]
    if n < 2:
        raise ValueError(f"values must have at least 2 rows for the split null, got {n}")
    if not (isinstance(level, float) and 0 < level < 1):
        raise ValueError(f"level must be a float in (0, 1), got {level!r}")
    if not isinstance(repeats, int | np.integer) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    rng = np.random.default_rng(seed)
    sizes = sorted({min(max(1, round(n * f)), n // 2) for f in _NULL_FRACTIONS})
    quantiles = tuple(float(np.quantile(_split_tvs(arr, k, int(repeats), rng), level))
                      / math.sqrt(1 / (n - k) + 1 / k) for k in sizes)
    return tuple(sizes), quantiles


def build_attribution_reference(
    values: ArrayLike, *, features: Sequence[str], baseline_repeats: int = 20, seed: int = 0,
    null_level: float = 0.99, null_repeats: int = 400,
) -> AttributionReference:
    """Attribution profile of the reference rows with its half-split baseline and split null.

    Parameters
    ----------
    values : array_like of float, shape (n_rows, n_features)
        SHAP values of the reference rows (at least 2 rows).
    features : sequence of str
        Feature names, in column order (unique).
    baseline_repeats : int, default 20
        Random half splits averaged into the baseline.
    seed : int, default 0
    null_level, null_repeats
        The split null's quantile level and splits per size (:func:`split_null`, seeded with
        ``seed + 1``).

    Returns
    -------
    AttributionReference

    Raises
    ------
    ValueError
        On a bad shape, fewer than 2 rows, mismatched or duplicate names, or a bad option.

    Examples
    --------
    >>> ref = build_attribution_reference([[2.0, 0.0], [2.0, 0.0]], features=["a", "b"])
    >>> ref.shares.tolist(), ref.baseline
    ([1.0, 0.0], 0.0)
    """
    shares = attribution_shares(values)
    arr = np.abs(np.asarray(values, dtype=np.float64))
    names = tuple(str(f) for f in features)
    if len(names) != arr.shape[1] or len(set(names)) != len(names):
        raise ValueError(f"features must be {arr.shape[1]} unique names, got {list(names)!r}")
    if arr.shape[0] < 2:
        raise ValueError(f"values must have at least 2 rows for the baseline, got {arr.shape[0]}")
    if not isinstance(baseline_repeats, int | np.integer) or baseline_repeats < 1:
        raise ValueError(f"baseline_repeats must be an integer >= 1, got {baseline_repeats!r}")
    rng = np.random.default_rng(seed)
    halves = (arr.shape[0] // 2, arr.shape[0] - arr.shape[0] // 2)
    splits = _split_tvs(arr, halves[0], int(baseline_repeats), rng)
    sizes, quantiles = split_null(arr, level=null_level, repeats=null_repeats, seed=seed + 1)
    return AttributionReference(names, shares, arr.mean(axis=0), int(arr.shape[0]),
                                float(np.mean(splits)), halves, sizes, quantiles, null_level)


def attribution_drift(
    reference: AttributionReference,
    current: ArrayLike,
    *,
    relative: float = 1.0,
    floor: float = 1e-4,
) -> AttributionDrift:
    """Compare the attribution profile of current rows with the reference.

    Parameters
    ----------
    reference : AttributionReference
    current : array_like of float, shape (n_rows, n_features)
        SHAP values of current rows, columns in ``reference.features`` order; no rows gives
        verdict ``"no_data"``.
    relative : float, default 1.0
        Multiple of the split null's quantile (see the module's verdict rule).
    floor : float, default 1e-4
        Lowest threshold, against numerical noise only.

    Returns
    -------
    AttributionDrift

    Raises
    ------
    ValueError
        On a bad shape or option.

    Examples
    --------
    >>> ref = build_attribution_reference([[2.0, 0.1], [1.0, 0.2]] * 10, features=["a", "b"])
    >>> r = attribution_drift(ref, [[0.1, 1.0], [0.2, 2.0]] * 10)
    >>> r.verdict, round(r.distance, 3)
    ('drift', 0.818)
    """
    for name, value in (("relative", relative), ("floor", floor)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    arr = np.asarray(current, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != len(reference.features):
        raise ValueError(f"current must have shape (n_rows, {len(reference.features)}), got {arr.shape!r}")
    ref_shares = tuple(float(s) for s in reference.shares)
    if arr.shape[0] == 0:
        return AttributionDrift(reference.features, ref_shares, (), None, None, None, "no_data",
                                reference.n, 0)
    shares = attribution_shares(arr)
    distance = _tv(reference.shares, shares)
    h1, h2 = reference.half_sizes
    baseline = reference.baseline * math.sqrt((1 / reference.n + 1 / arr.shape[0]) / (1 / h1 + 1 / h2))
    q = reference.null_threshold(int(arr.shape[0]))
    threshold = max(floor, relative * q) if q is not None else max(floor, 0.1, relative * 1.8 * baseline)
    return AttributionDrift(reference.features, ref_shares, tuple(float(s) for s in shares), distance,
                            baseline, threshold, "drift" if distance > threshold else "ok",
                            reference.n, int(arr.shape[0]))
