"""Per-feature drift results and verdicts; expectations from scipy and hand-worked cases."""

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.data_drift import (
    DriftThresholds,
    categorical_drift,
    categorical_drift_from_counts,
    numeric_drift,
    numeric_drift_sorted,
    summarise,
)
from modelgate.drift.reference import (
    MISSING,
    build_categorical_reference,
    build_numeric_reference,
)
from scipy.spatial.distance import jensenshannon
from scipy.stats import wasserstein_distance

NUMERIC_CASES = ["shift", "nan-and-inf", "outside-range", "constant-current", "n1", "n2"]


def _numeric_case(case: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    ref = rng.normal(size=4000)
    cur = {
        "shift": rng.normal(0.5, 1.0, 3000),
        "nan-and-inf": np.r_[rng.normal(size=500), [np.nan] * 7, [np.inf, -np.inf]],
        "outside-range": rng.uniform(10, 20, 300),
        "constant-current": np.full(40, 0.25),
        "n1": np.array([1.5]),
        "n2": np.array([-3.0, 0.0]),
    }[case]
    return ref, cur


@pytest.mark.parametrize("case", NUMERIC_CASES, ids=NUMERIC_CASES)
def test_numeric_statistics_match_scipy(case: str) -> None:
    ref_x, cur_x = _numeric_case(case)
    ref = build_numeric_reference(ref_x, name="f", bins=10)
    res = numeric_drift(ref, cur_x)
    finite = cur_x[np.isfinite(cur_x)]
    assert res.n_current == finite.size
    assert res.n_missing_current == cur_x.size - finite.size
    assert res.wasserstein == pytest.approx(wasserstein_distance(ref_x, finite), rel=1e-9)
    assert res.wasserstein_normalised == pytest.approx(res.wasserstein / np.std(ref_x), rel=1e-12)
    inner = np.quantile(ref_x, np.linspace(0, 1, 11)[1:-1])
    p = np.bincount(np.digitize(ref_x, inner), minlength=10)
    q = np.bincount(np.digitize(finite, inner), minlength=10)
    assert res.js_divergence == pytest.approx(
        jensenshannon(p, q, base=2) ** 2, rel=1e-12, abs=1e-12
    )


def test_same_distribution_ok_and_shift_drifts() -> None:
    rng = np.random.default_rng(12)
    ref = build_numeric_reference(rng.normal(size=20_000), name="x")
    same = numeric_drift(ref, rng.normal(size=20_000))
    moved = numeric_drift(ref, rng.normal(0.3, 1.0, size=20_000))
    assert same.verdict == "ok" and moved.verdict == "drift"
    assert same.statistic == "wasserstein_normalised"
    assert moved.threshold == pytest.approx(max(0.1, 1.8 * moved.baseline))


def test_no_data_for_empty_or_all_missing() -> None:
    ref = build_numeric_reference(np.arange(10.0), name="x")
    empty = numeric_drift(ref, np.array([]))
    all_nan = numeric_drift(ref, np.array([np.nan, np.nan]))
    assert (empty.verdict, empty.wasserstein, empty.n_current) == ("no_data", None, 0)
    assert (all_nan.verdict, all_nan.n_missing_current) == ("no_data", 2)
    cref = build_categorical_reference(["a"], name="c")
    assert categorical_drift(cref, []).verdict == "no_data"


def test_constant_reference_and_current() -> None:
    ref = build_numeric_reference(np.full(100, 5.0), name="k")
    same = numeric_drift(ref, np.full(50, 5.0))
    moved = numeric_drift(ref, np.full(50, 7.0))
    assert (same.wasserstein, same.verdict) == (0.0, "ok")
    assert moved.wasserstein == pytest.approx(2.0)  # scale 1.0 for a constant column
    assert moved.verdict == "drift"


def test_categorical_unseen_and_missing_match_scipy() -> None:
    rng = np.random.default_rng(13)
    ref_x = rng.choice(
        np.array(["a", "b", "c", None], dtype=object), size=2000, p=[0.5, 0.3, 0.15, 0.05]
    )
    cur_x = rng.choice(
        np.array(["a", "b", "z", None], dtype=object), size=1500, p=[0.4, 0.3, 0.1, 0.2]
    )
    res = categorical_drift(build_categorical_reference(ref_x, name="c"), cur_x)
    to_label = np.vectorize(lambda v: MISSING if v is None else v, otypes=[object])
    ref_c = pd.Series(to_label(ref_x)).value_counts()
    cur_c = pd.Series(to_label(cur_x)).value_counts()
    union = sorted(set(ref_c.index) | set(cur_c.index))
    expected = (
        jensenshannon(
            ref_c.reindex(union, fill_value=0), cur_c.reindex(union, fill_value=0), base=2
        )
        ** 2
    )
    assert res.js_divergence == pytest.approx(expected, rel=1e-12)
    assert res.unseen_categories == ("z",)
    assert res.n_missing_current == int(cur_c[MISSING])
    assert res.n_current == 1500 and res.wasserstein is None
    assert res.verdict == "drift"


def test_per_feature_override_and_js_statistic() -> None:
    rng = np.random.default_rng(14)
    ref = build_numeric_reference(rng.normal(size=5000), name="x")
    cur = rng.normal(0.3, 1.0, size=5000)
    loose = DriftThresholds(overrides={"x": DriftThresholds(wasserstein_floor=10.0)})
    assert numeric_drift(ref, cur, thresholds=loose).verdict == "ok"
    assert numeric_drift(ref, cur, thresholds=loose).threshold == 10.0
    by_js = numeric_drift(ref, cur, thresholds=DriftThresholds(numeric_statistic="js_divergence"))
    assert by_js.statistic == "js_divergence" and by_js.score == by_js.js_divergence


@pytest.mark.parametrize(
    "kwargs",
    [{"relative": -1.0}, {"js_floor": float("nan")}, {"numeric_statistic": "ks"},
     {"overrides": {"x": 3.0}}],
    ids=["negative", "nan", "statistic", "override"],
)
def test_thresholds_validated(kwargs: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        DriftThresholds(**kwargs)


def _features() -> list:
    rng = np.random.default_rng(15)
    out = []
    for i, shift in enumerate([0.0, 0.5, 0.2, 1.0]):
        ref = build_numeric_reference(rng.normal(size=3000), name=f"n{i}")
        out.append(numeric_drift(ref, rng.normal(shift, 1.0, size=2000)))
    cref = build_categorical_reference(rng.choice(["a", "b"], size=3000), name="cat")
    out.append(categorical_drift(cref, rng.choice(["a", "b", "c"], size=2000)))
    out.append(numeric_drift(build_numeric_reference([1.0, 2.0], name="empty"), []))
    return out


def test_summary_orders_by_severity_and_is_order_independent() -> None:
    feats = _features()
    summary = summarise(feats)
    sev = [f.score / f.threshold for f in summary.features if f.verdict != "no_data"]
    assert sev == sorted(sev, reverse=True)
    assert summary.features[-1].feature == "empty" and summary.no_data == ("empty",)
    assert set(summary.breached) == {f.feature for f in feats if f.verdict == "drift"}
    assert summary.n_breached == len(summary.breached) >= 2
    for perm in itertools.islice(itertools.permutations(feats), 0, 720, 97):
        assert summarise(perm) == summary


def test_summary_rejects_duplicates() -> None:
    f = _features()[0]
    with pytest.raises(ValueError, match="n0"):
        summarise([f, f])


def test_results_are_frozen_and_slotted() -> None:
    feats = _features()
    for result in (feats[0], summarise(feats), DriftThresholds()):
        assert not hasattr(result, "__dict__")  # slots
        field = dataclasses.fields(result)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, field, None)


def test_missing_counts_default_to_zero_and_no_data_sorts_last() -> None:
    ref = build_numeric_reference(np.arange(10.0), name="x")
    assert numeric_drift_sorted(ref, np.arange(3.0)).n_missing_current == 0
    cref = build_categorical_reference(["a", "b"] * 20, name="c")
    assert categorical_drift_from_counts(cref, {"a": 3}).n_missing_current == 0
    assert categorical_drift_from_counts(cref, {"a": 3, MISSING: 2}).n_missing_current == 2
    assert numeric_drift(ref, []).severity == -1.0


def test_summary_compares_verdicts_by_value() -> None:
    """Results rebuilt from stored rows carry equal, not identical, verdict strings."""
    feats = [dataclasses.replace(f, verdict="".join(list(f.verdict))) for f in _features()]
    assert all(f.verdict is not g.verdict for f, g in zip(feats, _features(), strict=True))
    summary = summarise(feats)
    assert summary.no_data == ("empty",)
    assert set(summary.breached) == {f.feature for f in feats if f.verdict == "drift"}


def test_options_are_keyword_only_and_severity_is_a_plain_ratio() -> None:
    ref = build_numeric_reference(np.arange(100.0), name="x")
    with pytest.raises(TypeError):
        numeric_drift_sorted(ref, np.arange(3.0), 0)  # type: ignore[misc]
    res = numeric_drift(ref, np.arange(100.0) + 15)  # W1 = 15, scale = 28.87
    assert res.severity == pytest.approx(res.score / res.threshold, rel=1e-15)
    assert 1 < res.severity < 2  # not a whole number: a floor division would show


def test_every_option_is_keyword_only() -> None:
    ref = build_numeric_reference(np.arange(10.0), name="x")
    cref = build_categorical_reference(["a", "b"] * 5, name="c")
    t = DriftThresholds()
    for call in (lambda: numeric_drift(ref, [1.0], t), lambda: categorical_drift(cref, ["a"], t),
                 lambda: categorical_drift_from_counts(cref, {"a": 1}, t)):
        with pytest.raises(TypeError):
            call()  # type: ignore[misc]


def test_zero_counts_are_allowed_and_negative_ones_refused() -> None:
    cref = build_categorical_reference(["a", "b"] * 20, name="c")
    assert categorical_drift_from_counts(cref, {"a": 20, "b": 0, "z": 0}).n_current == 20
    with pytest.raises(ValueError, match="must be >= 0"):
        categorical_drift_from_counts(cref, {"a": 20, "b": -1})


def test_statistic_option_is_compared_by_value() -> None:
    """A statistic name read from a policy file is an equal string, not the same object."""
    ref = build_numeric_reference(np.arange(100.0), name="x")
    name = "".join(list("wasserstein_normalised"))
    res = numeric_drift(ref, np.arange(100.0) + 15,
                        thresholds=DriftThresholds(numeric_statistic=name))  # type: ignore[arg-type]
    assert res.score == res.wasserstein_normalised != res.js_divergence
