"""Estimated performance per segment, judged with the segments' drift tests as one family:
the p-value against hand-worked normal tails, the q-values against statsmodels over the whole
family (drift tests and estimate checks together), the family's size, and what is not judged."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from modelgate.drift import segment_drift, segment_family, worsening_p_value
from statsmodels.stats.multitest import multipletests

# Phi(-2.5) and Phi(1) from the standard normal table
PHI_MINUS_2_5, PHI_1 = 0.0062096653, 0.8413447461


def _row(value: str, estimate: float | None, se: float | None = 0.02, *, metric: str = "accuracy",
         reference: float | None = 0.90, limit: float | None = 0.05, reason: str | None = None,
         n: int = 400) -> dict[str, Any]:
    return {"segment_column": "region", "segment_value": value, "metric": metric, "n_rows": n,
            "estimate": estimate, "standard_error": se,
            "lower": None if estimate is None else estimate - 0.04,
            "upper": None if estimate is None else estimate + 0.04,
            "reference_value": reference, "max_worsening": limit, "reason": reason}


def test_p_value_is_the_normal_tail_beyond_the_limit() -> None:
    # limit 0.90 - 0.05 = 0.85; 0.80 is 2.5 standard errors below it, 0.87 one above
    assert worsening_p_value(0.80, 0.02, 0.90, 0.05) == pytest.approx(PHI_MINUS_2_5, rel=1e-7)
    assert worsening_p_value(0.87, 0.02, 0.90, 0.05) == pytest.approx(PHI_1, rel=1e-7)
    # an error metric: worse when higher; limit 1.0 + 0.1 = 1.1, 1.35 is 2.5 standard errors above
    assert worsening_p_value(1.35, 0.1, 1.0, 0.1, lower_is_better=True) == pytest.approx(
        PHI_MINUS_2_5, rel=1e-7)


def test_p_value_without_spread_is_the_point_check() -> None:
    assert worsening_p_value(0.84, 0.0, 0.90, 0.05) == 0.0
    assert worsening_p_value(0.85, 0.0, 0.90, 0.05) == 1.0


@pytest.mark.parametrize("args", [(math.nan, 0.1, 0.9, 0.05), (0.8, -0.1, 0.9, 0.05), (0.8, 0.1, 0.9, -0.01)],
                         ids=["nan-estimate", "negative-se", "negative-limit"])
def test_p_value_refuses_bad_input(args: tuple[float, float, float, float]) -> None:
    with pytest.raises(ValueError, match="estimate|standard_error|max_worsening"):
        worsening_p_value(*args)


def _drift_family() -> Any:
    rng = np.random.default_rng(7)
    ref = {"region": np.repeat(["n", "s", "w"], [200, 200, 5]), "age": rng.normal(40, 10, 405)}
    age = rng.normal(40, 10, 205)
    age[100:200] += 6  # region s shifted
    cur = {"region": np.repeat(["n", "s", "w"], [100, 100, 5]), "age": age}
    return segment_drift(ref, cur, ["region"], ["age"])


def test_drift_tests_and_estimate_checks_are_one_bh_family() -> None:
    drift = _drift_family()
    rows = [_row("n", 0.89), _row("s", 0.80),
            _row("w", None, None, reason="50 scored rows needed, 5 given", n=5),
            _row("n", 0.7, metric="f1", limit=None)]
    out = segment_family(rows, drift, level=0.05, correction="bh")
    drift_p = [r.p_value for r in drift.rows if r.p_value is not None]  # n, s (w too small)
    check_p = [worsening_p_value(0.89, 0.02, 0.90, 0.05), worsening_p_value(0.80, 0.02, 0.90, 0.05)]
    expected_q = multipletests(drift_p + check_p, method="fdr_bh")[1]
    assert out.family_size == 4  # 2 drift tests + 2 judged estimate checks, stated
    assert out.drift is not None and out.drift.family_size == 4
    assert [r.q_value for r in out.drift.rows if r.q_value is not None] == pytest.approx(expected_q[:2])
    by_key = {(e.segment_value, e.metric): e for e in out.estimates}
    assert [by_key["n", "accuracy"].q_value, by_key["s", "accuracy"].q_value] == pytest.approx(expected_q[2:])
    assert by_key["s", "accuracy"].status == "breach" and by_key["n", "accuracy"].status == "ok"
    assert (by_key["w", "accuracy"].status, by_key["w", "accuracy"].reason) == (
        "insufficient_data", "50 scored rows needed, 5 given")
    assert (by_key["n", "f1"].status, by_key["n", "f1"].p_value) == ("not_judged", None)
    assert [e.segment_value for e in out.breaches] == ["s"]
    # the drift rows' statuses follow the joint q-values
    assert [r.status for r in out.drift.rows] == [
        "drift" if q is not None and q <= 0.05 else ("insufficient_data" if q is None else "no_drift")
        for q in (r.q_value for r in out.drift.rows)]


@pytest.mark.parametrize("correction,method", [("by", "fdr_by"), ("holm", "holm")], ids=["by", "holm"])
def test_other_corrections_match_statsmodels(correction: str, method: str) -> None:
    rows = [_row(v, e) for v, e in (("a", 0.83), ("b", 0.86), ("c", 0.80), ("d", 0.90))]
    out = segment_family(rows, None, correction=correction)
    p = [worsening_p_value(e, 0.02, 0.90, 0.05) for e in (0.83, 0.86, 0.80, 0.90)]
    assert [e.q_value for e in out.estimates] == pytest.approx(multipletests(p, method=method)[1])
    assert out.drift is None and out.family_size == 4


def test_not_judged_without_a_reference_or_a_standard_error() -> None:
    out = segment_family([_row("a", 0.5, reference=None), _row("b", 0.5, se=math.nan)])
    assert [(e.status, e.reason) for e in out.estimates] == [
        ("not_judged", "the reference has no realised value of this metric"),
        ("not_judged", "no standard error on this segment's scores")]
    assert out.family_size == 0


def test_error_metrics_breach_upwards() -> None:
    rows = [_row("a", 1.6, 0.1, metric="mae", reference=1.0, limit=0.1),
            _row("b", 0.7, 0.1, metric="mae", reference=1.0, limit=0.1)]
    out = segment_family(rows, lower_is_better={"mae"})
    assert [e.status for e in out.estimates] == ["breach", "ok"]


def test_level_is_checked() -> None:
    with pytest.raises(ValueError, match="level must lie in"):
        segment_family([], None, level=1.0)
