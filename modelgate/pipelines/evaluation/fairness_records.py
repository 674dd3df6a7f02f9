"""Fairness reports of any task as records: one walk over the reports serves the store's
``fairness_group`` and ``fairness_metric`` rows, the report's sections and the CLI's JSON.

A binary report gives one :class:`FairnessRecords` per sensitive feature, a multiclass report
one per feature and class (one-vs-rest), a regression report one per feature with the group
errors instead of rates. The groups and gaps are the cores' ``to_record()``; only what a core
result does not know (its feature, its class) is added here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FairnessRecords", "driving_text", "fairness_records"]

# Per driving rate: its name in words, and the group record's count that is its denominator.
_DENOMINATOR = {"tpr": ("TPR", "positives"), "fpr": ("FPR", "negatives"),
                "ppv": ("PPV", "predicted_positives"), "selection_rate": ("selection rate", "n")}


@dataclass(frozen=True, slots=True)
class FairnessRecords:
    """One sensitive feature's groups and gaps (a multiclass model's: one class's, one-vs-rest).

    Attributes
    ----------
    sensitive_feature : str
    class_label : str
        The class a one-vs-rest section is about; ``''`` for binary and regression models
        (as stored in ``fairness_group.class_label``).
    one_vs_rest : bool
        True for a multiclass model's sections.
    rate_groups : tuple of dict
        Classifiers: ``GroupStats.to_record()`` per group (rates with their modified Wilson intervals
        at the report's confidence level).
    error_groups : tuple of dict
        Regression models: ``RegressionGroup.to_record()`` per group.
    gaps : tuple of dict
        ``FairnessEstimate.to_record()`` per gap, its ``metric_name`` as the gate names it
        (``<gap>[<class>]`` one-vs-rest).
    """

    sensitive_feature: str
    class_label: str
    one_vs_rest: bool
    rate_groups: tuple[dict[str, Any], ...]
    error_groups: tuple[dict[str, Any], ...]
    gaps: tuple[dict[str, Any], ...]

    def group_rows(self) -> list[dict[str, Any]]:
        """``fairness_group`` records: each group with its feature and class."""
        return [{"sensitive_feature": self.sensitive_feature, "class_label": self.class_label, **g}
                for g in (*self.rate_groups, *self.error_groups)]

    def gap_rows(self) -> list[dict[str, Any]]:
        """``fairness_metric`` records: each gap with its feature."""
        return [{"sensitive_feature": self.sensitive_feature, **gap} for gap in self.gaps]


def fairness_records(reports: Mapping[str, Any]) -> list[FairnessRecords]:
    """The records of fairness reports of any task, in report order (feature, then class).

    Parameters
    ----------
    reports : mapping of str to report
        Per sensitive feature a ``FairnessReport`` (binary), ``MulticlassFairnessReport`` or
        ``RegressionFairnessReport``.

    Returns
    -------
    list of FairnessRecords

    Examples
    --------
    >>> from modelgate.fairness.metrics import fairness_report
    >>> report = fairness_report([1, 0, 1, 0], [1, 0, 0, 0], ["a", "a", "b", "b"],
    ...                          sensitive_feature="g", min_group_size=1, n_bootstrap=0)
    >>> (section,) = fairness_records({"g": report})
    >>> [(g["group_label"], g["tpr"]) for g in section.rate_groups]
    [('a', 1.0), ('b', 0.0)]
    >>> section.gap_rows()[0]["sensitive_feature"], section.gap_rows()[0]["metric_name"]
    ('g', 'equalized_odds_difference')
    """
    sections: list[FairnessRecords] = []
    for feature, report in reports.items():
        if hasattr(report, "classes"):  # multiclass: one-vs-rest per class
            sections += [FairnessRecords(
                feature, c.label, True,
                tuple(g.to_record(c.report.confidence_level) for g in c.report.table.groups), (),
                tuple({**e.to_record(), "metric_name": f"{e.name}[{c.label}]"}
                      for e in c.report.estimates))
                for c in report.classes]
        elif hasattr(report, "groups"):  # regression: group errors
            sections.append(FairnessRecords(
                feature, "", False, (), tuple(g.to_record() for g in report.groups),
                tuple(e.to_record() for e in report.estimates)))
        else:
            sections.append(FairnessRecords(
                feature, "", False,
                tuple(g.to_record(report.confidence_level) for g in report.table.groups), (),
                tuple(e.to_record() for e in report.estimates)))
    return sections


def driving_text(gap: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> str:
    """What drives a gap, in words: its rate in the highest and the lowest group, each with the
    rows behind it (``''`` when the gap names no groups).

    Parameters
    ----------
    gap : mapping
        A gap record (``FairnessEstimate.to_record()``).
    groups : sequence of mapping
        The group records of the same section (``GroupStats.to_record()``).

    Examples
    --------
    >>> groups = [{"group_label": "a", "fpr": 0.1, "negatives": 2000},
    ...           {"group_label": "b", "fpr": 0.3, "negatives": 20}]
    >>> driving_text({"driving_rate": "fpr", "highest_group": "b", "lowest_group": "a"}, groups)
    'FPR 0.300 in b (of 20 negatives) vs 0.100 in a (of 2,000 negatives)'
    >>> driving_text({"driving_rate": None, "highest_group": "b", "lowest_group": "a"}, [])
    'b vs a'
    """
    high, low, rate = gap.get("highest_group"), gap.get("lowest_group"), gap.get("driving_rate")
    if high is None or low is None:
        return ""
    by_label = {g["group_label"]: g for g in groups}
    if rate not in _DENOMINATOR or high not in by_label or low not in by_label:
        return f"{high} vs {low}"
    name, count = _DENOMINATOR[rate]
    noun = "rows" if count == "n" else count.replace("_", " ")

    def part(label: str) -> str:
        g = by_label[label]
        return f"{g[rate]:.3f} in {label} (of {g[count]:,} {noun})"

    return f"{name} {part(high)} vs {part(low)}"
