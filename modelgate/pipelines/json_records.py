"""JSON forms of results shared by ``modelgate evaluate`` and ``modelgate fairness``.

They sit in the pipelines layer so the in-process evaluation runner (``cli_runs``) and the
CLI commands above it share them without the runner importing the CLI.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or ``None`` when it is missing or not finite (JSON has no NaN).

    Examples
    --------
    >>> finite_or_none(0.5), finite_or_none(float("nan")), finite_or_none(None)
    (0.5, None, None)
    """
    return None if value is None or not math.isfinite(float(value)) else float(value)


def _estimate(e: Any) -> dict[str, Any]:
    out = {"value": finite_or_none(e.value), "ci_lower": finite_or_none(e.ci_lower),
           "ci_upper": finite_or_none(e.ci_upper), "n": e.n}
    if getattr(e, "undefined_reason", None):
        out["undefined_reason"] = e.undefined_reason
    return out


def _rate_groups(table: Any) -> list[dict[str, Any]]:
    num = finite_or_none
    return [{"group": g.group, "n": g.n, "base_rate": num(g.base_rate),
             "selection_rate": num(g.selection_rate), "tpr": num(g.tpr), "fpr": num(g.fpr),
             "ppv": num(g.ppv), "fnr": num(g.fnr), "small_group": g.small_group}
            for g in table.groups]


def _gap(e: Any) -> dict[str, Any]:
    return {**_estimate(e), "highest_group": e.highest_group, "lowest_group": e.lowest_group,
            "excluded_groups": [list(x) for x in e.excluded_groups]}


def fairness_json(reports: Mapping[str, Any]) -> dict[str, Any]:
    """JSON form of fairness reports: per feature, the group table and every gap.

    Binary models: ``groups`` (rates) and ``gaps``. Multiclass models: ``gaps`` named
    ``<gap>[<class>]`` and ``classes``, per class its one-vs-rest ``groups`` (rates).
    Regression models: ``groups`` with ``mae``, ``rmse``, ``mean_prediction`` and
    ``mean_error`` per group, and ``gaps`` (``mae_gap``, ``rmse_gap``, ``mean_prediction_gap``).
    """
    num = finite_or_none
    out: dict[str, Any] = {}
    for feature, rep in reports.items():
        gaps = {name: _gap(e) for name, e in rep.by_name().items()}
        if hasattr(rep, "classes"):  # multiclass, one-vs-rest per class
            out[feature] = {"classes": {c.label: {"groups": _rate_groups(c.report.table)}
                                        for c in rep.classes}, "gaps": gaps}
        elif hasattr(rep, "groups"):  # regression
            out[feature] = {
                "groups": [{"group": g.group, "n": g.n, "mae": num(g.mae), "rmse": num(g.rmse),
                            "mean_prediction": num(g.mean_prediction),
                            "mean_error": num(g.mean_error), "small_group": g.small_group}
                           for g in rep.groups],
                "gaps": gaps}
        else:
            out[feature] = {"groups": _rate_groups(rep.table), "gaps": gaps}
    return out
