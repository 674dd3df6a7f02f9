"""Data quality of an interval against a schema inferred from the reference (exact counts).

Drift statistics say that a distribution moved; they do not say that a pipeline broke. The
checks here count, per feature, the rows a broken pipeline produces (as TFDV's schema
validation and Evidently's data quality tests do [1]_ [2]_):

- **type mismatch**: a numeric feature holding something that is not a real number (a string, a
  bool), or a fractional value where the reference held only whole numbers; a categorical
  feature holding a value of a Python type (``str``, ``int``, ``float``, ``bool``) the reference
  never held.
- **out of range**: a numeric value outside the reference's ``[min, max]`` widened on each side
  by ``tolerance`` times its span (times ``max(|max|, 1)`` when the reference is constant).
- **new category**: a categorical value outside the reference's domain. A reference with more
  than ``max_domain`` distinct values has no domain (an id-like column) and is not checked.
- **missing-rate jump**: the share of missing values (None, NaN) rose by more than the policy's
  ``max_missing_rate_increase`` (absolute) over the reference's share. A feature absent from
  the interval counts as all missing.

The schema is inferred once, at reference time (:func:`infer_schema`); :func:`check_quality`
counts an interval against it, and :func:`decide_quality` is the verdict: a pure function of
the counts and a :class:`QualityPolicy`, like the drift thresholds. Category values themselves
are never in a result (they can be personal data): only counts.

References
----------
.. [1] TensorFlow Data Validation, "Get started",
   https://www.tensorflow.org/tfx/data_validation/get_started
.. [2] Evidently, "Data quality", https://docs.evidentlyai.com/
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from modelgate.records import finite_or_none

__all__ = [
    "FeatureQuality",
    "FeatureSchema",
    "QualityDecision",
    "QualityPolicy",
    "check_quality",
    "decide_quality",
    "infer_schema",
]

Kind = Literal["numeric", "categorical"]
QualityVerdict = Literal["ok", "breach", "no_data"]

#: Default share of the reference's span the numeric range is widened by on each side.
DEFAULT_TOLERANCE = 0.1
#: Default most distinct values a categorical domain keeps.
DEFAULT_MAX_DOMAIN = 1000


def _type_name(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    return type(value).__name__


def _missing(values: pd.Series) -> NDArray[np.bool_]:
    return np.asarray(values.isna().to_numpy(), dtype=bool)


def _numeric_values(values: pd.Series) -> tuple[NDArray[np.float64], int, int]:
    """Present values as float64, rows missing, and rows present that are not real numbers."""
    missing = _missing(values)
    if values.dtype.kind in "iuf":
        return values.to_numpy(dtype=np.float64)[~missing], int(missing.sum()), 0
    present = values[~missing]
    is_number = np.fromiter((_type_name(v) in ("int", "float") for v in present), dtype=bool,
                            count=present.size)
    numbers = present[is_number].to_numpy(dtype=np.float64)
    return numbers, int(missing.sum()), int((~is_number).sum())


@dataclass(frozen=True, slots=True)
class FeatureSchema:
    """What the reference says a feature looks like.

    Attributes
    ----------
    feature : str
    kind : {"numeric", "categorical"}
    n : int
        Reference rows.
    missing_rate : float
        Share of reference rows missing.
    minimum, maximum : float
        Numeric only (NaN for categorical or an all-missing reference).
    low, high : float
        The accepted range: ``[minimum, maximum]`` widened by the tolerance.
    integral : bool
        Numeric only: every reference value was a whole number.
    value_types : tuple of str
        Categorical only: Python type names the reference held.
    domain : tuple or None
        Categorical only: the reference's distinct values; None when more than
        ``max_domain`` (then new categories are not checked).
    """

    feature: str
    kind: Kind
    n: int
    missing_rate: float
    minimum: float = math.nan
    maximum: float = math.nan
    low: float = math.nan
    high: float = math.nan
    integral: bool = False
    value_types: tuple[str, ...] = ()
    domain: tuple[Any, ...] | None = None

    def to_record(self) -> dict[str, Any]:
        """Plain values (the domain as its size only: its values can be personal data)."""
        return {"feature": self.feature, "kind": self.kind, "n": self.n,
                "missing_rate": finite_or_none(self.missing_rate), "minimum": finite_or_none(self.minimum),
                "maximum": finite_or_none(self.maximum), "low": finite_or_none(self.low),
                "high": finite_or_none(self.high), "integral": self.integral,
                "value_types": list(self.value_types),
                "domain_size": None if self.domain is None else len(self.domain)}


def _numeric_schema(feature: str, values: pd.Series, tolerance: float) -> FeatureSchema:
    numbers, n_missing, _ = _numeric_values(values)
    n = int(values.size)
    if numbers.size == 0:
        return FeatureSchema(feature, "numeric", n, n_missing / n if n else math.nan)
    lo, hi = float(numbers.min()), float(numbers.max())
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    return FeatureSchema(feature, "numeric", n, n_missing / n, lo, hi, lo - tolerance * span,
                         hi + tolerance * span, bool(np.all(numbers == np.floor(numbers))))


def _categorical_schema(feature: str, values: pd.Series, max_domain: int) -> FeatureSchema:
    n = int(values.size)
    counts = values.value_counts(dropna=True)
    n_missing = n - int(counts.sum())
    types = tuple(sorted({_type_name(v) for v in counts.index}))
    domain = tuple(counts.index) if counts.size <= max_domain else None
    return FeatureSchema(feature, "categorical", n, n_missing / n if n else math.nan,
                         value_types=types, domain=domain)


def infer_schema(columns: Mapping[str, ArrayLike], kinds: Mapping[str, Kind], *,
                 tolerance: float = DEFAULT_TOLERANCE,
                 max_domain: int = DEFAULT_MAX_DOMAIN) -> tuple[FeatureSchema, ...]:
    """The reference schema of every feature in ``kinds``.

    Parameters
    ----------
    columns : mapping of str to array_like
        Reference values by feature (numpy arrays or pandas Series; None and NaN are missing).
    kinds : mapping of str to {"numeric", "categorical"}
    tolerance : float, default 0.1
        Share of the reference's span a numeric range is widened by on each side.
    max_domain : int, default 1000
        Categorical features with more distinct values get no domain.

    Returns
    -------
    tuple of FeatureSchema
        In ``kinds`` order.

    Raises
    ------
    ValueError
        A feature missing from ``columns``, an unknown kind, or a negative tolerance.

    Examples
    --------
    >>> (age,) = infer_schema({"age": [20, 30, None, 40]}, {"age": "numeric"})
    >>> age.missing_rate, age.low, age.high, age.integral
    (0.25, 18.0, 42.0, True)
    """
    if not tolerance >= 0.0:
        raise ValueError(f"tolerance must be >= 0; got {tolerance!r}")
    out = []
    for feature, kind in kinds.items():
        if feature not in columns:
            raise ValueError(f"feature {feature!r} is not in the reference columns")
        values = pd.Series(columns[feature])
        if kind == "numeric":
            out.append(_numeric_schema(feature, values, tolerance))
        elif kind == "categorical":
            out.append(_categorical_schema(feature, values, max_domain))
        else:
            raise ValueError(f"kind of {feature!r} must be 'numeric' or 'categorical'; got {kind!r}")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class FeatureQuality:
    """Counts of one feature's quality problems on one interval.

    Attributes
    ----------
    feature : str
    kind : {"numeric", "categorical"}
    n : int
        Rows of the interval.
    n_missing : int
    missing_rate, reference_missing_rate : float
    n_type_mismatch, n_out_of_range, n_new_category : int
        Rows with each problem (``n_new_category`` counts rows, not values).
    n_new_values : int
        Distinct new categorical values.
    domain_checked : bool
        False when the reference had no domain (too many values) or for numeric features.
    column_present : bool
        False when the interval has no such column (then every row is missing).
    """

    feature: str
    kind: Kind
    n: int
    n_missing: int
    missing_rate: float
    reference_missing_rate: float
    n_type_mismatch: int = 0
    n_out_of_range: int = 0
    n_new_category: int = 0
    n_new_values: int = 0
    domain_checked: bool = False
    column_present: bool = True

    def to_record(self) -> dict[str, Any]:
        """Plain values; an undefined rate is ``None``."""
        return {"feature": self.feature, "kind": self.kind, "n": self.n, "n_missing": self.n_missing,
                "missing_rate": finite_or_none(self.missing_rate),
                "reference_missing_rate": finite_or_none(self.reference_missing_rate),
                "n_type_mismatch": self.n_type_mismatch, "n_out_of_range": self.n_out_of_range,
                "n_new_category": self.n_new_category, "n_new_values": self.n_new_values,
                "domain_checked": self.domain_checked, "column_present": self.column_present}


def _numeric_quality(schema: FeatureSchema, values: pd.Series) -> FeatureQuality:
    numbers, n_missing, n_not_number = _numeric_values(values)
    n = int(values.size)
    fractional = int(np.count_nonzero(numbers != np.floor(numbers))) if schema.integral else 0
    outside = int(np.count_nonzero((numbers < schema.low) | (numbers > schema.high))) \
        if math.isfinite(schema.low) else 0
    return FeatureQuality(schema.feature, "numeric", n, n_missing, n_missing / n if n else math.nan,
                          schema.missing_rate, n_type_mismatch=n_not_number + fractional,
                          n_out_of_range=outside)


def _categorical_quality(schema: FeatureSchema, values: pd.Series) -> FeatureQuality:
    n = int(values.size)
    counts = values.value_counts(dropna=True)
    n_missing = n - int(counts.sum())
    allowed = set(schema.value_types)
    wrong_type = np.fromiter((_type_name(v) not in allowed for v in counts.index), dtype=bool,
                             count=counts.size)
    new = np.zeros(counts.size, dtype=bool)
    if schema.domain is not None:
        new = ~counts.index.isin(pd.Index(schema.domain, dtype=object))
    c = counts.to_numpy()
    return FeatureQuality(schema.feature, "categorical", n, n_missing,
                          n_missing / n if n else math.nan, schema.missing_rate,
                          n_type_mismatch=int(c[wrong_type].sum()),
                          n_new_category=int(c[new].sum()), n_new_values=int(new.sum()),
                          domain_checked=schema.domain is not None)


def check_quality(schema: tuple[FeatureSchema, ...], columns: Mapping[str, ArrayLike],
                  *, n_rows: int) -> tuple[FeatureQuality, ...]:
    """Count each feature's quality problems on one interval.

    Parameters
    ----------
    schema : tuple of FeatureSchema
        From :func:`infer_schema`.
    columns : mapping of str to array_like
        The interval's values by feature; a feature absent here is all missing.
    n_rows : int
        Rows of the interval (each present column must have this many), at least 0.

    Returns
    -------
    tuple of FeatureQuality
        In ``schema`` order.

    Raises
    ------
    ValueError
        A present column of another length than ``n_rows``, or a negative ``n_rows``.

    Examples
    --------
    >>> schema = infer_schema({"age": [20, 30, 40], "city": ["a", "b", "a"]},
    ...                       {"age": "numeric", "city": "categorical"})
    >>> age, city = check_quality(schema, {"age": [25, 99, 30.5], "city": ["a", "c", 7]}, n_rows=3)
    >>> age.n_out_of_range, age.n_type_mismatch, city.n_new_category, city.n_type_mismatch
    (1, 1, 2, 1)
    """
    if n_rows < 0:
        raise ValueError(f"n_rows must be >= 0; got {n_rows!r}")
    out = []
    for fs in schema:
        if fs.feature not in columns:
            out.append(FeatureQuality(fs.feature, fs.kind, n_rows, n_rows, 1.0 if n_rows else math.nan,
                                      fs.missing_rate, column_present=False))
            continue
        values = pd.Series(columns[fs.feature])
        if values.size != n_rows:
            raise ValueError(f"column {fs.feature!r} has {values.size} rows; n_rows is {n_rows}")
        quality = _numeric_quality if fs.kind == "numeric" else _categorical_quality
        out.append(quality(fs, values))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class QualityPolicy:
    """Most problems a feature may have before it breaches, as shares of the interval's rows.

    Attributes
    ----------
    max_type_mismatch_rate : float, default 0.0
    max_out_of_range_rate : float, default 0.01
    max_new_category_rate : float, default 0.01
    max_missing_rate_increase : float, default 0.05
        Absolute rise of the missing share over the reference's.
    """

    max_type_mismatch_rate: float = 0.0
    max_out_of_range_rate: float = 0.01
    max_new_category_rate: float = 0.01
    max_missing_rate_increase: float = 0.05

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1]; got {value!r}")


@dataclass(frozen=True, slots=True)
class QualityDecision:
    """The verdict on one interval's quality.

    Attributes
    ----------
    verdicts : tuple of (str, str)
        ``(feature, verdict)``; verdict ``ok``, ``breach`` or ``no_data`` (an empty interval).
    reasons : tuple of (str, str)
        ``(feature, reason)`` for every limit passed, e.g. ``out_of_range 0.0500 > 0.0100``.
    breached : tuple of str
        Features with at least one reason.
    """

    verdicts: tuple[tuple[str, QualityVerdict], ...]
    reasons: tuple[tuple[str, str], ...]
    breached: tuple[str, ...]

    @property
    def n_breached(self) -> int:
        """Number of breached features."""
        return len(self.breached)

    def to_record(self) -> dict[str, Any]:
        """Plain values."""
        return {"n_breached": self.n_breached, "breached": list(self.breached),
                "verdicts": {f: v for f, v in self.verdicts},
                "reasons": [{"feature": f, "reason": r} for f, r in self.reasons]}


def decide_quality(qualities: tuple[FeatureQuality, ...], policy: QualityPolicy) -> QualityDecision:
    """Each feature's verdict: a breach when any share passes its limit in ``policy``.

    Examples
    --------
    >>> q = FeatureQuality("age", "numeric", 100, 10, 0.10, 0.02, n_out_of_range=5)
    >>> d = decide_quality((q,), QualityPolicy())
    >>> d.breached, [r for _, r in d.reasons]
    (('age',), ['out_of_range 0.0500 > 0.0100', 'missing_rate_increase 0.0800 > 0.0500'])
    """
    verdicts: list[tuple[str, QualityVerdict]] = []
    reasons: list[tuple[str, str]] = []
    for q in qualities:
        if q.n == 0:
            verdicts.append((q.feature, "no_data"))
            continue
        checks = (("type_mismatch", q.n_type_mismatch / q.n, policy.max_type_mismatch_rate),
                  ("out_of_range", q.n_out_of_range / q.n, policy.max_out_of_range_rate),
                  ("new_category", q.n_new_category / q.n, policy.max_new_category_rate),
                  ("missing_rate_increase", q.missing_rate - (q.reference_missing_rate
                                                              if math.isfinite(q.reference_missing_rate)
                                                              else 0.0),
                   policy.max_missing_rate_increase))
        mine = [(q.feature, f"{name} {value:.4f} > {limit:.4f}") for name, value, limit in checks
                if value > limit]
        reasons += mine
        verdicts.append((q.feature, "breach" if mine else "ok"))
    breached = tuple(dict.fromkeys(f for f, _ in reasons))
    return QualityDecision(tuple(verdicts), tuple(reasons), breached)
