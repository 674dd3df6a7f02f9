"""Sliced Wasserstein drift: cases added for the mutation session of drift/multivariate.py (see
tests/MUTATION.md): options and shapes refused with their messages, the reference's fields
against numpy and POT written out here, the size-adjusted threshold by hand, records and
serialisation."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import ot
import pytest
from modelgate.drift import multivariate as mv
from modelgate.drift.multivariate import (
    MultivariateDrift,
    MultivariateReference,
    build_multivariate_reference,
    multivariate_drift,
)

NAMES = ("a", "b", "c")


def _rows(n: int, seed: int = 0, d: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def _baseline_by_hand(rows: np.ndarray, n_projections: int, p: int, repeats: int, seed: int) -> float:
    # the documented draw, redone: directions from POT with the seed, then `repeats` half splits
    # of the rows from one generator seeded alike (no row sample: fewer rows than max_rows)
    mean, std = rows.mean(axis=0), rows.std(axis=0)
    z = (rows - mean) / np.where(std > 0, std, 1.0)
    theta = ot.sliced.get_random_projections(rows.shape[1], n_projections, seed=seed)
    proj = z @ theta
    rng = np.random.default_rng(seed)
    n = rows.shape[0]
    values = []
    for _ in range(repeats):
        idx = rng.choice(n, size=n // 2, replace=False)
        mask = np.zeros(n, dtype=bool)
        mask[idx] = True
        a, b = proj[mask], proj[~mask]
        per = ot.wasserstein_1d(a, b, p=p)  # W_p ** p per direction
        values.append(float(np.mean(per) ** (1 / p)))
    return float(np.mean(values))


def test_defaults_by_value() -> None:
    assert (mv.DEFAULT_N_PROJECTIONS, mv.DEFAULT_MAX_ROWS) == (64, 20_000)
    rows = _rows(41)
    ref = build_multivariate_reference(rows, features=NAMES)
    explicit = build_multivariate_reference(rows, features=NAMES, n_projections=64, p=2, max_rows=20_000,
                                            baseline_repeats=5, seed=0)
    assert (ref.p, ref.max_rows, ref.seed, ref.projections.shape) == (2, 20_000, 0, (3, 64))
    assert ref.baseline == explicit.baseline
    assert ref.baseline == pytest.approx(_baseline_by_hand(rows, 64, 2, 5, 0), rel=1e-9)
    other = build_multivariate_reference(rows, features=NAMES, baseline_repeats=4)
    assert other.baseline != ref.baseline
    cur = _rows(30, seed=1) * 1.2
    d = multivariate_drift(ref, cur)
    assert d == multivariate_drift(ref, cur, relative=1.8, floor=0.05, seed=0)
    assert d.threshold == max(0.05, 1.8 * d.baseline)


def test_reference_fields_against_numpy_and_pot() -> None:
    rows = _rows(51, seed=3) * [1.0, 10.0, 0.1] + [0.0, 5.0, -2.0]
    ref = build_multivariate_reference(rows, features=NAMES, n_projections=7, p=1, baseline_repeats=3,
                                       seed=11)
    assert ref.features == NAMES and ref.n == 51 and ref.n_incomplete == 0 and ref.n_kept == 51
    assert ref.half_sizes == (25, 26) and (ref.p, ref.seed) == (1, 11)
    assert np.array_equal(ref.mean, rows.mean(axis=0)) and np.array_equal(ref.scale, rows.std(axis=0))
    theta = ot.sliced.get_random_projections(3, 7, seed=11)
    assert np.allclose(ref.projections, theta, rtol=0, atol=0)
    expected = np.sort(((rows - rows.mean(axis=0)) / rows.std(axis=0)) @ theta, axis=0)
    assert ref.projected == pytest.approx(expected, abs=1e-12)
    assert ref.baseline == pytest.approx(_baseline_by_hand(rows, 7, 1, 3, 11), rel=1e-9)
    for arr in (ref.mean, ref.scale, ref.projections, ref.projected):
        assert not arr.flags.writeable


def test_constant_column_has_scale_one() -> None:
    rows = _rows(20)
    rows[:, 1] = 7.0
    ref = build_multivariate_reference(rows, features=NAMES)
    assert ref.scale[1] == 1.0 and ref.mean[1] == 7.0
    assert ref.scale[0] == pytest.approx(rows[:, 0].std())


def test_even_halves_and_p_three() -> None:
    rows = _rows(40, seed=5)
    ref = build_multivariate_reference(rows, features=NAMES, n_projections=5, p=3, baseline_repeats=2,
                                       seed=2)
    assert ref.half_sizes == (20, 20)
    assert ref.baseline == pytest.approx(_baseline_by_hand(rows, 5, 3, 2, 2), rel=1e-9)


def test_a_sample_of_exactly_max_rows_is_not_drawn() -> None:
    # max_rows equal to the row count keeps every row without a draw, so the splits (the same
    # generator) give the baseline of a reference that does not sample at all.
    rows = _rows(30, seed=8)
    kept_all = build_multivariate_reference(rows, features=NAMES, max_rows=30)
    no_limit = build_multivariate_reference(rows, features=NAMES)
    assert kept_all.baseline == no_limit.baseline and kept_all.n_kept == 30
    sampled = build_multivariate_reference(rows, features=NAMES, max_rows=29)
    assert sampled.n_kept == 29 and sampled.n == 30
    cur = _rows(30, seed=9)
    assert multivariate_drift(kept_all, cur, seed=1).statistic == multivariate_drift(kept_all, cur,
                                                                                     seed=2).statistic
    assert multivariate_drift(sampled, cur, seed=1).statistic != multivariate_drift(sampled, cur,
                                                                                   seed=2).statistic


def test_threshold_and_baseline_by_hand() -> None:
    rows = _rows(60, seed=4)
    ref = build_multivariate_reference(rows, features=NAMES, baseline_repeats=2)
    cur = _rows(25, seed=6) + 0.2
    d = multivariate_drift(ref, cur, relative=2.5, floor=0.0)
    factor = math.sqrt((1 / 60 + 1 / 25) / (1 / 30 + 1 / 30))
    assert d.baseline == pytest.approx(ref.baseline * factor, rel=1e-12)
    assert d.threshold == pytest.approx(2.5 * ref.baseline * factor, rel=1e-12)
    expected = ot.sliced_wasserstein_distance((rows - rows.mean(0)) / rows.std(0),
                                              (cur - rows.mean(0)) / rows.std(0),
                                              projections=ref.projections, p=2)
    assert d.statistic == pytest.approx(float(expected), rel=1e-9)
    assert (d.n_reference, d.n_current, d.n_compared, d.n_incomplete_current) == (60, 25, 25, 0)
    assert (d.n_projections, d.p, d.features) == (64, 2, NAMES)
    # the floor when above relative * baseline
    high = multivariate_drift(ref, cur, relative=0.0, floor=0.3)
    assert high.threshold == 0.3 and high.baseline == d.baseline


def test_a_statistic_equal_to_its_threshold_is_ok() -> None:
    rows = _rows(50, seed=1)
    ref = build_multivariate_reference(rows, features=NAMES)
    cur = _rows(50, seed=2) + 0.5
    s = multivariate_drift(ref, cur).statistic
    assert s is not None
    assert multivariate_drift(ref, cur, relative=0.0, floor=s).verdict == "ok"
    assert multivariate_drift(ref, cur, relative=0.0, floor=math.nextafter(s, 0.0)).verdict == "drift"
    assert multivariate_drift(ref, cur, relative=0, floor=0).verdict == "drift"


def test_relative_and_floor_refused() -> None:
    ref = build_multivariate_reference(_rows(10), features=NAMES)
    for name in ("relative", "floor"):
        for bad in (-1e-9, math.inf, math.nan, "1.0", None):
            with pytest.raises(ValueError, match=rf"^{name} must be a finite number >= 0, got "):
                multivariate_drift(ref, _rows(5), **{name: bad})  # type: ignore[arg-type]
    # 0 is allowed for either: with relative 0 the threshold is the floor alone (0.05 by
    # default), which a statistic of 0.44 on 5 rows passes; with floor 0 it is the rule alone
    no_rule, no_floor = (multivariate_drift(ref, _rows(5), **{name: 0})  # type: ignore[arg-type]
                         for name in ("relative", "floor"))
    assert no_rule.threshold == 0.05 and no_rule.statistic > 0.4 and no_rule.verdict == "drift"
    assert no_floor.threshold > no_floor.statistic and no_floor.verdict == "ok"


def test_options_refused_below_their_minimum_or_not_integers() -> None:
    rows = _rows(10)
    for name, low in (("n_projections", 1), ("p", 1), ("max_rows", 4), ("baseline_repeats", 1)):
        build_multivariate_reference(rows, features=NAMES, **{name: low})
        build_multivariate_reference(rows, features=NAMES, **{name: np.int64(low)})
        for bad in (low - 1, -1, float(low), "2", None):
            with pytest.raises(ValueError, match=rf"^{name} must be an integer >= {low}, got "):
                build_multivariate_reference(rows, features=NAMES, **{name: bad})


def test_keyword_only() -> None:
    rows = _rows(10)
    with pytest.raises(TypeError):
        build_multivariate_reference(rows, NAMES)  # type: ignore[misc]
    ref = build_multivariate_reference(data=rows, features=NAMES)
    with pytest.raises(TypeError):
        multivariate_drift(ref, rows, 1.8)  # type: ignore[misc]
    assert multivariate_drift(reference=ref, current=rows).statistic == pytest.approx(0.0, abs=1e-12)


def test_features_and_rows_refused() -> None:
    with pytest.raises(ValueError, match=r"^features must be non-empty and unique, got \[\]$"):
        build_multivariate_reference(np.zeros((10, 0)), features=[])
    with pytest.raises(ValueError, match=r"^features must be non-empty and unique, got \['a', 'a'\]$"):
        build_multivariate_reference(np.zeros((10, 2)), features=["a", "a"])
    ref = build_multivariate_reference(_rows(4, d=2), features=[1, 2])  # names as strings
    assert ref.features == ("1", "2") and ref.half_sizes == (2, 2)
    with pytest.raises(ValueError, match=r"^data must have at least 4 complete rows, got 3$"):
        build_multivariate_reference(_rows(3), features=NAMES)
    few = _rows(6)
    few[:3, 0] = np.nan
    with pytest.raises(ValueError, match=r"^data must have at least 4 complete rows, got 3$"):
        build_multivariate_reference(few, features=NAMES)
    for shape in ((10,), (10, 3, 1), (10, 2)):
        message = "^" + re.escape(f"data must have shape (n_rows, 3), got {shape!r}") + "$"
        with pytest.raises(ValueError, match=message):
            build_multivariate_reference(np.zeros(shape), features=NAMES)


def test_incomplete_rows_counted_on_both_sides() -> None:
    rows = _rows(12)
    rows[0, 0] = np.nan
    rows[1, 2] = -np.inf
    rows[2, 1] = np.inf
    ref = build_multivariate_reference(rows, features=NAMES)
    assert (ref.n, ref.n_incomplete, ref.n_kept) == (9, 3, 9)
    assert np.array_equal(ref.mean, rows[3:].mean(axis=0))
    # rows whose sum overflows are complete
    big = np.array([[1e308, 1e308, 1e308], [-1e308, -1e308, 1e308], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0],
                    [np.nan, 0.0, 0.0]])
    with np.errstate(over="ignore"):  # the row sums overflow: those rows are checked one by one
        rows2, n_bad = mv._complete_rows(big, 3, "data")
    assert n_bad == 1 and np.array_equal(rows2, big[:4])
    d = multivariate_drift(build_multivariate_reference(_rows(10), features=NAMES), big[[4, 4, 2]])
    assert (d.n_current, d.n_incomplete_current, d.n_compared) == (1, 2, 1)


def test_no_data_result_fields() -> None:
    ref = build_multivariate_reference(_rows(20), features=NAMES, n_projections=9, p=1)
    d = multivariate_drift(ref, np.empty((0, 3)))
    assert d == MultivariateDrift(NAMES, None, None, None, "no_data", 20, 0, 0, 0, 9, 1)
    assert d.to_record() == {"statistic_name": "sliced_wasserstein_1", "statistic_value": None,
                             "baseline": None, "threshold": None, "verdict": "no_data", "n_features": 3,
                             "n_projections": 9, "n_reference": 20, "n_current": 0, "n_compared": 0,
                             "n_incomplete_current": 0}


def test_record_by_hand() -> None:
    d = MultivariateDrift(("a", "b"), 0.5, 0.1, 0.18, "drift", 100, 80, 70, 3, 16, 2)
    assert d.to_record() == {"statistic_name": "sliced_wasserstein_2", "statistic_value": 0.5,
                             "baseline": 0.1, "threshold": 0.18, "verdict": "drift", "n_features": 2,
                             "n_projections": 16, "n_reference": 100, "n_current": 80, "n_compared": 70,
                             "n_incomplete_current": 3}
    assert MultivariateDrift(("a",), math.inf, math.nan, 0.1, "ok", 1, 1, 1, 0, 1, 1).to_record()[
        "statistic_value"] is None


def test_results_frozen_and_slotted() -> None:
    ref = build_multivariate_reference(_rows(10), features=NAMES)
    d = multivariate_drift(ref, _rows(5))
    for obj, field in ((ref, "baseline"), (d, "statistic")):
        assert not hasattr(obj, "__dict__") and field in type(obj).__slots__
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, 1.0)
    # the reference compares by identity (it holds arrays)
    again = build_multivariate_reference(_rows(10), features=NAMES)
    assert ref != again and ref == ref


def test_bytes_round_trip_keeps_every_field() -> None:
    rows = _rows(33, seed=2)
    rows[0, 1] = np.nan
    ref = build_multivariate_reference(rows, features=NAMES, n_projections=5, p=3, max_rows=20,
                                       baseline_repeats=2, seed=9)
    back = MultivariateReference.from_bytes(ref.to_bytes())
    assert (back.features, back.n, back.n_incomplete, back.half_sizes, back.p, back.max_rows, back.seed) == \
        (NAMES, 32, 1, (10, 10), 3, 20, 9)
    assert back.baseline == ref.baseline and back.n_kept == 20
    for name in ("mean", "scale", "projections", "projected"):
        assert np.array_equal(getattr(back, name), getattr(ref, name))
        assert not getattr(back, name).flags.writeable


def test_bytes_of_another_format_refused() -> None:
    import io

    buf = io.BytesIO()
    np.savez(buf, format=np.array("modelgate-multivariate-v0"), meta=np.zeros(7, dtype=np.int64))
    with pytest.raises(ValueError, match=r"^payload must be a multivariate reference in format "
                                         r"'modelgate-multivariate-v1'$"):
        MultivariateReference.from_bytes(buf.getvalue())
    buf = io.BytesIO()
    np.savez(buf, meta=np.zeros(7, dtype=np.int64))
    with pytest.raises(ValueError, match="in format 'modelgate-multivariate-v1'"):
        MultivariateReference.from_bytes(buf.getvalue())
    with pytest.raises(ValueError, match=r"^payload is not a multivariate reference: "):
        MultivariateReference.from_bytes(b"x")


def test_empty_truncated_or_incomplete_payloads_are_value_errors() -> None:
    # a bug, fixed: empty bytes raised EOFError, a truncated payload zipfile.BadZipFile and an
    # archive of the right format without its arrays KeyError, not the documented ValueError.
    import io

    payload = build_multivariate_reference(_rows(10), features=NAMES).to_bytes()
    for broken in (b"", payload[:100], payload[: len(payload) // 2], b"PK\x03\x04" + bytes(40)):
        with pytest.raises(ValueError, match=r"^payload is not a multivariate reference: "):
            MultivariateReference.from_bytes(broken)
    buf = io.BytesIO()
    np.savez(buf, format=np.array("modelgate-multivariate-v1"), mean=np.zeros(3))
    with pytest.raises(ValueError, match=r"^payload is not a multivariate reference: it has no features, "
                                         r"scale, projections, projected, meta, baseline$"):
        MultivariateReference.from_bytes(buf.getvalue())


def test_bytes_round_trip_keeps_unequal_halves_and_every_meta_field_apart() -> None:
    # 40 rows, 2 incomplete: n = 38; a sample of 21 rows has halves (10, 11). Every field of the
    # payload's meta array differs from the others, so reading one in another's place shows.
    rows = _rows(40, seed=12)
    rows[5, 0], rows[17, 2] = np.nan, np.inf
    ref = build_multivariate_reference(rows, features=NAMES, n_projections=6, p=3, max_rows=21,
                                       baseline_repeats=2, seed=9)
    back = MultivariateReference.from_bytes(ref.to_bytes())
    assert (back.n, back.n_incomplete, back.half_sizes, back.p, back.max_rows, back.seed) == \
        (38, 2, (10, 11), 3, 21, 9)


def test_the_row_sample_draws_distinct_rows() -> None:
    # 30 rows, max_rows=29: the sample leaves out exactly one row. Brute force over the 30
    # candidates: the reference's sorted projections are those of the other 29 rows, standardised
    # with the mean and deviation of all 30 (numpy); a sample with replacement repeats a row.
    rows = _rows(30, seed=21)
    ref = build_multivariate_reference(rows, features=NAMES, n_projections=4, max_rows=29)
    z = (rows - rows.mean(axis=0)) / rows.std(axis=0)
    proj = z @ ot.sliced.get_random_projections(3, 4, seed=0)
    left_out = [r for r in range(30)
                if np.allclose(ref.projected, np.sort(np.delete(proj, r, axis=0), axis=0), rtol=0,
                               atol=1e-12)]
    assert len(left_out) == 1
    # the current side too: its statistic is POT's on 29 of its 30 rows, one row left out
    cur = _rows(30, seed=22) + 0.3
    got = multivariate_drift(ref, cur, seed=4).statistic
    ref_z = np.delete(z, left_out[0], axis=0)
    candidates = [float(ot.sliced_wasserstein_distance(
        ref_z, (np.delete(cur, r, axis=0) - rows.mean(axis=0)) / rows.std(axis=0),
        projections=ref.projections, p=2)) for r in range(30)]
    assert sum(math.isclose(got, c, rel_tol=1e-9) for c in candidates) == 1


def test_default_current_seed_is_zero() -> None:
    # the current sample is drawn only past max_rows: there the default seed must be 0
    ref = build_multivariate_reference(_rows(30, seed=23), features=NAMES, max_rows=10)
    cur = _rows(30, seed=24)
    assert multivariate_drift(ref, cur) == multivariate_drift(ref, cur, seed=0)
    assert multivariate_drift(ref, cur).statistic != multivariate_drift(ref, cur, seed=1).statistic


def test_default_floor_is_the_threshold_of_a_constant_reference() -> None:
    # a constant reference: every column has scale 1.0 and every projection is 0, so every half
    # split has distance 0, the baseline is 0 and the threshold is the floor, 0.05 by default
    rows = np.tile([1.0, -2.0, 3.0], (8, 1))
    ref = build_multivariate_reference(rows, features=NAMES)
    assert ref.baseline == 0.0
    d = multivariate_drift(ref, rows)
    assert (d.statistic, d.baseline, d.threshold, d.verdict) == (0.0, 0.0, 0.05, "ok")


def test_three_hundred_unique_features_accepted() -> None:
    # lengths past 256 are distinct int objects: the names' check compares them by value
    names = [f"x{j}" for j in range(300)]
    ref = build_multivariate_reference(_rows(5, d=300), features=names, n_projections=2)
    assert ref.features == tuple(names) and ref.projections.shape == (300, 2)
    with pytest.raises(ValueError, match="^features must be non-empty and unique"):
        build_multivariate_reference(_rows(5, d=300), features=[*names[:-1], "x0"], n_projections=2)


def test_bytes_of_a_newer_format_refused() -> None:
    # "v2" sorts after "v1": the format is compared for equality, not order
    import io

    payload = build_multivariate_reference(_rows(10), features=NAMES).to_bytes()
    with np.load(io.BytesIO(payload)) as z:
        arrays = {k: z[k] for k in z.files}
    buf = io.BytesIO()
    np.savez(buf, **{**arrays, "format": np.array("modelgate-multivariate-v2")})
    with pytest.raises(ValueError, match="^payload must be a multivariate reference in format "):
        MultivariateReference.from_bytes(buf.getvalue())


def test_too_few_rows_message_counts_rows_not_columns() -> None:
    # 3 rows of 2 columns: the message gives the 3 rows
    with pytest.raises(ValueError, match=r"^data must have at least 4 complete rows, got 3$"):
        build_multivariate_reference(_rows(3, d=2), features=["a", "b"])
    with pytest.raises(ValueError, match=r"^data must have at least 4 complete rows, got 2$"):
        build_multivariate_reference(_rows(2, d=5), features=list("abcde"))


@pytest.mark.parametrize("column", [
    np.random.default_rng(0).normal(size=8) * 1e200,  # squared deviations overflow: std inf
    np.array([1e308, 1e308, -1e308, -1e308, 0.0, 1.0, 2.0, 3.0]),  # the sum overflows: mean inf
], ids=["wide", "mean-overflows"])
def test_a_feature_whose_std_overflows_is_refused(column: np.ndarray) -> None:
    # a bug, fixed: the reference took a scale of inf (or NaN) for such a column, so that
    # feature then counted for nothing in any comparison (or every statistic was NaN, "ok")
    rows = _rows(8)
    rows[:, 1] = column
    with pytest.raises(ValueError, match=r"^data's features \['b'\] spread too widely for float64: "):
        build_multivariate_reference(rows, features=NAMES)
    rows[:, 1] = np.linspace(-1e150, 1e150, 8)  # squares of 1e300 still fit
    assert build_multivariate_reference(rows, features=NAMES).scale[1] == pytest.approx(
        np.linspace(-1e150, 1e150, 8).std())


@pytest.mark.parametrize("n_rows", [5, 10], ids=["unequal-sizes", "equal-sizes"])
def test_a_row_whose_projections_overflow_is_drift(n_rows: int) -> None:
    # a bug, fixed: a finite current row of 1.5e308 in every feature (about 1.5e308 reference
    # deviations out) overflowed its projections to +-inf, and to NaN where BLAS added both, so
    # the statistic was NaN and the verdict "ok". W_p to a point at float64's end is inf.
    ref = build_multivariate_reference(_rows(10), features=NAMES)
    cur = _rows(n_rows, seed=1)
    cur[-1] = 1.5e308
    with np.errstate(over="ignore"):  # the row sum of the missing-value check overflows
        d = multivariate_drift(ref, cur)
    assert (d.statistic, d.verdict, d.n_compared) == (math.inf, "drift", n_rows)
    assert d.to_record()["statistic_value"] is None


def test_a_single_npy_array_payload_is_a_value_error() -> None:
    # a bug, fixed: np.load reads a lone .npy array as an ndarray, not an archive, and
    # from_bytes raised TypeError (an ndarray is no context manager)
    import io

    buf = io.BytesIO()
    np.save(buf, np.zeros(3))
    with pytest.raises(ValueError, match=r"^payload is not a multivariate reference: a single \.npy "):
        MultivariateReference.from_bytes(buf.getvalue())
