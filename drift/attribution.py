"""Attribution drift: has the share of the model's reliance on each feature moved?

The attribution profile of a set of rows is the mean absolute SHAP value per feature,
normalised to shares that sum to 1 (Vertex AI Model Monitoring's feature attribution drift
compares the same normalised profile). Two profiles are compared with the total variation
distance ``0.5 * sum(|share_ref - share_cur|)``: the fraction of the model's attribution that
moved from some features to others, between 0 (same profile) and 1 (disjoint).

Verdict rule
------------
The same rule as the other drift statistics (:mod:`modelgate.drift.data_drift`): the baseline
is the distance between the profiles of two random halves of the reference rows (mean over
``baseline_repeats`` splits), rescaled to the sizes compared by
``sqrt((1/n + 1/m) / (1/h1 + 1/h2))`` (a distance between two means), and the run drifts when
``distance > max(floor, relative * baseline)``.
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
    """

    features: tuple[str, ...]
    shares: NDArray[np.float64]
    mean_abs_shap: NDArray[np.float64]
    n: int
    baseline: float
    half_sizes: tuple[int, int]


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
        Size-adjusted reference-vs-reference distance.
    threshold : float or None
        ``max(floor, relative * baseline)``.
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


def build_attribution_reference(
    values: ArrayLike, *, features: Sequence[str], baseline_repeats: int = 20, seed: int = 0
) -> AttributionReference:
    """Attribution profile of the reference rows with its half-split baseline.

    Parameters
    ----------
    values : array_like of float, shape (n_rows, n_features)
        SHAP values of the reference rows (at least 2 rows).
    features : sequence of str
        Feature names, in column order (unique).
    baseline_repeats : int, default 20
        Random half splits averaged into the baseline.
    seed : int, default 0

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
    splits = []
    for _ in range(baseline_repeats):
        mask = np.zeros(arr.shape[0], dtype=bool)
        mask[rng.choice(arr.shape[0], size=halves[0], replace=False)] = True
        splits.append(_tv(attribution_shares(arr[mask]), attribution_shares(arr[~mask])))
    return AttributionReference(names, shares, arr.mean(axis=0), int(arr.shape[0]),
                                float(np.mean(splits)), halves)


def attribution_drift(
    reference: AttributionReference,
    current: ArrayLike,
    *,
    relative: float = 1.8,
    floor: float = 0.1,
) -> AttributionDrift:
    """Compare the attribution profile of current rows with the reference.

    Parameters
    ----------
    reference : AttributionReference
    current : array_like of float, shape (n_rows, n_features)
        SHAP values of current rows, columns in ``reference.features`` order; no rows gives
        verdict ``"no_data"``.
    relative : float, default 1.8
    floor : float, default 0.1
        Absolute floor of the threshold (a tenth of the attribution moved).

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
    threshold = max(floor, relative * baseline)
    return AttributionDrift(reference.features, ref_shares, tuple(float(s) for s in shares), distance,
                            baseline, threshold, "drift" if distance > threshold else "ok",
                            reference.n, int(arr.shape[0]))
