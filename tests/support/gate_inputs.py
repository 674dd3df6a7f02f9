"""Hand-made inputs of the promotion gate's tests: a metric estimate, a fairness report on a
four-row table (one positive and one negative per group), and one check picked by its id."""

from __future__ import annotations

import math

from modelgate.evaluation.gate import GateCheck
from modelgate.evaluation.metrics import MetricEstimate
from modelgate.fairness import FairnessEstimate, FairnessReport, disaggregate

NAN = math.nan


def est(name: str, value: float, lo: float = NAN, hi: float = NAN, n: int = 1000,
        reason: str | None = None) -> MetricEstimate:
    return MetricEstimate(name, value, lo, hi, n, reason)


def fair(feature: str, **values: tuple[float, float, float]) -> FairnessReport:
    table = disaggregate([0, 1, 0, 1], [0, 1, 1, 1], ["a", "a", "b", "b"])
    estimates = tuple(FairnessEstimate(name, v, lo, hi, 4, "b", "a", ())
                      for name, (v, lo, hi) in values.items())
    return FairnessReport(feature, table, estimates, 100, 0.95, 0, "exclude", True)


def only(decision_checks: tuple[GateCheck, ...], check_id: str) -> GateCheck:
    (check,) = [c for c in decision_checks if c.check_id == check_id]
    return check
