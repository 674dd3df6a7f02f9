"""Issue #42 item 1: a multiclass fairness report from one pass over the rows is each class's
binary one-vs-rest report (:func:`fairness_report` on ``y == k``, ``predicted == k``), whose
gaps are checked against fairlearn elsewhere (``tests/fairness``)."""

from __future__ import annotations

import numpy as np
from modelgate.fairness.metrics import fairness_report
from modelgate.fairness.multiclass import multiclass_fairness_report


def test_each_class_is_its_binary_one_vs_rest_report() -> None:
    rng = np.random.default_rng(42)
    y = rng.integers(0, 4, size=900)
    pred = np.where(rng.random(900) < 0.6, y, rng.integers(0, 4, size=900))
    groups = rng.choice(np.array(["a", "b", "c", None], dtype=object), size=900,
                        p=[0.5, 0.3, 0.17, 0.03])
    report = multiclass_fairness_report(y, pred, groups, classes=list("wxyz"),
                                        sensitive_feature="g", min_group_size=40, seed=3)
    for k, one in enumerate(report.classes):
        want = fairness_report((y == k).astype(np.int8), (pred == k).astype(np.int8), groups,
                               sensitive_feature="g", min_group_size=40, seed=3)
        assert one.label == "wxyz"[k]
        assert one.report == want
