"""Parquet adapter: equals the core on the same data, fan-out equality, clear errors."""

import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from modelgate.drift.data_drift import categorical_drift, numeric_drift, summarise
from modelgate.drift.reference import build_categorical_reference, build_numeric_reference
from scipy.stats import wasserstein_distance

from modelgate.pipelines.drift.columns import build_references_from_parquet, drift_from_parquet

FEATURES = {"a": "numeric", "b": "numeric", "i": "numeric", "c": "categorical", "d": "categorical"}


def _table(rng: np.random.Generator, n: int, shift: float) -> pa.Table:
    a = rng.normal(shift, 1.0, n)
    a[rng.random(n) < 0.05] = np.nan
    labels = np.array(["x", "y", "z", "w"], dtype=object)
    c = labels[rng.integers(0, 3 if shift == 0 else 4, n)]
    c[rng.random(n) < 0.02] = None
    return pa.table(
        {
            "a": a,
            "b": pa.array(rng.exponential(1 + shift, n), mask=rng.random(n) < 0.01),
            "i": rng.integers(0, 10, n),
            "c": pa.array(c, type=pa.string()),
            "d": pa.array(rng.random(n) < 0.3 + shift / 10).dictionary_encode(),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pa.Table, pa.Table]:
    rng = np.random.default_rng(21)
    root = tmp_path_factory.mktemp("drift")
    ref, cur = _table(rng, 5000, 0.0), _table(rng, 3000, 0.5)
    pq.write_table(ref, root / "ref.parquet", row_group_size=1000)
    pq.write_table(cur, root / "cur.parquet", row_group_size=1000)
    return root / "ref.parquet", root / "cur.parquet", ref, cur


def test_adapter_equals_core(files: tuple) -> None:
    ref_path, cur_path, ref_t, cur_t = files
    refs = build_references_from_parquet(ref_path, FEATURES)
    results = {r.feature: r for r in drift_from_parquet(cur_path, refs)}
    for name, kind in FEATURES.items():
        ref_x = ref_t.column(name).to_pandas().to_numpy()
        cur_x = cur_t.column(name).to_pandas().to_numpy()
        if kind == "numeric":
            core = numeric_drift(
                build_numeric_reference(ref_x.astype(float), name=name), cur_x.astype(float)
            )
            finite_ref = ref_x[np.isfinite(ref_x.astype(float))].astype(float)
            finite_cur = cur_x[np.isfinite(cur_x.astype(float))].astype(float)
            assert results[name].wasserstein == pytest.approx(
                wasserstein_distance(finite_ref, finite_cur), rel=1e-9
            )
        else:
            core = categorical_drift(build_categorical_reference(ref_x, name=name), cur_x)
        assert results[name] == core
    assert results["c"].unseen_categories == ("w",)
    assert results["b"].n_missing_current == cur_t.column("b").null_count


def test_fan_out_equals_single_run(files: tuple) -> None:
    ref_path, cur_path, _, _ = files
    refs = build_references_from_parquet(ref_path, FEATURES)
    together = drift_from_parquet(cur_path, refs, max_workers=2)
    for order in itertools.islice(itertools.permutations(FEATURES), 0, 120, 37):
        one_by_one = []
        for name in order:
            single_ref = build_references_from_parquet(ref_path, {name: FEATURES[name]})
            one_by_one += drift_from_parquet(cur_path, single_ref, max_workers=1)
        assert summarise(one_by_one) == summarise(together)


def test_missing_column_names_column_and_file(files: tuple, tmp_path: Path) -> None:
    ref_path, _, _, cur_t = files
    refs = build_references_from_parquet(ref_path, FEATURES)
    path = tmp_path / "no_b.parquet"
    pq.write_table(cur_t.drop_columns(["b"]), path)
    with pytest.raises(ValueError, match=r"column 'b' is missing from .*no_b\.parquet"):
        drift_from_parquet(path, refs)


@pytest.mark.parametrize(
    "column, new_values, expected, actual",
    [
        ("a", pa.array(["1.0"] * 3), "numeric", "string"),
        ("c", pa.array([1.0, 2.0, 3.0]), "categorical", "double"),
    ],
    ids=["numeric-became-string", "string-became-numeric"],
)
def test_changed_type_names_column_expected_and_actual(
    files: tuple, tmp_path: Path, column: str, new_values: pa.Array, expected: str, actual: str
) -> None:
    ref_path, _, _, _ = files
    refs = build_references_from_parquet(ref_path, FEATURES)
    path = tmp_path / "changed.parquet"
    other = {
        n: pa.array([None] * 3, type=pa.float64() if k == "numeric" else pa.string())
        for n, k in FEATURES.items()
        if n != column
    }
    pq.write_table(pa.table({column: new_values, **other}), path)
    with pytest.raises(
        ValueError, match=rf"column '{column}'.*expected {expected}.*got '{actual}'"
    ):
        drift_from_parquet(path, refs)


def test_empty_file(files: tuple, tmp_path: Path) -> None:
    ref_path, _, ref_t, _ = files
    path = tmp_path / "empty.parquet"
    pq.write_table(ref_t.slice(0, 0), path)
    results = drift_from_parquet(path, build_references_from_parquet(ref_path, FEATURES))
    assert [r.verdict for r in results] == ["no_data"] * len(FEATURES)
    with pytest.raises(ValueError, match=r"column 'a' in .*empty\.parquet.* no rows"):
        build_references_from_parquet(path, {"a": "numeric"})


def test_bad_kind_and_mismatched_reference(files: tuple) -> None:
    ref_path, cur_path, _, _ = files
    with pytest.raises(ValueError, match="kind of feature 'a'"):
        build_references_from_parquet(ref_path, {"a": "text"})  # type: ignore[dict-item]
    refs = build_references_from_parquet(ref_path, {"a": "numeric"})
    with pytest.raises(ValueError, match="sketch of 'a'"):
        drift_from_parquet(cur_path, {"b": refs["a"]})


# --- column decoding from Arrow buffers, against pyarrow.compute ------------------------------

from modelgate.pipelines.drift.columns import _counts, _sorted_finite  # noqa: E402

_NUMERIC_COLUMNS = {
    "float64": pa.chunked_array([[1.5, None, np.nan, -np.inf, 0.25], [3.0]]),
    "float32_sliced": pa.chunked_array([pa.array([9.0, 1.0, None, 2.0], pa.float32()).slice(1)]),
    "float16": pa.chunked_array([pa.array(np.array([2.0, 1.0, np.inf], np.float16))]),
    "int64_nulls": pa.chunked_array([[5, None, -3], [None, 7]], pa.int64()),
    "int8_sliced": pa.chunked_array([pa.array([1, None, -2, 4, None], pa.int8()).slice(2, 3)]),
    "uint32": pa.chunked_array([[4_000_000_000, 0, 17]], pa.uint32()),
    "all_null": pa.chunked_array([pa.nulls(4, pa.float64())]),
    "empty": pa.chunked_array([], pa.float64()),
}


@pytest.mark.parametrize("name", list(_NUMERIC_COLUMNS))
def test_sorted_finite_equals_arrow_cast(name: str) -> None:
    import pyarrow.compute as pc

    col = _NUMERIC_COLUMNS[name]
    values, n_missing = _sorted_finite(col)
    as_float = col.cast(pa.float64()).to_pandas().to_numpy(dtype=float)  # nulls -> NaN
    finite = as_float[np.isfinite(as_float)]
    np.testing.assert_array_equal(values, np.sort(finite))
    assert values.dtype == np.float64 and values.flags.writeable
    assert n_missing == len(col) - finite.size
    assert n_missing == col.null_count + int(pc.sum(pc.invert(pc.is_finite(col))).as_py() or 0)


_CATEGORICAL_COLUMNS = {
    "dictionary_chunks": pa.chunked_array(
        [pa.array(["a", "b", None, "a"]).dictionary_encode(), pa.array(["c", None, "a"]).dictionary_encode()]
    ),
    "dictionary_sliced": pa.chunked_array(
        [pa.array(["a", "b", None, "a", "b"]).dictionary_encode().slice(2)]
    ),
    "dictionary_unused_entry": pa.chunked_array(
        [pa.DictionaryArray.from_arrays(pa.array([0, 0, None], pa.int8()), pa.array(["x", "never"]))]
    ),
    "boolean": pa.chunked_array([[True, None, False, True], [False]]),
    "plain_string": pa.chunked_array([pa.array(["x", None, "y", "x"])]),
}


@pytest.mark.parametrize("name", list(_CATEGORICAL_COLUMNS))
def test_counts_equal_arrow_value_counts(name: str) -> None:
    import pyarrow.compute as pc

    col = _CATEGORICAL_COLUMNS[name]
    expected: dict[str, int] = {}
    for row in pc.value_counts(col.cast(col.type.value_type) if pa.types.is_dictionary(col.type)
                               else col).to_pylist():
        key = "__missing__" if row["values"] is None else str(row["values"])
        expected[key] = expected.get(key, 0) + row["counts"]
    assert _counts(col) == expected
