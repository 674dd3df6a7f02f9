"""Per-feature data drift results and verdicts against a stored reference sketch.

Numeric features: exact Wasserstein-1 (raw and divided by the reference scale) plus binned
Jensen-Shannon on the reference quantile bins. Categorical features: JS over the union of
categories, missing values and unseen categories being categories of their own.

Verdict rule
------------
Each statistic is compared with a baseline, the same statistic measured between two random
halves of the reference, rescaled to the sizes being compared: sampling noise of W1 between
two samples of sizes ``a`` and ``b`` scales like ``sqrt(1/a + 1/b)`` and that of JS on fixed
bins like ``1/a + 1/b`` (a chi-square law), so the baseline measured on halves ``h1, h2`` is
multiplied by ``sqrt((1/n + 1/m) / (1/h1 + 1/h2))`` (W1) or ``(1/n + 1/m) / (1/h1 + 1/h2)``
(JS), with ``n`` reference and ``m`` current values. The feature drifts when

    statistic > threshold = max(floor, relative * baseline, q_null(m))

``relative`` defaults to 1.8; the floor (0.1 reference std for normalised W1, Evidently's
default; 0.01 for base-2 JS) keeps a near-zero baseline, as from a huge reference, from
flagging differences too small to matter. ``q_null(m)`` is the ``null_level`` quantile
(default 0.99) of the statistic when nothing changed, at the sizes compared: for JS
(:func:`.js_null.js_null_quantile`) between two samples drawn from the reference's own
proportions (categories, or the numeric feature's bins), for W1
(:func:`.w1_null.w1_null_quantile`) between the reference and samples drawn from it, rescaled
to two samples. ``relative`` times the mean noise is too low a bar on a few rows: the noise is
skewed (JS: a chi-square law with few degrees of freedom, heavier still with sparse counts),
and a baseline measured on five half splits is itself noisy.

False alarms on unshifted data, references drawn afresh (``bench/bench_js_null.py``, figures
in ``bench/RESULTS.md``): at most about 1.5 % with the null at every size from 10 to 1,000
rows; without it categorical JS alarmed in up to 35 %, binned JS up to 30 % and normalised W1
up to 6.5 %. ``tests/drift/test_drift_threshold_rule.py`` checks the rule by hand and by short
simulations.

Every result depends only on its own feature's reference and data, so running one task per
feature and calling :func:`summarise` on the union equals one run over all features.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from modelgate.records import finite_or_none

from .distances import categorical_js, js_divergence, wasserstein_sorted
from .js_null import DEFAULT_NULL_LEVEL, js_null_quantile
from .reference import (
    MISSING,
    CategoricalReference,
    NumericReference,
    bin_counts_sorted,
    build_categorical_reference,  # noqa: F401  (used by the doctests)
    build_numeric_reference,  # noqa: F401
    count_categories,
)
from .threshold_multiple import threshold_multiple
from .w1_null import w1_null_quantile

__all__ = [
    "DriftSummary",
    "DriftThresholds",
    "FeatureDrift",
    "categorical_drift",
    "categorical_drift_from_counts",
    "numeric_drift",
    "numeric_drift_sorted",
    "summarise",
]

Statistic = Literal["wasserstein_normalised", "js_divergence"]
Verdict = Literal["ok", "drift", "no_data", "insufficient_data"]

#: Fewest non-missing current values a feature's verdict needs (``DriftThresholds.min_values``)
#: when normalised W1 (the default numeric statistic) or categorical JS decides: below it the
#: statistics are still computed and stored but the verdict is ``"insufficient_data"``, never
#: ``"drift"`` or ``"ok"``. Chosen by simulation (``bench/bench_drift_min_rows.py``, figures in
#: bench/RESULTS.md) under the size-aware null: false alarms stay near 1 % at every size, so the
#: minimum is where a modest shift (0.5 standard deviations) is found at least half the time
#: (W1: from 40 values; 50 keeps a margin).
DEFAULT_MIN_VALUES = 50
#: The same for a numeric feature decided by binned JS (``numeric_statistic="js_divergence"``):
#: 10 equal-mass bins find the 0.5-standard-deviation shift in under half of the intervals below
#: 100 values on normal data (29 % at 50, 47 % at 75, 78 % at 100).
DEFAULT_MIN_VALUES_BINNED_JS = 100


@dataclass(frozen=True, slots=True)
class DriftThresholds:
    """Verdict thresholds, with optional per-feature overrides.

    Attributes
    ----------
    relative : float, default 1.8
        Breach when the statistic exceeds ``relative`` times the size-adjusted baseline.
    wasserstein_floor : float, default 0.1
        Absolute floor for W1 / reference scale.
    js_floor : float, default 0.01
        Absolute floor for base-2 JS divergence.
    numeric_statistic : {"wasserstein_normalised", "js_divergence"}
        Statistic that decides numeric verdicts (categorical ones always use JS).
    min_values : int or None, default None
        Fewest non-missing current values for a verdict; fewer give ``"insufficient_data"``.
        None: :data:`DEFAULT_MIN_VALUES` (50), or :data:`DEFAULT_MIN_VALUES_BINNED_JS` (100)
        for a numeric feature decided by binned JS.
    null_level : float or None, default 0.99
        The threshold is at least this quantile of the statistic under no change at the
        sizes compared (:mod:`~modelgate.drift.js_null`, :mod:`~modelgate.drift.w1_null`);
        None leaves it out.
    overrides : mapping of str to DriftThresholds
        Per-feature thresholds (their own ``overrides`` are ignored).

    Examples
    --------
    >>> t = DriftThresholds(overrides={"age": DriftThresholds(relative=3.0)})
    >>> t.for_feature("age").relative, t.for_feature("income").relative
    (3.0, 1.8)
    """

    relative: float = 1.8
    wasserstein_floor: float = 0.1
    js_floor: float = 0.01
    numeric_statistic: Statistic = "wasserstein_normalised"
    min_values: int | None = None
    null_level: float | None = DEFAULT_NULL_LEVEL
    overrides: Mapping[str, DriftThresholds] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for attr in ("relative", "wasserstein_floor", "js_floor"):
            value = getattr(self, attr)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{attr} must be a finite number >= 0, got {value!r}")
        if self.numeric_statistic not in ("wasserstein_normalised", "js_divergence"):
            raise ValueError(
                "numeric_statistic must be 'wasserstein_normalised' or 'js_divergence', "
                f"got {self.numeric_statistic!r}"
            )
        if self.min_values is not None and (
                isinstance(self.min_values, bool) or not isinstance(self.min_values, int)
                or self.min_values < 1):
            raise ValueError(f"min_values must be None or an integer >= 1, got {self.min_values!r}")
        if self.null_level is not None and not (
                isinstance(self.null_level, int | float) and not isinstance(self.null_level, bool)
                and 0.0 < self.null_level < 1.0):
            raise ValueError(f"null_level must be None or a number in (0, 1), got {self.null_level!r}")
        for key, value in self.overrides.items():
            if not isinstance(value, DriftThresholds):
                raise ValueError(f"overrides[{key!r}] must be DriftThresholds, got {value!r}")
        object.__setattr__(self, "overrides", MappingProxyType(dict(self.overrides)))

    def for_feature(self, feature: str) -> DriftThresholds:
        """Thresholds that apply to ``feature``."""
        return self.overrides.get(feature, self)

    def minimum(self, *, categorical: bool = False) -> int:
        """Fewest non-missing current values a verdict needs: ``min_values`` when set, else the
        default for what decides (binned JS on a numeric feature needs more values than W1 or
        categorical JS to find the same shift; bench/bench_drift_min_rows.py).

        >>> DriftThresholds().minimum(), DriftThresholds(numeric_statistic="js_divergence").minimum()
        (50, 100)
        >>> DriftThresholds(numeric_statistic="js_divergence").minimum(categorical=True)
        50
        >>> DriftThresholds(min_values=30, numeric_statistic="js_divergence").minimum()
        30
        """
        if self.min_values is not None:
            return self.min_values
        if not categorical and self.numeric_statistic == "js_divergence":
            return DEFAULT_MIN_VALUES_BINNED_JS
        return DEFAULT_MIN_VALUES


@dataclass(frozen=True, slots=True)
class FeatureDrift:
    """Drift of one feature.

    Attributes
    ----------
    feature : str
    kind : {"numeric", "categorical"}
    n_reference : int
        Reference values behind the statistics (numeric: finite ones; categorical: all rows).
    n_current : int
        Current values behind the statistics (numeric: finite ones; categorical: all rows,
        missing included as a category).
    n_missing_current : int
        Current NaN/inf (numeric, excluded) or missing labels (categorical, a category).
    wasserstein : float or None
        Exact W1 in data units (None for categorical or no data).
    wasserstein_normalised : float or None
        ``wasserstein / reference.scale``.
    js_divergence : float or None
        Base-2 JS divergence (numeric: on the reference quantile bins).
    baseline : float or None
        Size-adjusted reference-vs-reference value of ``statistic``.
    threshold : float or None
        ``max(floor, relative * baseline, null quantile at these sizes)``.
    score : float or None
        Value of ``statistic``.
    statistic : {"wasserstein_normalised", "js_divergence"}
    verdict : {"ok", "drift", "no_data", "insufficient_data"}
        ``insufficient_data``: fewer non-missing current values than ``min_values`` (the
        statistics are kept as evidence, but decide nothing).
    unseen_categories : tuple of str
        Current categories absent from the reference, sorted.
    """

    feature: str
    kind: Literal["numeric", "categorical"]
    n_reference: int
    n_current: int
    n_missing_current: int
    wasserstein: float | None
    wasserstein_normalised: float | None
    js_divergence: float | None
    baseline: float | None
    threshold: float | None
    score: float | None
    statistic: Statistic
    verdict: Verdict
    unseen_categories: tuple[str, ...] = ()

    def to_record(self) -> dict[str, Any]:
        """The feature's drift as a ``feature_drift`` row (the caller adds the run and the
        drift rank).

        Returns
        -------
        dict
            ``feature``, ``kind``, ``wasserstein``, ``wasserstein_normalised``,
            ``js_divergence_base2``, ``statistic_name`` (``statistic``), ``statistic_value``
            (``score``), ``baseline``, ``threshold`` (numbers None without data), ``verdict``,
            ``n_reference``, ``n_current``, ``n_missing_current`` and ``unseen_categories``
            (a list).

        Examples
        --------
        >>> ref = build_categorical_reference(["a"] * 50 + ["b"] * 50, name="c")
        >>> record = categorical_drift(ref, ["a", "z"] * 40).to_record()
        >>> record["statistic_name"], record["verdict"], record["wasserstein"], record["unseen_categories"]
        ('js_divergence', 'drift', None, ['z'])
        """
        return {"feature": self.feature, "kind": self.kind,
                "wasserstein": finite_or_none(self.wasserstein),
                "wasserstein_normalised": finite_or_none(self.wasserstein_normalised),
                "js_divergence_base2": finite_or_none(self.js_divergence),
                "statistic_name": self.statistic, "statistic_value": finite_or_none(self.score),
                "baseline": finite_or_none(self.baseline), "threshold": finite_or_none(self.threshold),
                "verdict": self.verdict, "n_reference": self.n_reference, "n_current": self.n_current,
                "n_missing_current": self.n_missing_current,
                "unseen_categories": list(self.unseen_categories)}

    @property
    def severity(self) -> float:
        """``score / threshold`` (:func:`~modelgate.drift.threshold_multiple.threshold_multiple`,
        the one definition of "worst"): inf for a zero threshold and positive score, -1 for no
        data."""
        multiple = threshold_multiple(self.score, self.threshold)
        return -1.0 if multiple is None else multiple


def _size_factor(n: int, m: int, halves: tuple[int, int]) -> float:
    if min(halves) == 0:
        return 0.0
    return (1 / n + 1 / m) / (1 / halves[0] + 1 / halves[1])


def _verdict(score: float, baseline: float, floor: float, relative: float, *, n_values: int = 1,
             min_values: int = 1, null: float = 0.0) -> tuple[float, Verdict]:
    threshold = max(floor, relative * baseline, null)
    if n_values < min_values:
        return threshold, "insufficient_data"
    return threshold, "drift" if score > threshold else "ok"


def numeric_drift_sorted(
    reference: NumericReference,
    current_sorted: ArrayLike,
    *,
    n_missing: int = 0,
    thresholds: DriftThresholds | None = None,
) -> FeatureDrift:
    """Like :func:`numeric_drift` for finite, ascending current values (nothing is re-sorted).

    Parameters
    ----------
    reference : NumericReference
    current_sorted : array_like of float64
        Finite current values sorted ascending (may be empty).
    n_missing : int, default 0
        Current values already dropped as missing, reported as ``n_missing_current``.
    thresholds : DriftThresholds, optional

    Returns
    -------
    FeatureDrift

    Examples
    --------
    >>> ref = build_numeric_reference(np.arange(1000.0), name="x")
    >>> numeric_drift_sorted(ref, np.arange(1000.0) + 500).verdict
    'drift'
    """
    t = (thresholds or DriftThresholds()).for_feature(reference.name)
    cur = np.asarray(current_sorted, dtype=np.float64)
    stat = t.numeric_statistic
    nodata = FeatureDrift(
        feature=reference.name,
        kind="numeric",
        n_reference=reference.n,
        n_current=int(cur.size),
        n_missing_current=int(n_missing),
        wasserstein=None,
        wasserstein_normalised=None,
        js_divergence=None,
        baseline=None,
        threshold=None,
        score=None,
        statistic=stat,
        verdict="no_data",
    )
    if cur.size == 0:
        return nodata
    null = 0.0
    w = wasserstein_sorted(reference.values, cur)
    wn = w / reference.scale
    js = js_divergence(reference.probabilities, bin_counts_sorted(cur, reference.edges))
    f = _size_factor(reference.n, cur.size, reference.half_sizes)
    if stat == "wasserstein_normalised":
        score, floor = wn, t.wasserstein_floor
        baseline = reference.baseline_wasserstein * math.sqrt(f)
        if t.null_level is not None:
            null = w1_null_quantile(reference.values, reference.n, int(cur.size),
                                    level=t.null_level) / reference.scale
    else:
        score, baseline, floor = js, reference.baseline_js * f, t.js_floor
        if t.null_level is not None:  # the reference's bin counts (its shares of its n values)
            bins = np.rint(reference.probabilities * reference.n).astype(np.int64)
            null = js_null_quantile(bins, int(cur.size), level=t.null_level)
    threshold, verdict = _verdict(score, baseline, floor, t.relative, n_values=int(cur.size),
                                  min_values=t.minimum(), null=null)
    return replace(
        nodata,
        wasserstein=w,
        wasserstein_normalised=wn,
        js_divergence=js,
        baseline=baseline,
        threshold=threshold,
        score=score,
        verdict=verdict,
    )


def numeric_drift(
    reference: NumericReference, current: ArrayLike, *, thresholds: DriftThresholds | None = None
) -> FeatureDrift:
    """Drift of a numeric feature: exact W1, normalised W1 and binned JS against the reference.

    Parameters
    ----------
    reference : NumericReference
        Sketch from :func:`~modelgate.drift.reference.build_numeric_reference`.
    current : array_like of float
        Current values; NaN and +-inf are counted as missing and excluded. Empty, or all
        missing, gives verdict ``"no_data"``.
    thresholds : DriftThresholds, optional
        Defaults to ``DriftThresholds()``.

    Returns
    -------
    FeatureDrift

    Examples
    --------
    >>> ref = build_numeric_reference(np.arange(1000.0), name="x")
    >>> r = numeric_drift(ref, np.r_[np.arange(1000.0), np.nan])
    >>> r.verdict, r.wasserstein, r.n_missing_current
    ('ok', 0.0, 1)
    """
    arr = np.asarray(current, dtype=np.float64).ravel()
    finite = np.isfinite(arr)
    n_missing = int(arr.size - np.count_nonzero(finite))
    cur = np.sort(arr[finite] if n_missing else arr)
    return numeric_drift_sorted(reference, cur, n_missing=n_missing, thresholds=thresholds)


def categorical_drift_from_counts(
    reference: CategoricalReference,
    current_counts: Mapping[str, int],
    *,
    thresholds: DriftThresholds | None = None,
) -> FeatureDrift:
    """Drift of a categorical feature from current label counts (missing under ``MISSING``).

    Parameters
    ----------
    reference : CategoricalReference
    current_counts : mapping of str to int
        Count per label, as strings; missing values under :data:`MISSING`.
    thresholds : DriftThresholds, optional

    Returns
    -------
    FeatureDrift

    Raises
    ------
    ValueError
        On a negative count.

    Examples
    --------
    >>> ref = build_categorical_reference(["a"] * 50 + ["b"] * 50, name="c")
    >>> r = categorical_drift_from_counts(ref, {"a": 50, "z": 50})
    >>> r.verdict, r.unseen_categories
    ('drift', ('z',))
    """
    t = (thresholds or DriftThresholds()).for_feature(reference.name)
    bad = {k: v for k, v in current_counts.items() if v < 0}
    if bad:
        raise ValueError(f"current_counts of {reference.name!r} must be >= 0, got {bad!r}")
    m = int(sum(current_counts.values()))
    nodata = FeatureDrift(
        feature=reference.name,
        kind="categorical",
        n_reference=reference.n,
        n_current=m,
        n_missing_current=int(current_counts.get(MISSING, 0)),
        wasserstein=None,
        wasserstein_normalised=None,
        js_divergence=None,
        baseline=None,
        threshold=None,
        score=None,
        statistic="js_divergence",
        verdict="no_data",
    )
    if m == 0:
        return nodata
    res = categorical_js(reference.categories, reference.counts, current_counts)
    baseline = reference.baseline_js * _size_factor(reference.n, m, reference.half_sizes)
    null = 0.0 if t.null_level is None else js_null_quantile(reference.counts, m, level=t.null_level)
    threshold, verdict = _verdict(res.js_divergence, baseline, t.js_floor, t.relative,
                                  n_values=m - int(current_counts.get(MISSING, 0)),
                                  min_values=t.minimum(categorical=True), null=null)
    return replace(
        nodata,
        js_divergence=res.js_divergence,
        baseline=baseline,
        threshold=threshold,
        score=res.js_divergence,
        verdict=verdict,
        unseen_categories=res.unseen_categories,
    )


def categorical_drift(
    reference: CategoricalReference,
    current: ArrayLike,
    *,
    thresholds: DriftThresholds | None = None,
) -> FeatureDrift:
    """Drift of a categorical feature: base-2 JS over the union of categories.

    Parameters
    ----------
    reference : CategoricalReference
    current : array_like
        Current labels, compared as strings; None/NaN/pd.NA are the category ``MISSING``.
        Empty gives verdict ``"no_data"``.
    thresholds : DriftThresholds, optional

    Returns
    -------
    FeatureDrift

    Examples
    --------
    >>> ref = build_categorical_reference(["a"] * 50 + ["b"] * 50, name="c")
    >>> categorical_drift(ref, ["a", "b"] * 40).verdict
    'ok'
    """
    return categorical_drift_from_counts(
        reference, count_categories(current), thresholds=thresholds
    )


@dataclass(frozen=True, slots=True)
class DriftSummary:
    """Features ordered by drift size, with the breached ones.

    Attributes
    ----------
    features : tuple of FeatureDrift
        Ordered by ``severity`` (score / threshold) descending, then name; no-data last.
    n_breached : int
    breached : tuple of str
        Names with verdict ``"drift"``, in the same order.
    no_data : tuple of str
        Names with verdict ``"no_data"``.
    """

    features: tuple[FeatureDrift, ...]
    n_breached: int
    breached: tuple[str, ...]
    no_data: tuple[str, ...]


def summarise(features: Sequence[FeatureDrift]) -> DriftSummary:
    """Merge per-feature results (from one task or many) into a :class:`DriftSummary`.

    The order depends only on the results, so any fan-out order gives the same summary.

    Raises
    ------
    ValueError
        If a feature name appears twice.

    Examples
    --------
    >>> ref = build_numeric_reference(np.arange(100.0), name="x")
    >>> summarise([numeric_drift(ref, np.arange(100.0) + 80)]).breached
    ('x',)
    """
    names = [f.feature for f in features]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"features must have unique names, got duplicates {dupes!r}")
    ordered = tuple(sorted(features, key=lambda f: (-f.severity, f.feature)))
    breached = tuple(f.feature for f in ordered if f.verdict == "drift")
    no_data = tuple(f.feature for f in ordered if f.verdict == "no_data")
    return DriftSummary(ordered, len(breached), breached, no_data)
