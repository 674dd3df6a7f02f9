"""Data quality against a reference schema: hand-counted tiny cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.quality import (
    FeatureQuality,
    QualityPolicy,
    check_quality,
    decide_quality,
    infer_schema,
)

KINDS = {"age": "numeric", "income": "numeric", "city": "categorical"}
REFERENCE = {"age": np.array([20, 30, 40, 50]),  # whole numbers, range 20..50 -> 17..53
             "income": np.array([1.5, np.nan, 2.5, 3.5]),  # a quarter missing
             "city": np.array(["a", "b", None, "a"], dtype=object)}


def test_schema_by_hand() -> None:
    age, income, city = infer_schema(REFERENCE, KINDS)
    assert (age.minimum, age.maximum, age.low, age.high, age.integral) == (20, 50, 17, 53, True)
    assert income.missing_rate == 0.25 and not income.integral
    assert (income.low, income.high) == pytest.approx((1.3, 3.7))
    assert city.domain is not None and set(city.domain) == {"a", "b"}
    assert city.value_types == ("str",) and city.missing_rate == 0.25
    assert city.to_record()["domain_size"] == 2 and "domain" not in city.to_record()


def test_counts_by_hand() -> None:
    schema = infer_schema(REFERENCE, KINDS)
    current = {"age": np.array([16, 18.5, 53, 60, None, 30], dtype=object),
               "income": np.array([np.nan, np.nan, np.nan, 2.0, 9.0, 1.0]),
               "city": np.array(["a", "c", "c", 7, None, "b"], dtype=object)}
    age, income, city = check_quality(schema, current, n_rows=6)
    # age: 16 and 60 outside [17, 53]; 18.5 is fractional where the reference was whole.
    assert (age.n_missing, age.n_out_of_range, age.n_type_mismatch) == (1, 2, 1)
    # income: 9.0 and 1.0 outside [1.3, 3.7].
    assert (income.n_missing, income.n_out_of_range, income.n_type_mismatch) == (3, 2, 0)
    assert income.missing_rate == 0.5 and income.reference_missing_rate == 0.25
    # city: "c" twice and 7 are new (2 values); 7 is also of a type the reference never held.
    assert (city.n_new_category, city.n_new_values, city.n_type_mismatch) == (3, 2, 1)
    assert city.domain_checked and city.n_missing == 1


def test_strings_in_a_numeric_column_are_type_mismatches() -> None:
    (age,) = infer_schema({"age": [1.0, 2.0]}, {"age": "numeric"})
    (q,) = check_quality((age,), {"age": pd.Series(["1.5", 2.0, True, None], dtype=object)}, n_rows=4)
    assert (q.n_type_mismatch, q.n_missing) == (2, 1)


def test_absent_column_is_all_missing() -> None:
    schema = infer_schema(REFERENCE, KINDS)
    qualities = check_quality(schema, {"age": np.array([20, 30])}, n_rows=2)
    income = qualities[1]
    assert (income.n_missing, income.missing_rate, income.column_present) == (2, 1.0, False)
    assert decide_quality(qualities, QualityPolicy()).breached == ("income", "city")


def test_large_domain_is_not_checked() -> None:
    (ids,) = infer_schema({"code": [str(i) for i in range(50)]}, {"code": "categorical"}, max_domain=10)
    assert ids.domain is None
    (q,) = check_quality((ids,), {"code": ["new"]}, n_rows=1)
    assert (q.n_new_category, q.domain_checked) == (0, False)


def test_decision_thresholds_and_no_data() -> None:
    ok = FeatureQuality("a", "numeric", 100, 7, 0.07, 0.02, n_out_of_range=1)  # 1% is allowed
    bad = FeatureQuality("b", "categorical", 100, 0, 0.0, 0.0, n_type_mismatch=1, n_new_category=2)
    empty = FeatureQuality("c", "numeric", 0, 0, float("nan"), 0.0)
    d = decide_quality((ok, bad, empty), QualityPolicy())
    assert d.verdicts == (("a", "ok"), ("b", "breach"), ("c", "no_data"))
    assert [r for _, r in d.reasons] == ["type_mismatch 0.0100 > 0.0000", "new_category 0.0200 > 0.0100"]
    assert d.to_record()["n_breached"] == 1
    loose = QualityPolicy(max_type_mismatch_rate=0.5, max_new_category_rate=0.5)
    assert decide_quality((bad,), loose).breached == ()


def test_validation() -> None:
    with pytest.raises(ValueError, match="max_out_of_range_rate"):
        QualityPolicy(max_out_of_range_rate=2.0)
    with pytest.raises(ValueError, match="not in the reference"):
        infer_schema({}, {"x": "numeric"})
    with pytest.raises(ValueError, match="kind of 'x'"):
        infer_schema({"x": [1]}, {"x": "text"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="n_rows"):
        check_quality(infer_schema({"x": [1]}, {"x": "numeric"}), {"x": [1, 2]}, n_rows=3)
