"""Promotion policy: which metric values, champion changes and fairness gaps a model must meet.

The policy is YAML, validated strictly: an unknown key, metric or severity, a
non-numeric bound or ``lower > upper`` raises :class:`PolicyError` naming the key path,
what was expected and what came. So do the limits any configuration is held to
(:mod:`modelgate.input_limits`): a key given twice, nesting deeper than 32 levels, a
control character (NUL included) in a key, a number that is not finite as a float, a group
minimum beyond a PostgreSQL ``bigint`` (the column it is stored in).

Format
------
.. code-block:: yaml

    version: 1                       # optional; only 1 exists
    basis: interval                  # optional default for every threshold below:
                                     #   interval or point_estimate (the default)
    on_inconclusive: block           # optional default: block (the default) or warn
    metrics:                         # binary: roc_auc accuracy precision recall f1 log_loss brier
                                     # multiclass: accuracy macro_f1 weighted_f1 roc_auc_ovr_macro
                                     #   log_loss recall[<class>] precision[<class>]
                                     # regression: rmse mae r2 mean_error
      roc_auc:
        value:                       # absolute bounds on the candidate's value
          lower: 0.70                # at least one of lower / upper
          severity: block            # block (default) or warn
        change:                      # against the champion (skipped without one)
          absolute: -0.01            # improvement >= -0.01: may be 0.01 worse
          severity: block
      log_loss:
        change:
          relative: -0.02            # improvement / |champion| >= -0.02
          direction: lower_is_better # optional; the metric's natural direction by default
          basis: point_estimate      # per threshold: basis, on_inconclusive
    segments:                        # per slice of the data: see evaluation/segment_policy.py
      columns: [region]
      metrics: {accuracy: {margin: 0.05}}
    fairness:                        # gaps are judged against an upper bound
      min_positives_per_group: 10    # interval basis: fewer label positives (negatives)
      min_negatives_per_group: 10    #   in a group of the gap is inconclusive; 10 each
      default:                       # applies to every sensitive feature reported
        equalized_odds_difference: {upper: 0.03, severity: block}
        demographic_parity_difference: {upper: 0.10, severity: warn}
      features:                      # per feature; replaces the default metric by metric
        age_band:
          equalized_odds_difference: {upper: 0.05}

Semantics
---------
* ``improvement`` is ``candidate - champion`` for a higher-is-better metric and
  ``champion - candidate`` for a lower-is-better one, so a change margin always reads
  "improvement must be at least this"; a negative margin allows that much worsening.
  (TFMA writes the bound on the raw difference and flips its meaning with the
  direction; here the sign means the same for every metric.)  Relative margins divide
  the improvement by ``|champion|``.  ``absolute`` and ``relative`` in one ``change``
  give two checks, both applied.
* Bounds are inclusive.  Every check's verdict is ``pass``, ``breach`` or
  ``inconclusive`` (``fail`` when its number is missing or undefined), by its ``basis``:

  - ``interval``: ``pass`` when the whole bootstrap interval (of the value, of the gap,
    of the paired change) is on the allowed side of the limit, ``breach`` when the whole
    interval is past it, ``inconclusive`` when it straddles the limit, and for the
    equalized-odds family of fairness gaps also when a group taking part in the gap has
    fewer label positives (TPR) or negatives (FPR) than ``min_positives_per_group`` /
    ``min_negatives_per_group`` (default 10 each: below that one row moves the group's
    rate by more than 0.1, more than any gap limit shipped).  A check without an
    interval fails.
  - ``point_estimate``: ``pass`` or ``breach`` on the point estimate alone, never
    ``inconclusive``: the rule of policies written before verdicts knew their sample
    size, and the default when no layer of the policy names a basis.

  ``on_inconclusive`` says what an ``inconclusive`` check of severity ``block`` does:
  ``block`` (the default) or ``warn``.  Blocking is the default because a gate that let
  undecidable evidence through would pass more models the less data they were
  evaluated on; the verdict and the report say "inconclusive at n = ..." so the release
  manager can tell it from a breach and get more data or choose ``warn`` knowingly.
  ``use_confidence_bound: true`` (the former spelling) reads as ``basis: interval`` and
  blocks on exactly what it blocked before; ``false`` as ``basis: point_estimate``.
* Fairness metrics: equalized_odds_difference, tpr_gap, fpr_gap, tpr_fpr_gap_sum,
  demographic_parity_difference, predictive_parity_difference (binary; per class as
  ``tpr_gap[<class>]`` for multiclass models, ``tpr_gap[*]`` for each class of the model),
  mae_gap, rmse_gap, mean_prediction_gap (regression); keys ``upper`` (>= 0, required),
  ``severity``, ``basis``, ``on_inconclusive``.
  :func:`check_policy_for_task` refuses names the model's task does not report, and each
  task has its default policy (:func:`default_policy`).

:func:`merge_policies` overlays a per-model override on a base policy: a threshold in
the override replaces the base threshold with the same metric and kind (value, change,
fairness default, or fairness for a feature); everything else is kept, and the policy-wide
keys of the override (``basis``, ``on_inconclusive``, the group minimums, the whole
``segments:`` section, :mod:`.segment_policy`) replace the
base's when given.  A threshold cannot be removed by an override, only relaxed or set to ``warn``.

Examples
--------
>>> policy = load_policy('''
... metrics:
...   roc_auc: {value: {lower: 0.7}}
... fairness:
...   default: {equalized_odds_difference: {upper: 0.03}}
... ''')
>>> policy.values[0]
ValueThreshold(metric='roc_auc', lower=0.7, upper=None, severity='block', basis=None, on_inconclusive=None)
>>> try:
...     load_policy("metrics: {auc: {value: {lower: 0.7}}}")
... except PolicyError as exc:
...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
policy key 'metrics.auc': expected one of accuracy, brier, f1, log_loss, macro_f1, mae,
mean_error, precision, r2, recall, rmse, roc_auc, roc_auc_ovr_macro, weighted_f1; got 'auc'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from modelgate.input_limits import BIGINT_MAX, shown

from .policy_fields import (
    JUDGING_KEYS,
    Basis,
    Severity,
    check_known,
    key_part,
    policy_basis,
    policy_mapping,
    policy_number,
    policy_on_inconclusive,
    policy_severity,
)
from .policy_yaml import PolicyError, read_yaml
from .segment_policy import SegmentPolicy, segment_policy

__all__ = [
    "DEFAULT_MIN_GROUP_COUNT",
    "DEFAULT_POLICY_PATH",
    "TASK_FAIRNESS_METRICS",
    "TASK_METRICS",
    "check_policy_for_task",
    "default_policy_path",
    "FAIRNESS_METRICS",
    "HIGHER_IS_BETTER",
    "PERFORMANCE_METRICS",
    "ChangeThreshold",
    "FairnessThreshold",
    "Policy",
    "PolicyError",
    "ValueThreshold",
    "default_policy",
    "load_policy",
    "merge_policies",
]

Direction = Literal["higher_is_better", "lower_is_better"]
#: Minimum label positives and negatives per group when a policy names none (see Semantics).
DEFAULT_MIN_GROUP_COUNT = 10

HIGHER_IS_BETTER: Mapping[str, bool] = {
    "roc_auc": True,
    "accuracy": True,
    "precision": True,
    "recall": True,
    "f1": True,
    "log_loss": False,
    "brier": False,
}
PERFORMANCE_METRICS: tuple[str, ...] = tuple(HIGHER_IS_BETTER)
FAIRNESS_METRICS: tuple[str, ...] = (
    "equalized_odds_difference",
    "tpr_gap",
    "fpr_gap",
    "tpr_fpr_gap_sum",
    "demographic_parity_difference",
    "predictive_parity_difference",
)
DEFAULT_POLICY_PATH = Path(__file__).with_name("default_policy.yaml")

# Multiclass and regression metrics (evaluation.multiclass, evaluation.regression). Per-class
# metrics are written ``recall[<class>]`` / ``precision[<class>]``; ``mean_error`` (the bias)
# has no better direction, so a change threshold on it must say ``direction``.
_MORE_HIGHER_IS_BETTER: Mapping[str, bool] = {
    "macro_f1": True, "weighted_f1": True, "roc_auc_ovr_macro": True,
    "rmse": False, "mae": False, "r2": True,
}
_PER_CLASS = ("recall", "precision")
TASK_METRICS: Mapping[str, tuple[str, ...]] = {
    "binary_classification": PERFORMANCE_METRICS,
    "multiclass_classification": ("accuracy", "macro_f1", "weighted_f1", "roc_auc_ovr_macro",
                                  "log_loss"),
    "regression": ("rmse", "mae", "r2", "mean_error"),
}
#: Fairness gaps per task; multiclass gaps are per class, ``<binary gap>[<class>]``.
TASK_FAIRNESS_METRICS: Mapping[str, tuple[str, ...]] = {
    "binary_classification": FAIRNESS_METRICS,
    "multiclass_classification": FAIRNESS_METRICS,
    "regression": ("mae_gap", "rmse_gap", "mean_prediction_gap"),
}
_ALL_METRICS = tuple(dict.fromkeys(m for names in TASK_METRICS.values() for m in names))
_ALL_FAIRNESS = tuple(dict.fromkeys(m for names in TASK_FAIRNESS_METRICS.values() for m in names))


@dataclass(frozen=True, slots=True)
class ValueThreshold:
    """Inclusive bounds on a candidate metric (``lower`` and/or ``upper``)."""

    metric: str
    lower: float | None
    upper: float | None
    severity: Severity = "block"
    basis: Basis | None = None
    on_inconclusive: Severity | None = None


@dataclass(frozen=True, slots=True)
class ChangeThreshold:
    """Minimum improvement over the champion (``absolute`` and/or ``relative``)."""

    metric: str
    absolute: float | None
    relative: float | None
    direction: Direction
    severity: Severity = "block"
    basis: Basis | None = None
    on_inconclusive: Severity | None = None


@dataclass(frozen=True, slots=True)
class FairnessThreshold:
    """Inclusive upper bound on a fairness gap."""

    metric: str
    upper: float
    severity: Severity = "block"
    basis: Basis | None = None
    on_inconclusive: Severity | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """A validated promotion policy.

    ``basis`` and ``on_inconclusive`` of a threshold, when None, fall back to the
    policy's, and None there means ``point_estimate`` and ``block``; None group minimums
    mean :data:`DEFAULT_MIN_GROUP_COUNT`.
    """

    values: tuple[ValueThreshold, ...] = ()
    changes: tuple[ChangeThreshold, ...] = ()
    fairness_default: tuple[FairnessThreshold, ...] = ()
    fairness_features: tuple[tuple[str, tuple[FairnessThreshold, ...]], ...] = ()
    basis: Basis | None = None
    on_inconclusive: Severity | None = None
    min_positives_per_group: int | None = None
    min_negatives_per_group: int | None = None
    segments: SegmentPolicy | None = None

    def fairness_for(self, feature: str) -> tuple[FairnessThreshold, ...]:
        """Thresholds for one sensitive feature: the default, replaced metric by metric."""
        specific = dict(self.fairness_features).get(feature, ())
        overridden = {t.metric for t in specific}
        return tuple(t for t in self.fairness_default if t.metric not in overridden) + specific


def load_policy(path_or_text: str | os.PathLike[str]) -> Policy:
    """Parse and validate a policy from a file or from YAML text.

    Parameters
    ----------
    path_or_text : str or os.PathLike
        A path object, a one-line string ending in ``.yaml``/``.yml`` (read as a path),
        or YAML text.

    Returns
    -------
    Policy

    Raises
    ------
    PolicyError
        If the document is not valid YAML or breaks the format.
    FileNotFoundError
        If a path is given and does not exist.
    """
    if isinstance(path_or_text, os.PathLike) or (
        "\n" not in path_or_text and path_or_text.strip().endswith((".yaml", ".yml"))
    ):
        text = Path(path_or_text).read_text(encoding="utf-8")
    else:
        text = path_or_text
    return _policy(read_yaml(text))


def default_policy(task: str = "binary_classification") -> Policy:
    """The policy shipped for a task: ``evaluation/default_policy.yaml`` for binary models,
    ``default_policy_<task>.yaml`` for the others.

    Examples
    --------
    >>> [t.metric for t in default_policy().fairness_default]
    ['equalized_odds_difference', 'demographic_parity_difference']
    >>> [t.metric for t in default_policy("regression").values]
    ['r2']
    """
    policy = load_policy(default_policy_path(task))
    check_policy_for_task(policy, task)
    return policy


def merge_policies(base: Policy, override: Policy) -> Policy:
    """Overlay ``override`` on ``base`` threshold by threshold.

    A threshold of the override replaces the base threshold with the same metric in the
    same place (value, change, fairness default, fairness of one feature); other base
    thresholds are kept; ``basis``, ``on_inconclusive`` and the group minimums are the
    override's unless they are None.

    Examples
    --------
    >>> base = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}, f1: {value: {lower: 0.5}}}")
    >>> strict = load_policy("metrics: {roc_auc: {value: {lower: 0.8, severity: warn}}}")
    >>> [(t.metric, t.lower, t.severity) for t in merge_policies(base, strict).values]
    [('roc_auc', 0.8, 'warn'), ('f1', 0.5, 'block')]
    """
    features = dict(base.fairness_features)
    for feature, thresholds in override.fairness_features:
        features[feature] = _overlay(features.get(feature, ()), thresholds)
    return replace(
        base,
        values=_overlay(base.values, override.values),
        changes=_overlay(base.changes, override.changes),
        fairness_default=_overlay(base.fairness_default, override.fairness_default),
        fairness_features=tuple(features.items()),
        **{key: getattr(base, key) if getattr(override, key) is None else getattr(override, key)
           for key in ("basis", "on_inconclusive", "min_positives_per_group",
                       "min_negatives_per_group", "segments")},
    )


def _overlay(base: tuple[Any, ...], override: tuple[Any, ...]) -> tuple[Any, ...]:
    new = {t.metric: t for t in override}
    kept = tuple(new.pop(t.metric, t) for t in base)
    return kept + tuple(new.values())


# ----------------------------------------------------------------------------- parsing


def _policy(document: object) -> Policy:
    if document is None:
        document = {}
    top = policy_mapping(document, "", {"version", "use_confidence_bound", "basis", "on_inconclusive",
                                  "metrics", "fairness", "segments"})
    if "version" in top and (top["version"] != 1 or isinstance(top["version"], bool)):
        raise PolicyError(f"policy key 'version': expected 1; got {shown(top['version'])}")
    values: list[ValueThreshold] = []
    changes: list[ChangeThreshold] = []
    metrics = policy_mapping(top.get("metrics", {}), "metrics", None)
    for metric, spec in metrics.items():
        path = f"metrics.{key_part(metric)}"
        check_known(_base_name(metric, _PER_CLASS), _ALL_METRICS, path, other=_ALL_FAIRNESS,
               other_place="fairness")
        body = policy_mapping(spec, path, {"value", "change"})
        if "value" in body:
            values.append(_value_threshold(metric, body["value"], f"{path}.value"))
        if "change" in body:
            changes.append(_change_threshold(metric, body["change"], f"{path}.change"))
    default, features, minimums = _fairness(top.get("fairness", {}))
    segments = None if top.get("segments") is None else segment_policy(top["segments"])
    return Policy(tuple(values), tuple(changes), default, features, policy_basis(top, ""),
                  policy_on_inconclusive(top, ""), *minimums, segments=segments)


def _value_threshold(metric: str, spec: object, path: str) -> ValueThreshold:
    body = policy_mapping(spec, path, {"lower", "upper", "severity", *JUDGING_KEYS})
    lower, upper = policy_number(body, "lower", path), policy_number(body, "upper", path)
    if lower is None and upper is None:
        raise PolicyError(f"policy key {path!r}: expected at least one of 'lower', 'upper'; "
                          f"got keys {sorted(body)!r}")
    if lower is not None and upper is not None and lower > upper:
        raise PolicyError(f"policy key {path!r}: expected lower <= upper; got lower={lower!r}, "
                          f"upper={upper!r}")
    return ValueThreshold(metric, lower, upper, policy_severity(body, path), policy_basis(body, path),
                          policy_on_inconclusive(body, path))


def _change_threshold(metric: str, spec: object, path: str) -> ChangeThreshold:
    keys = {"absolute", "relative", "direction", "severity", *JUDGING_KEYS}
    body = policy_mapping(spec, path, keys)
    absolute, relative = policy_number(body, "absolute", path), policy_number(body, "relative", path)
    if absolute is None and relative is None:
        raise PolicyError(f"policy key {path!r}: expected at least one of 'absolute', "
                          f"'relative'; got keys {sorted(body)!r}")
    higher = _higher_is_better(metric)
    if higher is None and "direction" not in body:
        raise PolicyError(f"policy key '{path}.direction': {metric!r} has no better direction "
                          "(a bias can be too high or too low); give 'higher_is_better' or "
                          "'lower_is_better'")
    natural: Direction = "higher_is_better" if higher else "lower_is_better"
    direction = body.get("direction", natural)
    if direction not in ("higher_is_better", "lower_is_better"):
        raise PolicyError(f"policy key '{path}.direction': expected 'higher_is_better' or "
                          f"'lower_is_better'; got {shown(direction)}")
    return ChangeThreshold(metric, absolute, relative, direction, policy_severity(body, path),
                           policy_basis(body, path), policy_on_inconclusive(body, path))


def _fairness(spec: object) -> tuple[tuple[FairnessThreshold, ...],
                                     tuple[tuple[str, tuple[FairnessThreshold, ...]], ...],
                                     tuple[int | None, int | None]]:
    minimums = ("min_positives_per_group", "min_negatives_per_group")
    body = policy_mapping(spec, "fairness", {"default", "features", *minimums})
    default = _fairness_block(body.get("default", {}), "fairness.default")
    features = []
    for feature, block in policy_mapping(body.get("features", {}), "fairness.features", None).items():
        features.append((feature, _fairness_block(block, f"fairness.features.{key_part(feature)}")))
    counts = []
    for key in minimums:
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 0 <= value <= BIGINT_MAX):
            raise PolicyError(f"policy key 'fairness.{key}': expected a whole number from 0 to "
                              f"{BIGINT_MAX:,}; got {shown(value)}")
        counts.append(value)
    return default, tuple(features), (counts[0], counts[1])


def _fairness_block(spec: object, path: str) -> tuple[FairnessThreshold, ...]:
    thresholds = []
    for metric, threshold in policy_mapping(spec, path, None).items():
        where = f"{path}.{key_part(metric)}"
        check_known(_base_name(metric, FAIRNESS_METRICS), _ALL_FAIRNESS, where, other=_ALL_METRICS,
               other_place="metrics")
        body = policy_mapping(threshold, where, {"upper", "severity", *JUDGING_KEYS})
        upper = policy_number(body, "upper", where)
        if upper is None or upper < 0:
            raise PolicyError(f"policy key '{where}.upper': expected a number >= 0; got "
                              f"{shown(body.get('upper'))}")
        thresholds.append(FairnessThreshold(metric, upper, policy_severity(body, where),
                                            policy_basis(body, where), policy_on_inconclusive(body, where)))
    return tuple(thresholds)


def _base_name(metric: str, per_class: tuple[str, ...]) -> str:
    """``recall[cat]`` -> ``recall`` for the metrics that exist per class; else unchanged."""
    base, bracket, rest = metric.partition("[")
    return base if bracket and rest.endswith("]") and len(rest) > 1 and base in per_class else metric


def _higher_is_better(metric: str) -> bool | None:
    base = _base_name(metric, _PER_CLASS)
    if base in HIGHER_IS_BETTER:
        return HIGHER_IS_BETTER[base]
    return _MORE_HIGHER_IS_BETTER.get(base)


def default_policy_path(task: str = "binary_classification") -> Path:
    """The shipped default policy of a task (``default_policy.yaml`` for binary models)."""
    if task not in TASK_METRICS:
        raise PolicyError(f"task: expected one of {list(TASK_METRICS)}; got {task!r}")
    if task == "binary_classification":
        return DEFAULT_POLICY_PATH
    return DEFAULT_POLICY_PATH.with_name(f"default_policy_{task}.yaml")


def check_policy_for_task(policy: Policy, task: str) -> None:
    """Refuse a policy that judges metrics or gaps the task does not report.

    Per-class metrics (``recall[<class>]``, ``tpr_gap[<class>]``) are allowed for multiclass
    models only; the class label itself is checked by the gate (a missing one fails).

    Raises
    ------
    PolicyError
        Naming the metric, the task and the metrics it reports.

    Examples
    --------
    >>> check_policy_for_task(load_policy("metrics: {rmse: {value: {upper: 3}}}"), "regression")
    >>> try:
    ...     check_policy_for_task(default_policy(), "regression")
    ... except PolicyError as exc:
    ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
    policy metric 'roc_auc' is not reported for task regression (it reports rmse, mae, r2,
    mean_error)
    """
    if task not in TASK_METRICS:
        raise PolicyError(f"task: expected one of {list(TASK_METRICS)}; got {task!r}")
    multiclass = task == "multiclass_classification"
    named = [t.metric for t in policy.values] + [t.metric for t in policy.changes]
    for metric in named:
        if metric.endswith("[*]"):
            raise PolicyError(f"policy metric {metric!r}: '[*]' (every class) is for fairness "
                              "gaps only; name the class, e.g. recall[<class>]")
        base = _base_name(metric, _PER_CLASS) if multiclass else metric
        if base not in TASK_METRICS[task] and not (multiclass and base in _PER_CLASS):
            raise PolicyError(f"policy metric {metric!r} is not reported for task {task} (it "
                              f"reports {', '.join(TASK_METRICS[task])}"
                              f"{', recall[<class>], precision[<class>]' if multiclass else ''})")
    if policy.segments is not None:
        _check_segment_metrics(policy.segments, task)
    gaps = [t.metric for t in policy.fairness_default] + [
        t.metric for _, block in policy.fairness_features for t in block]
    for gap in gaps:
        base = _base_name(gap, FAIRNESS_METRICS) if multiclass else gap
        if (multiclass and base == gap) or base not in TASK_FAIRNESS_METRICS[task]:
            per_class = " per class, as <gap>[<class>]" if multiclass else ""
            raise PolicyError(f"policy fairness gap {gap!r} is not reported for task {task} (it "
                              f"reports {', '.join(TASK_FAIRNESS_METRICS[task])}{per_class})")


def _check_segment_metrics(section: SegmentPolicy, task: str) -> None:
    """Refuse a segment threshold on a metric the task's segments do not report."""
    from .segment_policy import SEGMENT_METRICS_BY_TASK, segment_metric_base

    reported = SEGMENT_METRICS_BY_TASK[task]
    multiclass = task == "multiclass_classification"
    for t in section.thresholds:
        base = segment_metric_base(t.metric) if multiclass else t.metric
        if base not in reported or (multiclass and base == t.metric and base in _PER_CLASS):
            names = [f"{m}[<class>]" if multiclass and m in _PER_CLASS else m for m in reported]
            raise PolicyError(f"policy key 'segments.metrics.{t.metric}': not reported for the "
                              f"segments of task {task} (they report {', '.join(names)})")
