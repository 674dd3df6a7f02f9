"""The evaluation report's SHAP summaries: computed in the explain step, shown by the report step.

The summaries describe the rows explained for the global importance (the same seeded sample):
the beeswarm data (:func:`modelgate.reports.shap_summaries.shap_summary`) and, per sensitive
feature, mean SHAP and mean ``|SHAP|`` per group
(:func:`modelgate.reports.shap_summaries.shap_by_group`). The group of each row is read from the
scores file, which keeps every sensitive column whether or not the model reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from modelgate.reports import (
    GroupShap,
    GroupShapSection,
    ShapClassSection,
    ShapSummary,
    ShapSwarmRow,
    shap_by_group,
    shap_summary,
)

#: Multiclass: summaries of at most this many classes, those with the most explained rows.
MAX_CLASS_SUMMARIES = 3


@dataclass(frozen=True, slots=True)
class ShapSummaries:
    """What the explain step keeps for the report's SHAP summary and group sections; for a
    multiclass model also ``(class, rows, summary)`` per explained class, most rows first."""

    summary: ShapSummary
    groups: tuple[GroupShap, ...]
    by_class: tuple[tuple[str, int, ShapSummary], ...] = ()


def summarise(explanation: Any, groups: dict[str, Sequence[Any]], *,
              explained_class: Sequence[Any] | None = None) -> ShapSummaries:
    """Summaries of an Explanation; ``groups`` maps each sensitive feature to its value on
    every explained row, in row order. ``explained_class`` (multiclass) names the class whose
    probability each row's SHAP values explain: rows of different classes explain different
    outputs, so they are summarised apart (:func:`class_summaries`), never pooled."""
    return ShapSummaries(
        shap_summary(explanation.values, explanation.feature_values, explanation.features),
        tuple(shap_by_group(explanation.values, explanation.features, list(values),
                            sensitive_feature=name) for name, values in groups.items()),
        () if explained_class is None else class_summaries(explanation, explained_class))


def class_summaries(explanation: Any, explained_class: Sequence[Any], *,
                    limit: int = MAX_CLASS_SUMMARIES) -> tuple[tuple[str, int, ShapSummary], ...]:
    """One beeswarm summary per explained class, for the ``limit`` classes with the most rows
    (ties by class name), each over that class's rows only.

    >>> import types, numpy as np
    >>> e = types.SimpleNamespace(values=np.array([[1.0], [2.0], [3.0]]),
    ...                           feature_values=np.array([[1.0], [2.0], [3.0]], dtype=object),
    ...                           features=("x",))
    >>> [(c, n, s.mean_abs.tolist()) for c, n, s in class_summaries(e, ["b", "a", "b"])]
    [('b', 2, [2.0]), ('a', 1, [2.0])]
    """

    names = [str(c) for c in explained_class]
    if len(names) != len(explanation.values):
        raise ValueError(f"explained_class must name one class per explained row "
                         f"({len(explanation.values)}), got {len(names)}")
    counts = {c: names.count(c) for c in dict.fromkeys(names)}
    top = sorted(counts, key=lambda c: (-counts[c], c))[:limit]
    labels = np.asarray(names, dtype=object)
    return tuple((c, counts[c], shap_summary(explanation.values[labels == c],
                                             explanation.feature_values[labels == c],
                                             explanation.features)) for c in top)


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
        return {"shap_summary": (), "shap_groups": (), "shap_classes": ()}
    rows = _swarm_rows(summaries.summary)
    classes = tuple(ShapClassSection(name, n, _swarm_rows(s))
                    for name, n, s in getattr(summaries, "by_class", ()))  # older pickles: none
    sections = tuple(GroupShapSection(g.sensitive_feature, g.groups, tuple(int(c) for c in g.counts),
                                      g.features, tuple(_plain(g.mean[:, j]) for j in range(len(g.features))),
                                      tuple(_plain(g.mean_abs[:, j]) for j in range(len(g.features))),
                                      _plain(g.spread)) for g in summaries.groups)
    return {"shap_summary": rows, "shap_groups": sections, "shap_classes": classes}


def _swarm_rows(s: ShapSummary) -> tuple[ShapSwarmRow, ...]:
    return tuple(ShapSwarmRow(f, _plain(s.values[:, j]), _plain(s.colours[:, j]), float(s.mean_abs[j]),
                              float(s.value_correlation[j])) for j, f in enumerate(s.features))
