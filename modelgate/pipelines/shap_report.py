"""The evaluation report's SHAP summaries: computed in the explain step, shown by the report step.

The summaries describe the rows explained for the global importance (the same seeded sample):
the beeswarm data (:func:`modelgate.reports.shap_summary.shap_summary`) and, per sensitive
feature, mean SHAP and mean ``|SHAP|`` per group
(:func:`modelgate.reports.shap_summary.shap_by_group`). The group of each row is read from the
scores file, which keeps every sensitive column whether or not the model reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.reports.shap_summary import GroupShap, ShapSummary, shap_by_group, shap_summary
from modelgate.reports.summary_views import GroupShapSection, ShapSwarmRow


@dataclass(frozen=True, slots=True)
class ShapSummaries:
    """What the explain step keeps for the report's SHAP summary and group sections."""

    summary: ShapSummary
    groups: tuple[GroupShap, ...]


def summarise(explanation: Any, groups: dict[str, Sequence[Any]]) -> ShapSummaries:
    """Summaries of an Explanation; ``groups`` maps each sensitive feature to its value on
    every explained row, in row order."""
    return ShapSummaries(
        shap_summary(explanation.values, explanation.feature_values, explanation.features),
        tuple(shap_by_group(explanation.values, explanation.features, list(values),
                            sensitive_feature=name) for name, values in groups.items()))


def multiclass_titles(titles: Sequence[str], predicted: Sequence[Any], *,
                      space: str = "probability") -> list[str]:
    """Waterfall titles that name the class each row's SHAP values explain (its probability,
    or with ``space="margin"`` its raw score before the softmax: a tree ensemble's values).

    >>> multiclass_titles(["row 3: random"], ["setosa"])
    ['row 3: random; explains P(class setosa)']
    >>> multiclass_titles(["row 3: random"], ["setosa"], space="margin")
    ['row 3: random; explains the score (margin) of class setosa']
    """
    what = "the score (margin) of class {}" if space == "margin" else "P(class {})"
    return [f"{title}; explains {what.format(cls)}" for title, cls in zip(titles, predicted, strict=True)]


def _plain(values: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def report_views(summaries: ShapSummaries | None) -> dict[str, Any]:
    """The report view's ``shap_summary`` and ``shap_groups`` fields (empty without summaries,
    e.g. for an explain result pickled before they existed)."""
    if summaries is None:
        return {"shap_summary": (), "shap_groups": ()}
    s = summaries.summary
    rows = tuple(ShapSwarmRow(f, _plain(s.values[:, j]), _plain(s.colours[:, j]), float(s.mean_abs[j]),
                              float(s.value_correlation[j])) for j, f in enumerate(s.features))
    sections = tuple(GroupShapSection(g.sensitive_feature, g.groups, tuple(int(c) for c in g.counts),
                                      g.features, tuple(_plain(g.mean[:, j]) for j in range(len(g.features))),
                                      tuple(_plain(g.mean_abs[:, j]) for j in range(len(g.features))),
                                      _plain(g.spread)) for g in summaries.groups)
    return {"shap_summary": rows, "shap_groups": sections}
