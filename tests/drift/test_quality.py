"""Data quality against a reference schema: hand-counted tiny cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.quality import (
    FeatureQuality,
    FeatureSchema,
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


# --- cases added for the mutation session of drift/quality.py (tests/MUTATION.md) -----------------

NAN = float("nan")


def _is_nan(x: float) -> bool:
    return x != x


def test_defaults_by_value() -> None:
    from modelgate.drift import quality

    assert quality.DEFAULT_TOLERANCE == 0.1 and quality.DEFAULT_MAX_DOMAIN == 1000
    p = QualityPolicy()
    assert (p.max_type_mismatch_rate, p.max_out_of_range_rate, p.max_new_category_rate,
            p.max_missing_rate_increase) == (0.0, 0.01, 0.01, 0.05)
    (s,) = infer_schema({"c": ["a"]}, {"c": "categorical"})
    assert (_is_nan(s.minimum), _is_nan(s.maximum), _is_nan(s.low), _is_nan(s.high)) == (True,) * 4
    assert s.integral is False and s.value_types == ("str",)
    q = FeatureQuality("f", "numeric", 3, 1, 1 / 3, 0.0)
    assert (q.n_type_mismatch, q.n_out_of_range, q.n_new_category, q.n_new_values) == (0, 0, 0, 0)
    assert q.domain_checked is False and q.column_present is True


def test_default_tolerance_and_max_domain_are_used() -> None:
    # 0.1 of the span 10 on each side: [-1, 11]; an explicit 0.1 gives the same, 0.2 does not.
    (x,) = infer_schema({"x": [0.0, 10.0]}, {"x": "numeric"})
    assert (x.low, x.high) == (-1.0, 11.0)
    (wide,) = infer_schema({"x": [0.0, 10.0]}, {"x": "numeric"}, tolerance=0.2)
    assert (wide.low, wide.high) == (-2.0, 12.0)
    # exactly 1000 distinct values keep their domain at the default; 1001 do not.
    (kept,) = infer_schema({"c": [f"v{i}" for i in range(1000)]}, {"c": "categorical"})
    assert kept.domain is not None and len(kept.domain) == 1000
    (dropped,) = infer_schema({"c": [f"v{i}" for i in range(1001)]}, {"c": "categorical"})
    assert dropped.domain is None


def test_domain_size_boundary_at_max_domain() -> None:
    (kept,) = infer_schema({"c": ["a", "b", "c"]}, {"c": "categorical"}, max_domain=3)
    assert kept.domain is not None and sorted(kept.domain) == ["a", "b", "c"]
    (dropped,) = infer_schema({"c": ["a", "b", "c"]}, {"c": "categorical"}, max_domain=2)
    assert dropped.domain is None and dropped.to_record()["domain_size"] is None
    assert dropped.value_types == ("str",)


def test_records_are_frozen_slotted_dataclasses() -> None:
    import dataclasses

    (s,) = infer_schema({"x": [1.0]}, {"x": "numeric"})
    q = FeatureQuality("f", "numeric", 1, 0, 0.0, 0.0)
    d = decide_quality((q,), QualityPolicy())
    for obj, field in ((s, "n"), (q, "n"), (QualityPolicy(), "max_out_of_range_rate"), (d, "breached")):
        assert dataclasses.is_dataclass(obj)
        assert not hasattr(obj, "__dict__") and field in type(obj).__slots__
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, 0)


def test_type_names_of_every_kind_of_value() -> None:
    cases = [([True, False], ("bool",)), ([np.bool_(True), np.bool_(False)], ("bool",)),
             ([3, 4], ("int",)), ([np.int64(3), np.int32(4)], ("int",)),
             ([2.5, 3.5], ("float",)), ([np.float32(2.5), np.float64(3.5)], ("float",)),
             (["a", "b"], ("str",)), ([b"a", b"b"], ("bytes",)),
             ([2.5, "a", b"x", 7], ("bytes", "float", "int", "str"))]
    for values, types in cases:
        (s,) = infer_schema({"c": pd.Series(values, dtype=object)}, {"c": "categorical"})
        assert s.value_types == types, values


def test_categorical_type_mismatch_per_type() -> None:
    (s,) = infer_schema({"c": pd.Series([1, 2], dtype=object)}, {"c": "categorical"})
    current = pd.Series([1, np.bool_(False), 2.5, "x", b"y", 1], dtype=object)
    (q,) = check_quality((s,), {"c": current}, n_rows=6)
    # False, 2.5, "x" and b"y" are not ints; the two 1s are.
    assert q.n_type_mismatch == 4
    assert (q.n_new_category, q.n_new_values) == (4, 4)


def test_numeric_column_of_bools_or_numpy_numbers() -> None:
    (x,) = infer_schema({"x": [0.0, 1.0]}, {"x": "numeric"})
    (q,) = check_quality((x,), {"x": np.array([True, False, True])}, n_rows=3)
    assert (q.n_type_mismatch, q.n_missing, q.n_out_of_range) == (3, 0, 0)
    mixed = pd.Series([np.int64(1), np.float32(0.5), np.bool_(True), "1", None, np.nan], dtype=object)
    (q,) = check_quality((x,), {"x": mixed}, n_rows=6)
    # True and "1" are not real numbers, 0.5 is fractional where the reference was whole.
    assert (q.n_type_mismatch, q.n_missing, q.n_out_of_range) == (3, 2, 0)
    (b,) = infer_schema({"x": np.array([True, False, True])}, {"x": "numeric"})
    assert b.n == 3 and _is_nan(b.minimum) and b.missing_rate == 0.0


def test_constant_reference_range() -> None:
    # span 0: widened by tolerance * max(|value|, 1).
    for values, low, high in (([5.0, 5.0], 4.5, 5.5), ([-5.0, -5.0], -5.5, -4.5), ([0.2], 0.1, 0.3),
                              ([-0.2, -0.2], -0.3, -0.1), ([0.0], -0.1, 0.1)):
        (s,) = infer_schema({"x": values}, {"x": "numeric"})
        assert (s.minimum, s.maximum) == (values[0], values[0])
        assert (s.low, s.high) == pytest.approx((low, high), abs=1e-12), values
    (s,) = infer_schema({"x": [2.0, 4.0]}, {"x": "numeric"}, tolerance=0.5)
    assert (s.minimum, s.maximum, s.low, s.high) == (2.0, 4.0, 1.0, 5.0)


def test_range_edges_are_inside() -> None:
    (s,) = infer_schema({"x": [2.0, 4.0]}, {"x": "numeric"}, tolerance=0.5)  # [1, 5]
    (q,) = check_quality((s,), {"x": [1.0, 5.0, 0.999, 5.001, 3.0]}, n_rows=5)
    assert q.n_out_of_range == 2
    (z,) = infer_schema({"x": [2.0, 4.0]}, {"x": "numeric"}, tolerance=0.0)  # exactly [2, 4]
    assert (z.low, z.high) == (2.0, 4.0)
    (q,) = check_quality((z,), {"x": [2.0, 4.0, 1.5, 4.5]}, n_rows=4)
    assert q.n_out_of_range == 2


def test_tolerance_refused_when_negative_or_nan() -> None:
    for bad in (-0.1, NAN, -1e-300):
        with pytest.raises(ValueError, match=r"tolerance must be >= 0; got "):
            infer_schema({"x": [1.0]}, {"x": "numeric"}, tolerance=bad)


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        infer_schema({"x": [1.0]}, {"x": "numeric"}, 0.1)  # type: ignore[misc]
    with pytest.raises(TypeError):
        infer_schema({"x": [1.0]}, {"x": "numeric"}, tolerance=0.1, max_domain=5, extra=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        check_quality((), {}, 3)  # type: ignore[misc]
    assert check_quality((), {}, n_rows=3) == ()


def test_all_missing_or_empty_reference() -> None:
    (s,) = infer_schema({"x": [None, np.nan, None]}, {"x": "numeric"})
    assert (s.n, s.missing_rate) == (3, 1.0)
    assert all(_is_nan(v) for v in (s.minimum, s.maximum, s.low, s.high)) and s.integral is False
    (q,) = check_quality((s,), {"x": [1.0, -1e9, 1e9, None]}, n_rows=4)
    assert (q.n_out_of_range, q.n_type_mismatch, q.n_missing) == (0, 0, 1)
    (e,) = infer_schema({"x": np.array([], dtype=float)}, {"x": "numeric"})
    assert e.n == 0 and _is_nan(e.missing_rate)
    (c,) = infer_schema({"c": np.array([], dtype=object)}, {"c": "categorical"})
    assert c.n == 0 and _is_nan(c.missing_rate) and c.domain == ()
    (c1,) = infer_schema({"c": [None, None]}, {"c": "categorical"})
    assert (c1.n, c1.missing_rate, c1.domain, c1.value_types) == (2, 1.0, (), ())


def test_empty_interval_rates_are_nan() -> None:
    num, cat = infer_schema({"x": [1.0, 2.0], "c": ["a", "b"]}, {"x": "numeric", "c": "categorical"})
    x, c = check_quality((num, cat), {"x": np.array([], dtype=float), "c": np.array([], dtype=object)},
                         n_rows=0)
    assert (x.n, x.n_missing, c.n, c.n_missing) == (0, 0, 0, 0) and _is_nan(x.missing_rate)
    assert _is_nan(c.missing_rate) and x.reference_missing_rate == 0.0
    absent = check_quality((num, cat), {}, n_rows=0)
    assert all(a.n == 0 and a.n_missing == 0 and _is_nan(a.missing_rate) for a in absent)
    assert [a.column_present for a in absent] == [False, False]
    assert [a.kind for a in absent] == ["numeric", "categorical"]
    assert decide_quality(absent, QualityPolicy()).verdicts == (("x", "no_data"), ("c", "no_data"))


def test_absent_column_counts() -> None:
    (s,) = infer_schema({"x": [1.0, None]}, {"x": "numeric"})
    (q,) = check_quality((s,), {}, n_rows=4)
    assert (q.feature, q.kind, q.n, q.n_missing, q.missing_rate, q.reference_missing_rate) == \
        ("x", "numeric", 4, 4, 1.0, 0.5)
    assert (q.n_type_mismatch, q.n_out_of_range, q.n_new_category, q.domain_checked) == (0, 0, 0, False)
    assert q.column_present is False


def test_fractional_values_count_only_for_a_whole_reference() -> None:
    (whole,) = infer_schema({"x": [1.0, 3.0]}, {"x": "numeric"})
    (frac,) = infer_schema({"x": [1.0, 2.5]}, {"x": "numeric"})
    assert whole.integral is True and frac.integral is False
    (q,) = check_quality((whole,), {"x": [1.5, 2.0, 2.25]}, n_rows=3)
    assert q.n_type_mismatch == 2
    (q,) = check_quality((frac,), {"x": [1.5, 2.0, 2.25]}, n_rows=3)
    assert q.n_type_mismatch == 0


def test_categorical_counts_and_domain_order_free() -> None:
    (s,) = infer_schema({"c": ["a", "a", "b", None]}, {"c": "categorical"})
    (q,) = check_quality((s,), {"c": ["b", "z", "z", "y", None, "a"]}, n_rows=6)
    assert (q.feature, q.kind, q.n, q.n_missing) == ("c", "categorical", 6, 1)
    assert q.missing_rate == pytest.approx(1 / 6) and q.reference_missing_rate == 0.25
    assert (q.n_new_category, q.n_new_values, q.n_type_mismatch, q.domain_checked) == (3, 2, 0, True)
    assert q.n_out_of_range == 0


def test_categorical_without_domain_counts_no_new_values() -> None:
    (s,) = infer_schema({"c": ["a", "b", "c"]}, {"c": "categorical"}, max_domain=1)
    (q,) = check_quality((s,), {"c": ["x", "y", 3]}, n_rows=3)
    assert (q.n_new_category, q.n_new_values, q.domain_checked, q.n_type_mismatch) == (0, 0, False, 1)


def test_row_count_mismatch_message() -> None:
    schema = infer_schema({"x": [1.0], "c": ["a"]}, {"x": "numeric", "c": "categorical"})
    with pytest.raises(ValueError, match=r"^column 'x' has 2 rows; n_rows is 3$"):
        check_quality(schema, {"x": [1.0, 2.0], "c": ["a", "a", "a"]}, n_rows=3)
    with pytest.raises(ValueError, match=r"^column 'c' has 4 rows; n_rows is 3$"):
        check_quality(schema, {"x": [1.0, 2.0, 3.0], "c": ["a"] * 4}, n_rows=3)


def test_validation_messages() -> None:
    with pytest.raises(ValueError, match=r"^feature 'x' is not in the reference columns$"):
        infer_schema({"y": [1]}, {"x": "numeric"})
    with pytest.raises(ValueError, match=r"^kind of 'x' must be 'numeric' or 'categorical'; got 'text'$"):
        infer_schema({"x": [1]}, {"x": "text"})  # type: ignore[dict-item]
    # the schema keeps the order of ``kinds``, not of ``columns``
    schema = infer_schema({"a": [1.0], "b": ["x"]}, {"b": "categorical", "a": "numeric"})
    assert [(s.feature, s.kind) for s in schema] == [("b", "categorical"), ("a", "numeric")]


def test_policy_bounds() -> None:
    for name in QualityPolicy.__slots__:
        QualityPolicy(**{name: 0.0})
        QualityPolicy(**{name: 1.0})
        for bad in (-0.01, 1.01, NAN):
            with pytest.raises(ValueError, match=rf"^{name} must be in \[0, 1\]; got "):
                QualityPolicy(**{name: bad})
    assert QualityPolicy.__slots__ == ("max_type_mismatch_rate", "max_out_of_range_rate",
                                       "max_new_category_rate", "max_missing_rate_increase")


def test_schema_record_by_hand() -> None:
    (x,) = infer_schema({"x": [1.0, 3.0, None, 2.0]}, {"x": "numeric"}, tolerance=0.5)
    assert x.to_record() == {"feature": "x", "kind": "numeric", "n": 4, "missing_rate": 0.25,
                             "minimum": 1.0, "maximum": 3.0, "low": 0.0, "high": 4.0, "integral": True,
                             "value_types": [], "domain_size": None}
    (c,) = infer_schema({"c": ["a", 2, "a"]}, {"c": "categorical"})
    assert c.to_record() == {"feature": "c", "kind": "categorical", "n": 3, "missing_rate": 0.0,
                             "minimum": None, "maximum": None, "low": None, "high": None,
                             "integral": False, "value_types": ["int", "str"], "domain_size": 2}


def test_quality_record_by_hand() -> None:
    q = FeatureQuality("f", "categorical", 10, 2, 0.2, NAN, n_type_mismatch=1, n_out_of_range=4,
                       n_new_category=3, n_new_values=2, domain_checked=True, column_present=False)
    assert q.to_record() == {"feature": "f", "kind": "categorical", "n": 10, "n_missing": 2,
                             "missing_rate": 0.2, "reference_missing_rate": None, "n_type_mismatch": 1,
                             "n_out_of_range": 4, "n_new_category": 3, "n_new_values": 2,
                             "domain_checked": True, "column_present": False}


def test_decision_at_each_limit_and_record() -> None:
    policy = QualityPolicy(max_type_mismatch_rate=0.1, max_out_of_range_rate=0.2,
                           max_new_category_rate=0.3, max_missing_rate_increase=0.25)
    at = FeatureQuality("at", "numeric", 10, 5, 0.5, 0.25, n_type_mismatch=1, n_out_of_range=2,
                        n_new_category=3)
    over = FeatureQuality("over", "numeric", 10, 6, 0.6, 0.25, n_type_mismatch=2, n_out_of_range=3,
                          n_new_category=4)
    d = decide_quality((at, over), policy)
    assert d.verdicts == (("at", "ok"), ("over", "breach"))
    assert d.reasons == (("over", "type_mismatch 0.2000 > 0.1000"), ("over", "out_of_range 0.3000 > 0.2000"),
                         ("over", "new_category 0.4000 > 0.3000"),
                         ("over", "missing_rate_increase 0.3500 > 0.2500"))
    assert d.breached == ("over",) and d.n_breached == 1
    assert d.to_record() == {"n_breached": 1, "breached": ["over"],
                             "verdicts": {"at": "ok", "over": "breach"},
                             "reasons": [{"feature": "over", "reason": r} for _, r in d.reasons]}


def test_decision_each_check_alone() -> None:
    policy = QualityPolicy()
    cases = {"type_mismatch 0.5000 > 0.0000": dict(n_type_mismatch=1),
             "out_of_range 0.5000 > 0.0100": dict(n_out_of_range=1),
             "new_category 0.5000 > 0.0100": dict(n_new_category=1)}
    for reason, counts in cases.items():
        q = FeatureQuality("f", "numeric", 2, 0, 0.0, 0.0, **counts)
        assert decide_quality((q,), policy).reasons == (("f", reason),)


def test_missing_rate_increase_against_an_undefined_reference_rate() -> None:
    # a reference of no rows has a NaN missing rate: the increase is then the interval's share.
    q = FeatureQuality("f", "numeric", 100, 4, 0.04, NAN)
    assert decide_quality((q,), QualityPolicy()).verdicts == (("f", "ok"),)
    q = FeatureQuality("f", "numeric", 100, 6, 0.06, NAN)
    assert decide_quality((q,), QualityPolicy()).reasons == (("f", "missing_rate_increase 0.0600 > 0.0500"),)
    # a missing share that fell is no breach
    q = FeatureQuality("f", "numeric", 100, 0, 0.0, 0.9)
    assert decide_quality((q,), QualityPolicy()).breached == ()


def test_no_data_keeps_its_place_and_breached_once() -> None:
    empty = FeatureQuality("e", "numeric", 0, 0, NAN, 0.0, n_type_mismatch=5)
    bad = FeatureQuality("b", "numeric", 1, 1, 1.0, 0.0, n_type_mismatch=1, n_out_of_range=1)
    d = decide_quality((bad, empty, bad), QualityPolicy())
    assert d.verdicts == (("b", "breach"), ("e", "no_data"), ("b", "breach"))
    assert d.breached == ("b",) and d.n_breached == 1 and len(d.reasons) == 6
    assert decide_quality((), QualityPolicy()) == decide_quality((), QualityPolicy())
    none = decide_quality((), QualityPolicy())
    assert none.to_record() == {"n_breached": 0, "breached": [], "verdicts": {}, "reasons": []}


def test_missing_counts_when_most_rows_are_missing() -> None:
    # 3 of 4 rows missing: the count is a difference (4 - 1), not a ratio or a remainder.
    (c,) = infer_schema({"c": ["a", None, None, None]}, {"c": "categorical"})
    assert c.missing_rate == 0.75
    (q,) = check_quality((c,), {"c": [None, "a", None, None]}, n_rows=4)
    assert (q.n_missing, q.missing_rate) == (3, 0.75)
    (q,) = check_quality((c,), {"c": [None, "a", "a", None, None, None, None]}, n_rows=7)
    assert (q.n_missing, q.missing_rate) == (5, 5 / 7)


def test_numeric_reference_without_a_single_number() -> None:
    # strings and a None: no number, so no range; the missing share is that of the None alone.
    (s,) = infer_schema({"x": pd.Series(["a", "b", None], dtype=object)}, {"x": "numeric"})
    assert (s.n, s.missing_rate) == (3, pytest.approx(1 / 3))
    assert all(_is_nan(v) for v in (s.minimum, s.maximum, s.low, s.high))


def test_kinds_compared_by_value() -> None:
    # kinds built at run time (not the interned literals) and kinds that sort before or after
    numeric, categorical = "".join(["num", "eric"]), "".join(["categ", "orical"])
    x, c = infer_schema({"x": [1.0, 2.0], "c": ["a", "b"]}, {"x": numeric, "c": categorical})  # type: ignore[dict-item]
    assert (x.kind, x.low, c.kind, c.domain is not None) == ("numeric", 0.9, "categorical", True)
    for bad in ("binary", "a", "zzz", "Numeric"):
        message = rf"^kind of 'x' must be 'numeric' or 'categorical'; got '{bad}'$"
        with pytest.raises(ValueError, match=message):
            infer_schema({"x": [1]}, {"x": bad})  # type: ignore[dict-item]
    schema = FeatureSchema("x", numeric, 2, 0.0, 1.0, 2.0, 0.9, 2.1, True)  # type: ignore[arg-type]
    (q,) = check_quality((schema,), {"x": [5.0, 1.5]}, n_rows=2)
    assert (q.kind, q.n_out_of_range, q.n_type_mismatch) == ("numeric", 1, 1)


def test_row_count_compared_by_value_for_large_intervals() -> None:
    (s,) = infer_schema({"x": [1.0, 2.0]}, {"x": "numeric"})
    (q,) = check_quality((s,), {"x": np.full(300, 1.5)}, n_rows=300)
    assert (q.n, q.n_type_mismatch, q.n_out_of_range) == (300, 300, 0)
    with pytest.raises(ValueError, match=r"^column 'x' has 300 rows; n_rows is 301$"):
        check_quality((s,), {"x": np.full(300, 1.5)}, n_rows=301)


def test_negative_row_count_refused() -> None:
    # a bug, fixed: with every column absent, n_rows=-1 gave records of -1 rows, missing rate
    # 1.0, and a breach verdict (rates of -1 rows) instead of an error.
    (s,) = infer_schema({"x": [1.0, 2.0]}, {"x": "numeric"})
    with pytest.raises(ValueError, match=r"^n_rows must be >= 0; got -1$"):
        check_quality((s,), {}, n_rows=-1)
    assert check_quality((s,), {}, n_rows=0)[0].n == 0
