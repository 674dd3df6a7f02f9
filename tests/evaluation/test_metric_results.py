"""The binary evaluation's records (``evaluation/metric_results.py``): frozen, slotted dataclasses
whose records and mappings carry the values given, written out by hand here."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from modelgate.evaluation.metric_results import (
    CalibrationBin,
    CalibrationTable,
    ComparisonReport,
    MetricDelta,
    MetricEstimate,
    PairedComparison,
    PerformanceReport,
)

_EST = MetricEstimate("recall", 0.75, 0.5, 0.9, 8)
_DELTA = MetricDelta("recall", 0.75, 0.5, 0.25, -0.1, 0.6, 8)
_BIN = CalibrationBin(0.0, 0.5, 3, 0.25, 1 / 3)
_TABLE = CalibrationTable((_BIN,), "uniform", 1)

# every record type, with the names of its fields in order
RECORDS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "estimate": (_EST, ("name", "value", "ci_lower", "ci_upper", "n", "undefined_reason")),
    "delta": (_DELTA, ("name", "candidate", "champion", "delta", "ci_lower", "ci_upper", "n",
                       "undefined_reason")),
    "bin": (_BIN, ("lower", "upper", "n", "mean_predicted", "observed_rate")),
    "table": (_TABLE, ("bins", "strategy", "n_bins")),
    "performance": (PerformanceReport((_EST,), _TABLE, 8, 0.5, 100, 0.95, 3),
                    ("metrics", "calibration", "n", "threshold", "n_bootstrap",
                     "confidence_level", "seed")),
    "comparison": (ComparisonReport((_DELTA,), 8, 0.5, 100, 0.95, 3),
                   ("deltas", "n", "threshold", "n_bootstrap", "confidence_level", "seed")),
    "paired": (PairedComparison((_DELTA,), 8, 100, 0.95, 3),
               ("deltas", "n", "n_bootstrap", "confidence_level", "seed")),
}


@pytest.mark.parametrize("kind", RECORDS)
def test_every_record_is_a_frozen_slotted_dataclass(kind: str) -> None:
    record, names = RECORDS[kind]
    assert tuple(f.name for f in dataclasses.fields(record)) == names
    for name in names:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, name, 1)
    assert not hasattr(record, "__dict__")
    assert type(record).__slots__ == names


def test_the_undefined_reason_defaults_to_none() -> None:
    assert _EST.undefined_reason is None and _DELTA.undefined_reason is None


def test_records_carry_the_values_given() -> None:
    assert _EST.to_record() == {"metric_name": "recall", "value": 0.75, "ci_lower": 0.5,
                                "ci_upper": 0.9, "n": 8, "undefined_reason": None}
    assert _DELTA.to_record() == {"metric_name": "recall", "value": 0.25, "ci_lower": -0.1,
                                  "ci_upper": 0.6, "n": 8, "undefined_reason": None,
                                  "candidate": 0.75, "champion": 0.5}
    assert _BIN.to_record() == {"bin_lower": 0.0, "bin_upper": 0.5, "n": 3,
                                "mean_predicted": 0.25, "observed_rate": 1 / 3}
    empty = CalibrationBin(0.5, 1.0, 0, math.nan, math.nan).to_record()
    assert empty["mean_predicted"] is None and empty["observed_rate"] is None


@pytest.mark.parametrize("kind", ["performance", "comparison", "paired"])
def test_by_name_is_a_read_only_mapping_of_the_records(kind: str) -> None:
    report = RECORDS[kind][0]
    other = (MetricEstimate("f1", 0.5, 0.4, 0.6, 8) if kind == "performance"
             else MetricDelta("f1", 0.5, 0.5, 0.0, -0.1, 0.1, 8))
    items = report.metrics if kind == "performance" else report.deltas
    report = dataclasses.replace(report, **{"metrics" if kind == "performance" else "deltas":
                                            (*items, other)})
    mapping = report.by_name()
    assert list(mapping) == ["recall", "f1"]
    assert mapping["recall"] is items[0] and mapping["f1"] is other
    with pytest.raises(TypeError):
        mapping["f1"] = other  # type: ignore[index]
