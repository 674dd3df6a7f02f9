"""Segments of multiclass and regression models: each slice against scikit-learn, q-values
against statsmodels, the regression intervals against normal theory, and the gate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.evaluation import load_policy
from modelgate.evaluation.policy import PolicyError, check_policy_for_task
from modelgate.evaluation.segment_gate import segment_checks
from modelgate.evaluation.segment_regression import regression_estimates
from modelgate.evaluation.segment_rows import evaluate_multiclass_segments, evaluate_regression_segments
from modelgate.fairness.disaggregate import encode_groups
from scipy.stats import norm
from sklearn import metrics as skm

CLASSES = ("a", "b", "c")


def _columns(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    region = np.array(["north", "south", "east"], dtype=object)[rng.integers(0, 3, n)]
    region[rng.random(n) < 0.05] = None  # missing values are a segment of their own
    return region, rng.integers(0, 2, n)


def _masks(region: np.ndarray, device: np.ndarray) -> dict:
    text = np.array(["__missing__" if r is None else r for r in region])
    return {("region",): lambda v: text == v[0],
            ("device",): lambda v: device.astype(str) == v[0],
            ("region", "device"): lambda v: (text == v[0]) & (device.astype(str) == v[1])}


def _multiclass(n: int = 900, seed: int = 5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    logits = rng.normal(0.0, 1.0, (n, 3))
    logits[np.arange(n), y] += 1.2
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return y, proba, *_columns(n, rng)


def _sklearn_multiclass(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    labels = [0, 1, 2]
    pred = p.argmax(axis=1)
    out = {"accuracy": skm.accuracy_score(y, pred),
           "macro_f1": skm.f1_score(y, pred, labels=labels, average="macro", zero_division=np.nan),
           "weighted_f1": skm.f1_score(y, pred, labels=labels, average="weighted",
                                       zero_division=np.nan),
           "log_loss": skm.log_loss(y, p, labels=labels)}
    if len(set(y.tolist())) == 3:
        out["roc_auc_ovr_macro"] = skm.roc_auc_score(y, p, multi_class="ovr", labels=labels)
    recall = skm.recall_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    precision = skm.precision_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    for k, name in enumerate(CLASSES):
        out[f"recall[{name}]"], out[f"precision[{name}]"] = recall[k], precision[k]
    return out


def _check_slices(report, masks, oracle) -> int:
    seen = 0
    for seg in report.segments:
        mask = masks[seg.columns](seg.values)
        assert seg.n == mask.sum() and seg.n_pos is None
        own, rest = oracle(mask), oracle(~mask)
        for m in seg.metrics:
            if m.name in own and math.isfinite(own[m.name]):
                assert m.value == pytest.approx(own[m.name], rel=1e-9, abs=1e-12), (seg.name, m.name)
            if seg.judged and m.undefined_reason is None:
                assert m.rest_value == pytest.approx(rest[m.name], rel=1e-9, abs=1e-12)
                assert m.difference == pytest.approx(own[m.name] - rest[m.name], abs=1e-12)
                assert m.ci_lower <= m.value <= m.ci_upper
                assert m.rest_ci_lower <= m.rest_value <= m.rest_ci_upper
                assert m.difference_ci_lower <= m.difference <= m.difference_ci_upper
                assert 0.0 <= m.p_value <= m.q_value <= 1.0
                seen += 1
    return seen


def test_multiclass_segments_equal_sklearn_on_each_slice_and_rest() -> None:
    y, proba, region, device = _multiclass()
    columns = {"region": encode_groups(region), "device": encode_groups(device)}
    # pairs go through the same code as columns: the regression test covers them
    report = evaluate_multiclass_segments(y, proba, classes=CLASSES, columns=columns,
                                          min_rows=60, n_bootstrap=50)
    names = [m.name for m in report.segments[0].metrics]
    assert names[:5] == ["accuracy", "macro_f1", "weighted_f1", "roc_auc_ovr_macro", "log_loss"]
    assert {"recall[b]", "precision[c]"} <= set(names)
    assert [s.values for s in report.segments[:4]] == [("east",), ("north",), ("south",),
                                                      ("__missing__",)]
    assert not report.segments[3].judged  # about 45 rows, below 60
    masks = _masks(region, device)
    seen = _check_slices(report, masks, lambda mask: _sklearn_multiclass(y[mask], proba[mask]))
    assert seen == report.family_size > 50
    # the log loss's skew-corrected interval is about the Wald one, mean -/+ z sd / sqrt(n)
    losses = -np.log(proba[np.arange(y.size), y])
    for seg in report.segments:
        rows = losses[masks[seg.columns](seg.values)]
        m = next(x for x in seg.metrics if x.name == "log_loss")
        wald = 2 * norm.ppf(0.975) * rows.std(ddof=1) / math.sqrt(rows.size)
        assert m.ci_upper - m.ci_lower == pytest.approx(wald, rel=0.1)


def test_regression_segments_equal_sklearn_on_each_slice_and_rest() -> None:
    rng = np.random.default_rng(7)
    n = 800
    y = rng.normal(3.0, 2.0, n)
    pred = y + rng.standard_t(5, n)
    region, device = _columns(n, rng)
    report = evaluate_regression_segments(y, pred, columns={"region": encode_groups(region),
                                                            "device": encode_groups(device)},
                                          pairs=[("region", "device")], min_rows=50)

    def oracle(mask: np.ndarray) -> dict[str, float]:
        return {"rmse": math.sqrt(skm.mean_squared_error(y[mask], pred[mask])),
                "mae": skm.mean_absolute_error(y[mask], pred[mask]),
                "r2": skm.r2_score(y[mask], pred[mask])}

    assert [m.name for m in report.segments[0].metrics] == ["rmse", "mae", "r2"]
    assert [m.higher_is_better for m in report.segments[0].metrics] == [False, False, True]
    assert _check_slices(report, _masks(region, device), oracle) == report.family_size > 30


@pytest.mark.parametrize(("correction", "method"), [("bh", "fdr_bh"), ("by", "fdr_by"),
                                                     ("holm", "holm")], ids=["bh", "by", "holm"])
def test_q_values_equal_statsmodels(correction: str, method: str) -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(11)
    n = 1500
    y = rng.normal(size=n)
    group = rng.integers(0, 12, n)
    pred = y + rng.normal(size=n) * np.where(group == 3, 1.6, 1.0)  # one worse slice
    report = evaluate_regression_segments(y, pred, columns={"g": encode_groups(group)},
                                          correction=correction)
    p = np.array([m.p_value for s in report.segments for m in s.metrics])
    q = np.array([m.q_value for s in report.segments for m in s.metrics])
    assert report.family_size == p.size == 36
    np.testing.assert_allclose(q, multipletests(p, method=method)[1], rtol=1e-12)
    worst = min((m.q_value, s.name, m.name) for s in report.segments for m in s.metrics)
    assert worst[1:] == ("g=3", "rmse") and worst[0] < 0.05


def test_regression_intervals_match_normal_theory_at_large_n() -> None:
    # y ~ N(0, 1), prediction = y + e with e ~ N(0, s^2) independent of y: se(log mse) =
    # sqrt(2 / n); se(mae) = s sqrt(1 - 2 / pi) / sqrt(n); log(1 - r2) = log mse - log var(y)
    # has se sqrt(4 / n) (two independent chi-square terms)
    rng = np.random.default_rng(2)
    n, s = 40_000, 0.5
    y = rng.normal(size=n)
    e = regression_estimates(y, y + rng.normal(0.0, s, n))
    z = norm.ppf(0.975)
    rmse = e["rmse"]
    assert math.log(rmse.ci_upper / rmse.ci_lower) == pytest.approx(2 * z * math.sqrt(2 / n) / 2, rel=0.03)
    assert e["mae"].ci_upper - e["mae"].ci_lower == pytest.approx(
        2 * z * s * math.sqrt(1 - 2 / math.pi) / math.sqrt(n), rel=0.03)
    r2 = e["r2"]
    width = math.log((1 - r2.ci_lower) / (1 - r2.ci_upper))
    assert width == pytest.approx(2 * z * math.sqrt(4 / n), rel=0.03)


def test_regression_estimates_edge_cases() -> None:
    const = regression_estimates(np.full(5, 2.0), np.array([1.0, 2.0, 3.0, 2.0, 2.0]))
    assert math.isnan(const["r2"].value) and const["r2"].undefined_reason == "y_true is constant"
    exact = regression_estimates(np.arange(5.0), np.arange(5.0))
    assert (exact["rmse"].ci_lower, exact["rmse"].ci_upper) == (0.0, 0.0)
    assert (exact["r2"].value, exact["r2"].ci_lower, exact["r2"].ci_upper) == (1.0, 1.0, 1.0)
    none = regression_estimates(np.arange(5.0), np.arange(5.0) + 1, intervals=False)
    assert none["mae"].value == 1.0 and math.isnan(none["mae"].ci_lower)


POLICY = """
segments:
  columns: [region]
  min_rows: 60
  metrics:
    {metric}: {{margin: 0.02}}
"""


def test_gate_names_the_weak_multiclass_slice() -> None:
    y, proba, region, _ = _multiclass(n=1200, seed=8)
    weak = region == "south"
    rng = np.random.default_rng(0)
    proba[weak] = rng.dirichlet([1, 1, 1], int(weak.sum()))  # no skill on the south
    policy = load_policy(POLICY.format(metric="macro_f1"))
    check_policy_for_task(policy, "multiclass_classification")
    report = evaluate_multiclass_segments(y, proba, classes=CLASSES,
                                          columns={"region": encode_groups(region)},
                                          min_rows=60, n_bootstrap=200)
    (check,) = segment_checks(policy.segments, report)
    assert check.check_id == "segment:macro_f1:margin" and check.verdict == "breach"
    assert "segment region=south breaches" in check.reason
    per_class = load_policy(POLICY.format(metric="recall[b]"))
    check_policy_for_task(per_class, "multiclass_classification")
    (check,) = segment_checks(per_class.segments, report)
    assert check.verdict == "breach" and "region=south" in check.reason
    missing = load_policy(POLICY.format(metric="recall[zzz]"))
    (check,) = segment_checks(missing.segments, report)
    assert check.verdict == "inconclusive" and "no segment could be judged" in check.reason


def test_gate_judges_regression_segments() -> None:
    rng = np.random.default_rng(4)
    n = 1200
    y = rng.normal(size=n)
    region, _ = _columns(n, rng)
    pred = y + rng.normal(size=n) * np.where(region == "east", 2.0, 0.5)
    policy = load_policy(POLICY.format(metric="rmse"))
    check_policy_for_task(policy, "regression")
    report = evaluate_regression_segments(y, pred, columns={"region": encode_groups(region)},
                                          min_rows=60)
    (check,) = segment_checks(policy.segments, report)
    assert check.verdict == "breach" and "segment region=east breaches" in check.reason
    assert check.lower is None and check.upper == 0.02  # rmse: lower is better


@pytest.mark.parametrize(("metric", "task"), [
    ("rmse", "binary_classification"), ("roc_auc", "multiclass_classification"),
    ("recall", "multiclass_classification"), ("recall[b]", "binary_classification"),
    ("macro_f1", "regression"), ("mean_error", "regression")],
    ids=["rmse-binary", "auc-multiclass", "recall-unnamed-class", "per-class-binary",
         "f1-regression", "bias-regression"])
def test_policy_refuses_a_segment_metric_the_task_does_not_report(metric: str, task: str) -> None:
    text = POLICY.format(metric=metric)
    if metric == "mean_error":  # no worse side: not even a segment metric
        with pytest.raises(PolicyError, match="segments.metrics.mean_error': expected one of"):
            load_policy(text)
        return
    with pytest.raises(PolicyError, match=f"not reported for the segments of task {task}"):
        check_policy_for_task(load_policy(text), task)
