"""JSON forms of results shared by ``modelgate evaluate``, ``modelgate fairness`` and
``modelgate drift``, built from the results' records (``to_record()``).

The JSON keeps its documented names where they differ from the stored columns (``metric``
for ``metric_name``, ``group`` for ``group_label``, ``delta`` for a delta's ``value``...):
each form below lists its keys and the record key each is read from.

Only the CLI prints them (the pipelines store records, not this JSON), so they sit at the edge,
shared by the in-process evaluation runner (``modelgate.cli.runs``) and the other commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from modelgate.pipelines.evaluation.fairness_records import fairness_records

__all__ = ["change_points_json", "deltas_json", "fairness_json", "feature_drift_json", "gate_json",
           "metrics_json"]

Record = Mapping[str, Any]


def _as_json(record: Record, keys: Sequence[str], renamed: Mapping[str, str] | None = None
             ) -> dict[str, Any]:
    """``keys`` of the JSON object, each read from the record (``renamed``: JSON key -> record key).

    >>> _as_json({"metric_name": "auc", "value": 0.9}, ("metric", "value"), {"metric": "metric_name"})
    {'metric': 'auc', 'value': 0.9}
    """
    renamed = renamed or {}
    return {key: record[renamed.get(key, key)] for key in keys}


_METRIC = ("value", "ci_lower", "ci_upper", "n", "undefined_reason")
_DELTA = ("candidate", "champion", "delta", "ci_lower", "ci_upper")
_CHECK = ("check_id", "kind", "metric", "sensitive_feature", "threshold", "observed", "ci_lower",
          "ci_upper", "n", "verdict", "severity", "reason", "basis", "on_inconclusive", "effect",
          "min_group_positives", "min_group_negatives", "required_positives", "required_negatives",
          "rows_to_decide", "group_positives_to_decide", "group_negatives_to_decide",
          "rows_to_decide_if_equal", "group_positives_to_decide_if_equal",
          "group_negatives_to_decide_if_equal")
_RATE_GROUP = ("group", "n", "base_rate", "selection_rate", "tpr", "fpr", "ppv", "fnr", "small_group",
               "positives", "negatives", "predicted_positives", "accuracy", "roc_auc",
               "roc_auc_error_bound", "tpr_ci_lower", "tpr_ci_upper", "fpr_ci_lower", "fpr_ci_upper",
               "selection_rate_ci_lower", "selection_rate_ci_upper", "ppv_ci_lower", "ppv_ci_upper")
_ERROR_GROUP = ("group", "n", "mae", "rmse", "mean_prediction", "mean_error", "small_group")
_GROUP_NAMES = {"group": "group_label", "small_group": "is_small_group"}
_GAP = ("value", "ci_lower", "ci_upper", "n", "undefined_reason", "highest_group", "lowest_group",
        "excluded_groups", "driving_rate")
_FEATURE = ("feature", "kind", "wasserstein", "wasserstein_normalised", "js_divergence_base2",
            "statistic", "score", "baseline", "threshold", "verdict", "n_reference", "n_current",
            "n_missing_current", "unseen_categories")


def metrics_json(records: Iterable[Record]) -> dict[str, Any]:
    """``metrics``: per metric name (``MetricEstimate.to_record()``), its value, interval, rows
    and why it is undefined (``None`` when defined)."""
    return {r["metric_name"]: _as_json(r, _METRIC) for r in records}


def deltas_json(records: Iterable[Record]) -> dict[str, Any]:
    """``champion_deltas``: per metric name (``MetricDelta.to_record()``), both point values, the
    paired delta and its interval."""
    return {r["metric_name"]: _as_json(r, _DELTA, {"delta": "value"}) for r in records}


def gate_json(decision: Record, checks: Iterable[Record]) -> dict[str, Any]:
    """``gate``: ``passed``, ``summary`` (``GateDecision.to_record()``) and every check
    (``GateCheck.to_record()``, its ``threshold`` in words)."""
    names = {"metric": "metric_name", "threshold": "threshold_text"}
    return {"passed": decision["passed"], "summary": decision["summary"],
            "checks": [_as_json(c, _CHECK, names) for c in checks]}


def _gap(record: Record) -> dict[str, Any]:
    gap = _as_json(record, _GAP)
    if not gap["undefined_reason"]:  # only an undefined gap says why
        del gap["undefined_reason"]
    return gap


def fairness_json(reports: Mapping[str, Any]) -> dict[str, Any]:
    """JSON form of fairness reports: per feature, the group table and every gap.

    Binary models: ``groups`` (rates with the counts behind them, ``positives``, ``negatives``
    and ``predicted_positives``, and ``accuracy``, ``roc_auc``, ``roc_auc_error_bound``, then
    the Wilson interval of each rate, ``tpr_ci_lower``/``tpr_ci_upper`` and likewise for
    ``fpr``, ``selection_rate`` and ``ppv``) and
    ``gaps`` (each with its ``driving_rate`` between ``highest_group`` and ``lowest_group``).
    Multiclass models: ``gaps`` named
    ``<gap>[<class>]`` and ``classes``, per class its one-vs-rest ``groups`` (rates).
    Regression models: ``groups`` with ``mae``, ``rmse``, ``mean_prediction`` and
    ``mean_error`` per group, and ``gaps`` (``mae_gap``, ``rmse_gap``, ``mean_prediction_gap``).
    """
    out: dict[str, Any] = {}
    for section in fairness_records(reports):
        feature = out.setdefault(section.sensitive_feature, {"gaps": {}})
        feature["gaps"].update({g["metric_name"]: _gap(g) for g in section.gaps})
        groups = ([_as_json(g, _RATE_GROUP, _GROUP_NAMES) for g in section.rate_groups]
                  + [_as_json(g, _ERROR_GROUP, _GROUP_NAMES) for g in section.error_groups])
        if section.one_vs_rest:
            feature.setdefault("classes", {})[section.class_label] = {"groups": groups}
        else:
            feature["groups"] = groups
    return out


def feature_drift_json(record: Record) -> dict[str, Any]:
    """One feature of ``modelgate drift``'s ``features`` (``FeatureDrift.to_record()``)."""
    return _as_json(record, _FEATURE, {"statistic": "statistic_name", "score": "statistic_value"})


def change_points_json(records: Iterable[Record]) -> list[dict[str, Any]]:
    """``adwin.changes`` of ``modelgate drift``: each ``ChangePoint.to_record()``'s position and
    error rates before and after."""
    return [_as_json(r, ("position", "error_rate_before", "error_rate_after"),
                     {"position": "stream_position"}) for r in records]
