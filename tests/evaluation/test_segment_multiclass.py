"""Multiclass segments' rests read off the totals: equal to evaluating each slice's rows
(:func:`~modelgate.evaluation.multiclass.evaluate_multiclass` with Hall's log-loss interval, the
route before) and to scikit-learn, with absent classes and tied scores."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.segment_intervals import hall_mean_interval
from modelgate.evaluation.segment_rows import evaluate_multiclass_segments
from modelgate.fairness.disaggregate import encode_groups
from sklearn import metrics as skm

from modelgate.intervals import interval_holding

CLASSES = ("a", "b", "c")


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    logits = rng.normal(0.0, 1.0, (n, 3))
    logits[np.arange(n), y] += 1.0
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    proba = np.round(proba, 1)  # many tied scores within each class's column
    proba /= proba.sum(axis=1, keepdims=True)
    region = rng.integers(0, 4, n)
    # segment 3 holds no row of class "c"; every row of class "c" ... in segment 0 of column
    # "site": its rest has no "c" (the macro AUC undefined there)
    region[(region == 3) & (y == 2)] = 1
    site = np.where(y == 2, 0, rng.integers(0, 3, n))
    # the rest of lone=0 has a single row of class "c": its macro AUC is defined, but has no
    # DeLong variance (the percentile interval, by evaluating the rows)
    lone = np.where(y == 2, 0, rng.integers(0, 2, n))
    lone[np.flatnonzero(y == 2)[0]] = 1
    return y, proba, np.column_stack([region, site, lone])


def _by_rows(y: np.ndarray, p: np.ndarray, rows: np.ndarray, n_bootstrap: int) -> dict:
    """Every estimate of the rows evaluated on their own, the log loss with Hall's interval."""
    found = dict(evaluate_multiclass(y[rows], p[rows], classes=CLASSES, n_bootstrap=n_bootstrap,
                                     seed=0).by_name())
    loss = found["log_loss"]
    if n_bootstrap == 0:  # no intervals at all
        return found
    losses = -np.log(np.clip(p[rows, y[rows]], np.finfo(float).eps, 1 - np.finfo(float).eps))
    lower, upper = hall_mean_interval(rows.size, losses.sum(), (losses**2).sum(),
                                      (losses**3).sum(), 0.95)
    lower, upper = interval_holding(loss.value, max(lower, 0.0), upper)
    return {**found, "log_loss": (loss.value, lower, upper)}


def _triple(e: object) -> tuple[float, float, float]:
    return e if isinstance(e, tuple) else (e.value, e.ci_lower, e.ci_upper)  # type: ignore[attr-defined]


@pytest.mark.parametrize("n_bootstrap", [200, 0])
def test_each_segment_and_rest_equal_evaluating_their_rows(n_bootstrap: int) -> None:
    y, proba, codes = _data(1200, 3)
    names = ("region", "site", "lone")
    columns = {name: encode_groups(codes[:, j]) for j, name in enumerate(names)}
    report = evaluate_multiclass_segments(y, proba, classes=CLASSES, columns=columns,
                                          min_rows=30, n_bootstrap=n_bootstrap)
    undefined_rest_auc, percentile_rest_auc = 0, 0
    for seg in report.segments:
        column = codes[:, names.index(seg.columns[0])]
        mask = column.astype(str) == seg.values[0]
        own, rest = (_by_rows(y, proba, np.flatnonzero(m), n_bootstrap) for m in (mask, ~mask))
        for m in seg.metrics:
            want = _triple(own[m.name])
            assert (m.value, m.ci_lower, m.ci_upper) == pytest.approx(want, rel=1e-9, nan_ok=True)
            want = _triple(rest[m.name])
            assert (m.rest_value, m.rest_ci_lower, m.rest_ci_upper) == pytest.approx(
                want, rel=1e-9, nan_ok=True)
        auc = next(m for m in seg.metrics if m.name == "roc_auc_ovr_macro")
        undefined_rest_auc += bool(np.isnan(auc.rest_value))
        percentile_rest_auc += int((y[~mask] == 2).sum()) == 1
        # and scikit-learn on the rest
        rest_y, rest_p = y[~mask], proba[~mask]
        values = {m.name: m.rest_value for m in seg.metrics}
        pred = rest_p.argmax(axis=1)
        assert values["accuracy"] == pytest.approx(skm.accuracy_score(rest_y, pred), abs=1e-12)
        assert values["macro_f1"] == pytest.approx(skm.f1_score(
            rest_y, pred, labels=[0, 1, 2], average="macro", zero_division=np.nan), abs=1e-12)
        assert values["log_loss"] == pytest.approx(skm.log_loss(rest_y, rest_p, labels=[0, 1, 2]),
                                                   rel=1e-12)
        if len(set(rest_y.tolist())) == 3:
            assert values["roc_auc_ovr_macro"] == pytest.approx(
                skm.roc_auc_score(rest_y, rest_p, multi_class="ovr"), abs=1e-12)
    assert undefined_rest_auc == 1  # site=0 holds every row of class "c"
    assert percentile_rest_auc == 1
