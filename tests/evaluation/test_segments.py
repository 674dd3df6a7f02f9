"""Segments: metrics on each slice against scikit-learn, mapped = one-process, hand cases."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.metrics import METRIC_NAMES
from modelgate.evaluation.segment_statistics import collect_segments, merge_segments, pair_codes
from modelgate.evaluation.segments import evaluate_segments, worse_p_value
from modelgate.fairness.disaggregate import encode_groups
from scipy.stats import norm
from sklearn import metrics as skm

B = 40  # resamples: the studentized log-loss and Brier intervals only need some


def _data(n: int = 900, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    # scores on a 0.01 grid (ties, handled exactly): small bootstrap tables keep the test fast
    s = np.round(np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0.0, 1.0), 2)
    region = np.array(["north", "south", "east"], dtype=object)[rng.integers(0, 3, n)]
    region[rng.random(n) < 0.05] = None  # missing values are a segment of their own
    device = rng.integers(0, 2, n)
    return y, s, region, device


def _sklearn(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    pred = (s >= 0.5).astype(int)
    return {"roc_auc": skm.roc_auc_score(y, s), "accuracy": skm.accuracy_score(y, pred),
            "precision": skm.precision_score(y, pred), "recall": skm.recall_score(y, pred),
            "f1": skm.f1_score(y, pred), "log_loss": skm.log_loss(y, s, labels=[0, 1]),
            "brier": skm.brier_score_loss(y, s)}


def _report(min_rows: int = 30):
    y, s, region, device = _data()
    columns = {"region": encode_groups(region), "device": encode_groups(device)}
    stats = collect_segments(y, s, threshold=0.5, columns=columns, pairs=[("region", "device")])
    return (y, s, region, device), evaluate_segments(stats, n_bootstrap=B, min_rows=min_rows)


def test_every_segment_and_rest_equal_sklearn_on_its_slice() -> None:
    (y, s, region, device), report = _report()
    region_text = np.array(["__missing__" if r is None else r for r in region])
    masks = {("region",): lambda v: region_text == v[0],
             ("device",): lambda v: device.astype(str) == v[0],
             ("region", "device"): lambda v: (region_text == v[0]) & (device.astype(str) == v[1])}
    seen = 0
    for seg in report.segments:
        mask = masks[seg.columns](seg.values)
        assert seg.n == mask.sum() and seg.n_pos == y[mask].sum()
        own, rest = _sklearn(y[mask], s[mask]), _sklearn(y[~mask], s[~mask])
        for m in seg.metrics:
            assert m.value == pytest.approx(own[m.name], rel=1e-9, abs=1e-12), (seg.name, m.name)
            if seg.judged:
                assert m.rest_value == pytest.approx(rest[m.name], rel=1e-9, abs=1e-12)
                assert m.difference == pytest.approx(own[m.name] - rest[m.name], abs=1e-12)
                assert m.difference_ci_lower <= m.difference <= m.difference_ci_upper
                assert m.ci_lower <= m.value <= m.ci_upper
        seen += 1
    # 4 regions (missing included), 2 devices, 8 pairs
    assert seen == 14
    assert [seg.values for seg in report.segments[:4]] == [
        ("east",), ("north",), ("south",), ("__missing__",)]
    assert report.family_size == sum(seg.judged for seg in report.segments) * len(METRIC_NAMES)


def test_small_segments_are_reported_not_judged() -> None:
    _, report = _report(min_rows=100)
    missing = report.segments[3]
    assert missing.values == ("__missing__",) and missing.n < 100
    assert not missing.judged
    assert missing.reason == f"segment has {missing.n:,} rows, fewer than the minimum of 100"
    assert all(np.isfinite(m.value) for m in missing.metrics)  # its metrics are still reported
    assert all(np.isnan(m.p_value) and np.isnan(m.q_value) for m in missing.metrics)
    judged = [seg for seg in report.segments if seg.judged]
    assert all(seg.n >= 100 for seg in judged)
    assert report.family_size == len(judged) * len(METRIC_NAMES)


def test_a_column_with_one_value_has_no_rest_to_compare() -> None:
    y, s, _, _ = _data(200)
    stats = collect_segments(y, s, threshold=0.5, columns={"c": encode_groups(np.zeros(200, int))})
    seg = evaluate_segments(stats, n_bootstrap=B).segments[0]
    assert not seg.judged and seg.reason == ("the rest of the data has 0 rows, fewer than the "
                                             "minimum of 100")


def test_mapped_equals_one_process() -> None:
    y, s, region, device = _data()

    def stats(rows: slice):
        cols = {"region": encode_groups(region[rows]), "device": encode_groups(device[rows])}
        return collect_segments(y[rows], s[rows], threshold=0.5, columns=cols)

    whole = evaluate_segments(stats(slice(None)), n_bootstrap=B, min_rows=30)
    mapped = evaluate_segments(merge_segments([stats(slice(0, 400)), stats(slice(400, None))]),
                               n_bootstrap=B, min_rows=30)
    assert [(g.values, g.n, g.n_pos) for g in whole.segments] == [
        (g.values, g.n, g.n_pos) for g in mapped.segments]
    for a, b in zip(whole.segments, mapped.segments, strict=True):
        for x, z in zip(a.metrics, b.metrics, strict=True):
            np.testing.assert_allclose([x.value, x.ci_lower, x.ci_upper, x.p_value, x.q_value],
                                       [z.value, z.ci_lower, z.ci_upper, z.p_value, z.q_value],
                                       rtol=1e-9, atol=1e-12)


def test_a_planted_weak_slice_is_found_and_q_values_are_bh_of_the_family() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(11)
    n = 1500
    y = (rng.random(n) < 0.5).astype(int)
    g = rng.integers(0, 5, n)
    s = np.round(np.clip(rng.normal(0.3 + 0.4 * y, 0.15), 0, 1), 2)
    weak = g == 2
    s[weak] = np.round(rng.uniform(0, 1, weak.sum()), 2)  # no skill in segment 2
    stats = collect_segments(y, s, threshold=0.5, columns={"g": encode_groups(g)})
    report = evaluate_segments(stats, n_bootstrap=B)
    by_name = {seg.name: {m.name: m for m in seg.metrics} for seg in report.segments}
    for metric in ("roc_auc", "accuracy", "log_loss", "brier"):
        assert by_name["g=2"][metric].q_value < 1e-6, metric
    worst = min(report.segments, key=lambda seg: {m.name: m for m in seg.metrics}["roc_auc"].p_value)
    assert worst.name == "g=2"
    p = np.array([m.p_value for seg in report.segments for m in seg.metrics])
    q = np.array([m.q_value for seg in report.segments for m in seg.metrics])
    np.testing.assert_allclose(q, multipletests(p, method="fdr_bh")[1], rtol=1e-12)
    holm = evaluate_segments(stats, n_bootstrap=B, correction="holm")
    q_holm = np.array([m.q_value for seg in holm.segments for m in seg.metrics])
    np.testing.assert_allclose(q_holm, multipletests(p, method="holm")[1], rtol=1e-12)
    assert "Holm" in holm.family and "35 tests" in holm.family


def test_worse_p_value_by_hand() -> None:
    z = norm.ppf(0.975)
    # higher is better: se from the upper half-width 0.04 / z; d = -0.06 -> p = Phi(-0.06 z / 0.04)
    assert worse_p_value(-0.06, (-0.11, -0.02), True, 0.95) == pytest.approx(norm.cdf(-0.06 * z / 0.04))
    # a margin of 0.05 tolerated: excess 0.01
    assert worse_p_value(-0.06, (-0.11, -0.02), True, 0.95, margin=0.05) == pytest.approx(
        norm.cdf(-0.01 * z / 0.04))
    # lower is better (a loss): worse is a positive difference, se from the lower half-width
    assert worse_p_value(0.3, (0.1, 0.9), False, 0.95) == pytest.approx(norm.cdf(-0.3 * z / 0.2))
    # better than the rest: p above one half
    assert worse_p_value(0.05, (0.01, 0.09), True, 0.95) > 0.5
    # the interval's end exactly at the margin: p = (1 - level) / 2
    assert worse_p_value(-0.05, (-0.1, 0.0), True, 0.9) == pytest.approx(0.05)
    assert worse_p_value(-0.05, (-0.05, -0.05), True, 0.95) == 0.0
    assert np.isnan(worse_p_value(float("nan"), (0.0, 1.0), True, 0.95))


def test_pairs_and_errors() -> None:
    labels, codes = pair_codes((("a", "b"), [0, 1, 1, 0]), (("x", "y", "z"), [2, 0, 0, 2]))
    assert labels == (("a", "z"), ("b", "x")) and codes.tolist() == [0, 1, 1, 0]
    y, s = np.array([0, 1]), np.array([0.2, 0.8])
    with pytest.raises(ValueError, match="segment column 'c': codes must have the length"):
        collect_segments(y, s, threshold=0.5, columns={"c": (("a",), [0])})
    with pytest.raises(ValueError, match=r"segment pair \('c', 'd'\): 'd' is not a segment column"):
        collect_segments(y, s, threshold=0.5, columns={"c": (("a",), [0, 0])}, pairs=[("c", "d")])
    stats = collect_segments(y, s, threshold=0.5, columns={"c": (("a",), [0, 0])})
    with pytest.raises(ValueError, match="min_rows must be an integer >= 2; got 1"):
        evaluate_segments(stats, min_rows=1)
    with pytest.raises(ValueError, match="correction must be one of bh, by, holm; got 'x'"):
        evaluate_segments(stats, correction="x")
