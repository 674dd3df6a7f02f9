"""Multiclass fairness, one-vs-rest: the binary gaps of each class against all the others.

For each class ``k`` the labels become ``y == k`` and the predictions ``predicted == k``,
and :func:`modelgate.fairness.metrics.fairness_report` gives that class's group table
(selection rate = share of the group predicted ``k``, TPR = recall of ``k`` in the group,
FPR = share of the group's other rows predicted ``k``) and gaps with intervals. The
gate names a class's gap ``<metric>[<class>]`` (``tpr_gap[cat]``). Stated one-vs-rest
because a multiclass model has no single "positive" decision to compare groups on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from .disaggregate import encode_groups, table_from_counts
from .metrics import (
    FairnessEstimate,
    FairnessReport,
    UndefinedRates,
    fairness_report_from_table,
)

__all__ = ["ClassFairness", "MulticlassFairnessReport", "multiclass_fairness_report"]


@dataclass(frozen=True, slots=True)
class ClassFairness:
    """The one-vs-rest fairness report of one class."""

    label: str
    report: FairnessReport


@dataclass(frozen=True, slots=True)
class MulticlassFairnessReport:
    """Per-class one-vs-rest fairness of one sensitive feature."""

    sensitive_feature: str
    classes: tuple[ClassFairness, ...]

    def by_name(self) -> Mapping[str, FairnessEstimate]:
        """Read-only mapping ``"<gap>[<class>]"`` -> estimate (the gate's input)."""
        return MappingProxyType({f"{e.name}[{c.label}]": e
                                 for c in self.classes for e in c.report.estimates})


def multiclass_fairness_report(
    y_true: npt.ArrayLike,
    predicted: npt.ArrayLike,
    sensitive: npt.ArrayLike,
    *,
    classes: Sequence[object],
    sensitive_feature: str,
    min_group_size: int = 30,
    include_small_groups: bool = True,
    undefined_rates: UndefinedRates = "exclude",
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> MulticlassFairnessReport:
    """One-vs-rest fairness of each class.

    Parameters
    ----------
    y_true, predicted : array_like of int, shape (n,)
        True and predicted class indices ``0 .. len(classes) - 1``.
    sensitive : array_like, shape (n,)
        Values of the sensitive feature.
    classes : sequence
        Class labels, in index order (used in names).
    sensitive_feature, min_group_size, include_small_groups, undefined_rates, n_bootstrap, \
confidence_level, seed
        As for :func:`~modelgate.fairness.metrics.fairness_report` (same seed per class).

    Returns
    -------
    MulticlassFairnessReport

    Raises
    ------
    ValueError
        Class indices out of range, two classes with one label, or what ``fairness_report``
        refuses.

    Examples
    --------
    >>> r = multiclass_fairness_report([0, 1, 2, 0, 1, 2], [0, 1, 1, 0, 1, 2],
    ...     ["a", "a", "a", "b", "b", "b"], classes=["x", "y", "z"],
    ...     sensitive_feature="g", n_bootstrap=0)
    >>> r.by_name()["tpr_gap[z]"].value, r.by_name()["tpr_gap[x]"].value
    (1.0, 0.0)
    """
    y, pred = np.asarray(y_true), np.asarray(predicted)
    labels = [str(c) for c in classes]
    if len(set(labels)) != len(labels):  # by_name keys the gaps by label
        raise ValueError(f"classes must have distinct labels; got {labels!r}")
    for name, values in (("y_true", y), ("predicted", pred)):
        if values.dtype.kind not in "iu" or (values.size and (
                values.min() < 0 or values.max() >= len(labels))):
            raise ValueError(f"{name} must hold class indices 0..{len(labels) - 1}")
    if y.ndim != 1 or y.size == 0 or pred.shape != y.shape:
        raise ValueError(f"y_true and predicted must be non-empty one-dimensional arrays of one "
                         f"length; got shapes {y.shape!r} and {pred.shape!r}")
    groups, codes = encode_groups(sensitive)
    if codes.shape != y.shape:
        raise ValueError(f"sensitive must have the length of y_true ({y.size}); got {codes.size}")
    per_class = tuple(
        ClassFairness(label, fairness_report_from_table(
            table_from_counts(groups, counts, min_group_size=min_group_size),
            sensitive_feature=sensitive_feature, include_small_groups=include_small_groups,
            undefined_rates=undefined_rates, n_bootstrap=n_bootstrap,
            confidence_level=confidence_level, seed=seed))
        for label, counts in zip(labels, _one_vs_rest_counts(y, pred, codes, len(groups),
                                                            len(labels)), strict=True))
    return MulticlassFairnessReport(sensitive_feature, per_class)


def _one_vs_rest_counts(y: npt.NDArray[np.integer], pred: npt.NDArray[np.integer],
                        codes: npt.NDArray[np.intp], n_groups: int, n_classes: int
                        ) -> npt.NDArray[np.int64]:
    """Each class's one-vs-rest ``(groups, 4)`` counts ``tn, fp, fn, tp``: ``(classes, groups,
    4)``, from one pass over the rows (the groups encoded once, not once a class).

    Examples
    --------
    >>> _one_vs_rest_counts(np.array([0, 1, 1]), np.array([0, 0, 1]), np.array([0, 0, 1]),
    ...                     2, 2).tolist()
    [[[0, 1, 0, 1], [1, 0, 0, 0]], [[1, 0, 1, 0], [0, 0, 0, 1]]]
    """
    cells = n_groups * n_classes
    rows = np.bincount(codes, minlength=n_groups)[:, None]
    support = np.bincount(codes * n_classes + y, minlength=cells).reshape(n_groups, n_classes)
    called = np.bincount(codes * n_classes + pred, minlength=cells).reshape(n_groups, n_classes)
    hit = pred == y
    tp = np.bincount(codes[hit] * n_classes + y[hit], minlength=cells).reshape(n_groups, n_classes)
    fn, fp = support - tp, called - tp
    counts = np.stack([rows - support - fp, fp, fn, tp], axis=-1)  # (groups, classes, 4)
    return counts.transpose(1, 0, 2).astype(np.int64)
