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


def fairness_json(reports: Mapping[str, Any]) -> dict[str, Any]:
    """JSON form of fairness reports: per feature, the group table and every gap."""
    num = finite_or_none
    out = {}
    for feature, rep in reports.items():
        out[feature] = {
            "groups": [{"group": g.group, "n": g.n, "base_rate": num(g.base_rate),
                        "selection_rate": num(g.selection_rate), "tpr": num(g.tpr),
                        "fpr": num(g.fpr), "ppv": num(g.ppv), "fnr": num(g.fnr),
                        "small_group": g.small_group} for g in rep.table.groups],
            "gaps": {e.name: {**_estimate(e), "highest_group": e.highest_group,
                              "lowest_group": e.lowest_group,
                              "excluded_groups": [list(x) for x in e.excluded_groups]}
                     for e in rep.estimates},
        }
    return out
