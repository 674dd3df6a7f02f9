"""The ``segments:`` section of a promotion policy: which slices to evaluate and how to judge them.

.. code-block:: yaml

    segments:
      columns: [region, device]      # segment columns (evaluate --segments adds to them)
      pairs: [[region, device]]      # optional: pairs of columns whose joint values are segments
      min_rows: 100                  # optional: fewer rows (in a segment or its rest): not judged
      correction: bh                 # optional: bh (default), by or holm
      level: 0.05                    # optional: false-discovery level (family-wise for holm)
      metrics:                       # per task: SEGMENT_METRICS_BY_TASK (binary shown)
        roc_auc:
          limit: 0.70                # no segment worse than this value
          margin: 0.05               # no segment worse than its rest by more than this
          severity: block            # block (default) or warn
          on_inconclusive: warn      # optional; the policy's by default

``limit`` is a bound in the metric's own direction (a lower bound for ROC AUC, an upper
bound for the log loss); ``margin`` (>= 0) is the worsening allowed against the rest of
the data, in the metric's units.  How :func:`~.segment_gate.segment_checks` judges them
is in :mod:`.segment_gate`.

Examples
--------
>>> p = segment_policy({"columns": ["region"], "metrics": {"accuracy": {"margin": 0.03}}})
>>> p.columns, p.correction, p.level, p.thresholds[0]  # doctest: +NORMALIZE_WHITESPACE
(('region',), 'bh', 0.05, SegmentThreshold(metric='accuracy', limit=None, margin=0.03,
 severity='block', on_inconclusive=None))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from modelgate.input_limits import BIGINT_MAX, shown

from .multiple_testing import CORRECTIONS, Correction
from .policy_fields import policy_mapping, policy_number
from .policy_yaml import PolicyError

__all__ = ["SEGMENT_METRICS", "SEGMENT_METRICS_BY_TASK", "SegmentPolicy", "SegmentThreshold",
           "segment_higher_is_better", "segment_metric_base", "segment_policy",
           "with_segment_columns"]

#: Metrics a segment threshold may name (binary classification).
SEGMENT_METRICS = ("roc_auc", "accuracy", "precision", "recall", "f1", "log_loss", "brier")

#: Per task, the metrics its segments report and a threshold may name, with their direction.
#: Multiclass ``recall`` and ``precision`` are per class, named ``recall[<class>]``;
#: regression's ``mean_error`` (the bias) has no worse side, so segments do not judge it.
SEGMENT_METRICS_BY_TASK: dict[str, dict[str, bool]] = {
    "binary_classification": {"roc_auc": True, "accuracy": True, "precision": True,
                              "recall": True, "f1": True, "log_loss": False, "brier": False},
    "multiclass_classification": {"accuracy": True, "macro_f1": True, "weighted_f1": True,
                                  "roc_auc_ovr_macro": True, "log_loss": False,
                                  "recall": True, "precision": True},
    "regression": {"rmse": False, "mae": False, "r2": True},
}
_PER_CLASS = ("recall", "precision")


def segment_metric_base(metric: str) -> str:
    """``recall[cat]`` -> ``recall`` (a per-class multiclass metric); any other name unchanged.

    >>> segment_metric_base("precision[b]"), segment_metric_base("rmse")
    ('precision', 'rmse')
    """
    base, bracket, rest = metric.partition("[")
    return base if bracket and base in _PER_CLASS and rest.endswith("]") and len(rest) > 1 else metric


def segment_higher_is_better(metric: str) -> bool:
    """Whether a larger value of a segment metric (of any task) is better.

    Raises
    ------
    KeyError
        For a name no task's segments report.

    >>> segment_higher_is_better("recall[b]"), segment_higher_is_better("rmse")
    (True, False)
    """
    base = segment_metric_base(metric)
    for directions in SEGMENT_METRICS_BY_TASK.values():
        if base in directions:
            return directions[base]
    raise KeyError(metric)


@dataclass(frozen=True, slots=True)
class SegmentThreshold:
    """Per metric: no segment worse than ``limit``, nor worse than its rest by more than ``margin``."""

    metric: str
    limit: float | None
    margin: float | None
    severity: str = "block"
    on_inconclusive: str | None = None


@dataclass(frozen=True, slots=True)
class SegmentPolicy:
    """The validated ``segments:`` section (None ``min_rows``: the evaluation's default)."""

    columns: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()
    min_rows: int | None = None
    correction: Correction = "bh"
    level: float = 0.05
    thresholds: tuple[SegmentThreshold, ...] = ()

    def to_document(self) -> dict[str, Any]:
        """The section as policy YAML would write it (loads back to the same policy).

        >>> doc = SegmentPolicy(("a",), thresholds=(SegmentThreshold("f1", None, 0.1),)).to_document()
        >>> doc  # doctest: +NORMALIZE_WHITESPACE
        {'columns': ['a'], 'correction': 'bh', 'level': 0.05,
         'metrics': {'f1': {'margin': 0.1, 'severity': 'block'}}}
        """
        document: dict[str, Any] = {"columns": list(self.columns)}
        if self.pairs:
            document["pairs"] = [list(p) for p in self.pairs]
        if self.min_rows is not None:
            document["min_rows"] = self.min_rows
        document.update(correction=self.correction, level=self.level)
        document["metrics"] = {t.metric: {k: v for k, v in (
            ("limit", t.limit), ("margin", t.margin), ("severity", t.severity),
            ("on_inconclusive", t.on_inconclusive)) if v is not None} for t in self.thresholds}
        return document


def with_segment_columns(section: SegmentPolicy | None, columns: Sequence[str],
                         pairs: bool = False) -> SegmentPolicy | None:
    """The section with ``columns`` evaluated too (``pairs``: every pair of all its columns).

    What ``evaluate --segments`` and the DAG's ``segments`` parameter do to the run's policy:
    columns are added after the policy's own, sorted and each once (the same set of columns
    in any order is the same run), never removed; thresholds are unchanged.

    Examples
    --------
    >>> s = with_segment_columns(SegmentPolicy(("a",)), ["c", "b", "a", "c"], pairs=True)
    >>> s.columns, s.pairs
    (('a', 'b', 'c'), (('a', 'b'), ('a', 'c'), ('b', 'c')))
    >>> with_segment_columns(None, []) is None
    True
    """
    for name in columns:
        if not isinstance(name, str) or not name.strip():
            raise PolicyError(f"segment columns: expected column names; got {shown(name)}")
    if not columns and not pairs:
        return section
    base = section or SegmentPolicy()
    merged = tuple(dict.fromkeys([*base.columns, *sorted(set(columns))]))
    new_pairs = list(base.pairs)
    if pairs:
        new_pairs += [p for p in combinations(merged, 2) if p not in new_pairs]
    return replace(base, columns=merged, pairs=tuple(new_pairs))


def segment_policy(spec: object) -> SegmentPolicy:
    """Validate the ``segments:`` mapping of a policy document.

    Raises
    ------
    PolicyError
        Naming the key path, what was expected and what came.

    Examples
    --------
    >>> try:
    ...     segment_policy({"metrics": {"roc_auc": {"margin": -0.1}}})
    ... except PolicyError as exc:
    ...     print(exc)
    policy key 'segments.metrics.roc_auc.margin': expected a number >= 0; got -0.1
    """
    body = policy_mapping(spec, "segments", {"columns", "pairs", "min_rows", "correction",
                                             "level", "metrics"})
    columns = _names(body.get("columns", []), "segments.columns")
    pairs = []
    for i, pair in enumerate(body.get("pairs", []) if isinstance(body.get("pairs", []), list)
                             else _fail("segments.pairs", "a list of [column, column]",
                                        body.get("pairs"))):
        names = _names(pair, f"segments.pairs[{i}]")
        if len(names) != 2 or names[0] == names[1]:
            _fail(f"segments.pairs[{i}]", "two different column names", pair)
        pairs.append((names[0], names[1]))
    min_rows = body.get("min_rows")
    if min_rows is not None and (isinstance(min_rows, bool) or not isinstance(min_rows, int)
                                 or not 2 <= min_rows <= BIGINT_MAX):
        _fail("segments.min_rows", f"a whole number from 2 to {BIGINT_MAX:,}", min_rows)
    correction = body.get("correction", "bh")
    if correction not in CORRECTIONS:
        _fail("segments.correction", f"one of {', '.join(CORRECTIONS)}", correction)
    level = body.get("level", 0.05)
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        _fail("segments.level", "a number in (0, 1)", level)
    thresholds = []
    for metric, threshold in policy_mapping(body.get("metrics", {}), "segments.metrics", None).items():
        thresholds.append(_threshold(metric, threshold))
    return SegmentPolicy(columns, tuple(pairs), min_rows, correction, float(level), tuple(thresholds))


def _threshold(metric: str, spec: object) -> SegmentThreshold:
    path = f"segments.metrics.{metric}"
    known = sorted({m for d in SEGMENT_METRICS_BY_TASK.values() for m in d if m not in _PER_CLASS})
    if segment_metric_base(metric) not in {m for d in SEGMENT_METRICS_BY_TASK.values() for m in d}:
        raise PolicyError(f"policy key {path!r}: expected one of {', '.join(known)}, "
                          f"recall[<class>], precision[<class>]; got {shown(metric)}")
    body = policy_mapping(spec, path, {"limit", "margin", "severity", "on_inconclusive"})
    limit, margin = policy_number(body, "limit", path), policy_number(body, "margin", path)
    if limit is None and margin is None:
        raise PolicyError(f"policy key {path!r}: expected at least one of 'limit', 'margin'; "
                          f"got keys {sorted(body)!r}")
    if margin is not None and margin < 0:
        _fail(f"{path}.margin", "a number >= 0", body["margin"])
    severity = body.get("severity", "block")
    if severity not in ("block", "warn"):
        _fail(f"{path}.severity", "'block' or 'warn'", severity)
    on_inconclusive = body.get("on_inconclusive")
    if on_inconclusive is not None and on_inconclusive not in ("block", "warn"):
        _fail(f"{path}.on_inconclusive", "'block' or 'warn'", on_inconclusive)
    return SegmentThreshold(metric, limit, margin, severity, on_inconclusive)


def _fail(path: str, expected: str, got: object) -> Any:
    raise PolicyError(f"policy key {path!r}: expected {expected}; got {shown(got)}")


def _names(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        _fail(path, "a list of column names", value)
    assert isinstance(value, list)
    if len(set(value)) != len(value):
        _fail(path, "each column once", value)
    return tuple(value)
