"""Tests for modelgate.onnx.scoring with a real ONNX Runtime session on a tiny skl2onnx model."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from modelgate.onnx.artifact import LoadedModel, package, verify
from modelgate.onnx.scoring import (
    ModelScorer,
    ScoringError,
    SessionSettings,
    open_session,
    score_parquet,
    settings_from_os_environ,
)

CATS = np.array(["red", "green", "blue"], dtype=object)


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "row_id": np.arange(n, dtype=np.int64) + 1000,
        "x1": rng.normal(size=n),
        "x2": rng.integers(0, 50, size=n).astype(np.int64),
        "c": CATS[rng.integers(0, 3, size=n)],
        "group": rng.choice(["a", "b"], size=n),
    })


def _sk_input(frame: pd.DataFrame) -> pd.DataFrame:
    """What both runtimes see: float32 numerics (the scorer feeds float32)."""
    return frame[["x1", "x2", "c"]].astype({"x1": np.float32, "x2": np.float32})


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Pipeline, LoadedModel]:
    rng = np.random.default_rng(7)
    frame = _frame(rng, 2000)
    logit = 0.8 * frame["x1"] - 0.05 * frame["x2"] + (frame["c"] == "red") * 1.5
    y = (logit + rng.normal(scale=0.5, size=len(frame)) > 0).astype(int)
    pipe = Pipeline([
        ("pre", ColumnTransformer([("num", StandardScaler(), ["x1", "x2"]),
                                   ("cat", OneHotEncoder(handle_unknown="ignore"), ["c"])])),
        ("clf", LogisticRegression()),
    ])
    pipe.fit(_sk_input(frame), y)
    types = [("x1", FloatTensorType([None, 1])), ("x2", FloatTensorType([None, 1])),
             ("c", StringTensorType([None, 1]))]
    onx = convert_sklearn(pipe, initial_types=types,
                          options={id(pipe.named_steps["clf"]): {"zipmap": False}},
                          target_opset={"": 17, "ai.onnx.ml": 3})
    # skl2onnx may pick an opset below the target: record the one the graph really has
    opset = next(o.version for o in onx.opset_import if o.domain == "")
    src = tmp_path_factory.mktemp("model")
    (src / "model.onnx").write_bytes(onx.SerializeToString())
    (src / "manifest.json").write_text(json.dumps({
        "format_version": 1, "name": "toy", "version": "1", "opset": opset,
        "features": [{"name": "x1", "kind": "numeric"}, {"name": "x2", "kind": "numeric"},
                     {"name": "c", "kind": "categorical"}],
        "label": {"column": "y", "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1},
        "threshold": 0.4, "sensitive_features": ["group"], "id_column": "row_id",
    }))
    return pipe, verify(package(src / "model.onnx", src / "manifest.json", src / "out"))


@pytest.fixture(scope="module")
def scorer(trained: tuple[Pipeline, LoadedModel]) -> ModelScorer:
    return open_session(trained[1], SessionSettings(provider="cpu", intra_op_threads=1))


def _allowing_missing(model: LoadedModel) -> LoadedModel:
    features = tuple(dataclasses.replace(f, allow_missing=True) for f in model.manifest.features)
    manifest = dataclasses.replace(model.manifest, features=features)
    return dataclasses.replace(model, manifest=manifest)


# --- predict_proba ---------------------------------------------------------------------------

def test_predict_proba_matches_sklearn(trained: tuple[Pipeline, LoadedModel],
                                       scorer: ModelScorer) -> None:
    frame = _frame(np.random.default_rng(1), 500)
    got = scorer.predict_proba(frame)
    expected = trained[0].predict_proba(_sk_input(frame))[:, 1]
    assert got.dtype == np.float64 and got.shape == (500,)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)


def test_column_order_and_extra_columns_do_not_matter(scorer: ModelScorer) -> None:
    frame = _frame(np.random.default_rng(2), 50)
    shuffled = frame[["group", "c", "row_id", "x2", "x1"]]
    np.testing.assert_array_equal(scorer.predict_proba(frame), scorer.predict_proba(shuffled))


def test_categorical_dtypes_are_stringified(scorer: ModelScorer) -> None:
    frame = _frame(np.random.default_rng(3), 80)
    as_category = frame.assign(c=frame["c"].astype("category"))
    np.testing.assert_array_equal(scorer.predict_proba(frame), scorer.predict_proba(as_category))


def test_empty_frame_gives_empty_scores(scorer: ModelScorer) -> None:
    assert scorer.predict_proba(_frame(np.random.default_rng(0), 0)).shape == (0,)


def test_missing_column_is_named(scorer: ModelScorer) -> None:
    frame = _frame(np.random.default_rng(4), 10).drop(columns="x2")
    with pytest.raises(ScoringError, match="column 'x2' is missing"):
        scorer.predict_proba(frame)


@pytest.mark.parametrize("values", [["1.0"] * 10, [True] * 10], ids=["strings", "bools"])
def test_wrong_numeric_dtype_names_column_and_dtypes(scorer: ModelScorer, values: list) -> None:
    frame = _frame(np.random.default_rng(5), 10).assign(x1=values)
    dtype = str(frame["x1"].dtype)
    with pytest.raises(ScoringError, match="column 'x1': expected a numeric dtype") as err:
        scorer.predict_proba(frame)
    assert repr(dtype) in str(err.value)


def test_nan_counts_rows_without_showing_them(scorer: ModelScorer) -> None:
    frame = _frame(np.random.default_rng(6), 20)
    frame.loc[[2, 5, 11], "x1"] = np.nan
    with pytest.raises(ScoringError, match="column 'x1': 3 rows are missing") as err:
        scorer.predict_proba(frame)
    assert not re.search(r"\b(red|green|blue)\b", str(err.value))


def test_nullable_integer_na_counts_as_missing(scorer: ModelScorer) -> None:
    frame = _frame(np.random.default_rng(6), 20)
    frame["x2"] = pd.array([None, *range(19)], dtype="Int64")
    with pytest.raises(ScoringError, match="column 'x2': 1 rows are missing"):
        scorer.predict_proba(frame)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, 1e300], ids=["inf", "-inf", "float32-overflow"])
def test_infinite_values_are_refused(scorer: ModelScorer, bad: float) -> None:
    frame = _frame(np.random.default_rng(7), 20)
    frame.loc[3, "x1"] = bad
    with pytest.raises(ScoringError, match="column 'x1': 1 rows are infinite"):
        scorer.predict_proba(frame)


def test_missing_categorical_refused_unless_allowed(trained: tuple[Pipeline, LoadedModel],
                                                    scorer: ModelScorer) -> None:
    frame = _frame(np.random.default_rng(8), 30)
    frame.loc[[0, 9], "c"] = None
    with pytest.raises(ScoringError, match="column 'c': 2 rows are missing"):
        scorer.predict_proba(frame)
    lenient = open_session(_allowing_missing(trained[1]), SessionSettings(provider="cpu"))
    got = lenient.predict_proba(frame)
    # "" is an unknown category for the encoder (handle_unknown="ignore") -> all-zero one-hot
    expected = trained[0].predict_proba(_sk_input(frame.fillna({"c": ""})))[:, 1]
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)


# --- score_parquet ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def parquet_in(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    frame = _frame(np.random.default_rng(11), 5000)
    path = tmp_path_factory.mktemp("data") / "in.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=1500)
    return path, frame


def test_score_parquet_matches_sklearn(trained: tuple[Pipeline, LoadedModel], scorer: ModelScorer,
                                       parquet_in: tuple[Path, pd.DataFrame],
                                       tmp_path: Path) -> None:
    path, frame = parquet_in
    run = score_parquet(scorer, path, tmp_path / "scores.parquet", batch_rows=4096,
                        id_column="row_id", keep_columns=("group",))
    out = pq.read_table(run.output_path)
    assert out.schema.names == ["row_id", "score", "prediction", "group"]
    assert out.schema.field("score").type == pa.float64()
    assert out.schema.field("prediction").type == pa.int8()
    result = out.to_pandas()
    expected = trained[0].predict_proba(_sk_input(frame))[:, 1]
    np.testing.assert_allclose(result["score"].to_numpy(), expected, atol=1e-5, rtol=0)
    np.testing.assert_array_equal(result["row_id"].to_numpy(), frame["row_id"].to_numpy())
    np.testing.assert_array_equal(result["group"].to_numpy(), frame["group"].to_numpy())
    np.testing.assert_array_equal(result["prediction"].to_numpy(),
                                  (result["score"].to_numpy() >= 0.4).astype(np.int8))
    assert run.rows == 5000 and run.provider == "CPUExecutionProvider"
    assert run.input_fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()
    assert run.rows_per_s == pytest.approx(run.rows / run.seconds)


def test_batch_size_does_not_change_output(scorer: ModelScorer,
                                           parquet_in: tuple[Path, pd.DataFrame],
                                           tmp_path: Path) -> None:
    path, _ = parquet_in
    small = score_parquet(scorer, path, tmp_path / "small.parquet", batch_rows=333,
                          id_column="row_id")
    big = score_parquet(scorer, path, tmp_path / "big.parquet", batch_rows=1_000_000,
                        id_column="row_id")
    assert pq.read_table(small.output_path).equals(pq.read_table(big.output_path))


def test_kept_feature_column_keeps_its_file_type(scorer: ModelScorer,
                                                parquet_in: tuple[Path, pd.DataFrame],
                                                tmp_path: Path) -> None:
    path, frame = parquet_in
    run = score_parquet(scorer, path, tmp_path / "s.parquet", keep_columns=("c", "x2"))
    out = pq.read_table(run.output_path)
    source = pq.read_schema(path)
    assert out.schema.field("c").type == source.field("c").type
    assert out.column("c").to_pylist() == frame["c"].tolist()


def test_on_batch_gets_the_written_tables_in_order_off_the_callers_thread(
        scorer: ModelScorer, parquet_in: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    import threading

    seen: list[pa.Table] = []
    threads: set[int] = set()

    def on_batch(table: pa.Table) -> None:
        threads.add(threading.get_ident())
        seen.append(table)

    run = score_parquet(scorer, parquet_in[0], tmp_path / "s.parquet", batch_rows=700,
                        id_column="row_id", keep_columns=("group",), on_batch=on_batch)
    assert len(seen) > 7 and sum(t.num_rows for t in seen) == 5000  # batches end at row groups too
    assert pa.concat_tables(seen).equals(pq.read_table(run.output_path))
    assert threads and threading.get_ident() not in threads  # the writer thread calls it


def test_a_failing_on_batch_fails_the_run_and_leaves_no_output(
        scorer: ModelScorer, parquet_in: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    calls: list[int] = []

    def on_batch(table: pa.Table) -> None:
        calls.append(table.num_rows)
        if len(calls) == 2:
            raise ValueError("summary refused the batch")

    with pytest.raises(ValueError, match="summary refused the batch"):
        score_parquet(scorer, parquet_in[0], tmp_path / "s.parquet", batch_rows=500,
                      on_batch=on_batch)
    assert len(calls) == 2  # nothing handed on after the failure
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_without_id_column(scorer: ModelScorer, parquet_in: tuple[Path, pd.DataFrame],
                           tmp_path: Path) -> None:
    run = score_parquet(scorer, parquet_in[0], tmp_path / "s.parquet")
    assert pq.read_schema(run.output_path).names == ["score", "prediction"]


def test_progress_logs_counts_not_rows(scorer: ModelScorer, parquet_in: tuple[Path, pd.DataFrame],
                                       tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="modelgate.onnx.scoring"):
        score_parquet(scorer, parquet_in[0], tmp_path / "s.parquet", batch_rows=1000)
    messages = [r.getMessage() for r in caplog.records if r.name == "modelgate.onnx.scoring"]
    assert any("scored 5000 rows" in m for m in messages)
    assert not any(re.search(r"\b(red|green|blue)\b", m) for m in messages)


def test_missing_parquet_column_is_named(scorer: ModelScorer,
                                         parquet_in: tuple[Path, pd.DataFrame],
                                         tmp_path: Path) -> None:
    with pytest.raises(ScoringError, match="column 'user_id' is missing from parquet file"):
        score_parquet(scorer, parquet_in[0], tmp_path / "s.parquet", id_column="user_id")


def test_bad_batch_in_file_leaves_no_output(scorer: ModelScorer, tmp_path: Path) -> None:
    frame = _frame(np.random.default_rng(12), 300)
    frame.loc[250, "x2"] = np.nan  # second batch only
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), src)
    out = tmp_path / "s.parquet"
    with pytest.raises(ScoringError, match="column 'x2': 1 rows are missing"):
        score_parquet(scorer, src, out, batch_rows=200)
    assert list(tmp_path.iterdir()) == [src]


def test_empty_parquet(scorer: ModelScorer, tmp_path: Path) -> None:
    src = tmp_path / "empty.parquet"
    pq.write_table(pa.Table.from_pandas(_frame(np.random.default_rng(0), 0),
                                        preserve_index=False), src)
    with pytest.raises(ScoringError, match="empty.parquet' has no rows"):
        score_parquet(scorer, src, tmp_path / "s.parquet")


def test_truncated_parquet_names_file(scorer: ModelScorer, parquet_in: tuple[Path, pd.DataFrame],
                                      tmp_path: Path) -> None:
    data = parquet_in[0].read_bytes()
    src = tmp_path / "cut.parquet"
    src.write_bytes(data[: len(data) // 2])
    with pytest.raises(ScoringError, match="cut.parquet"):
        score_parquet(scorer, src, tmp_path / "s.parquet")


def test_corrupt_page_names_file(scorer: ModelScorer, parquet_in: tuple[Path, pd.DataFrame],
                                 tmp_path: Path) -> None:
    data = bytearray(parquet_in[0].read_bytes())
    noise = np.random.default_rng(0).integers(0, 256, 2996, dtype=np.uint8).tobytes()
    data[4:3000] = noise  # garble the first page headers, keep magic bytes and footer
    src = tmp_path / "zeroed.parquet"
    src.write_bytes(bytes(data))
    with pytest.raises(ScoringError, match="zeroed.parquet"):  # row_id is the first chunk
        score_parquet(scorer, src, tmp_path / "s.parquet", id_column="row_id")
    assert not (tmp_path / "s.parquet").exists()


@pytest.mark.parametrize("batch_rows", [0, -5, 2.5, True],
                         ids=["zero", "negative", "float", "bool"])
def test_bad_batch_rows(scorer: ModelScorer, parquet_in: tuple[Path, pd.DataFrame],
                        tmp_path: Path, batch_rows: object) -> None:
    with pytest.raises(ScoringError, match="batch_rows: expected a positive integer"):
        score_parquet(scorer, parquet_in[0], tmp_path / "s.parquet",
                      batch_rows=batch_rows)  # type: ignore[arg-type]


# --- settings and providers ------------------------------------------------------------------

def test_settings_from_env() -> None:
    settings = SessionSettings.from_env({
        "MODELGATE_ORT_PROVIDER": "CUDA", "MODELGATE_ORT_GRAPH_OPT": "basic",
        "MODELGATE_ORT_INTRA_OP_THREADS": "3", "MODELGATE_ORT_GPU_MEM_LIMIT_MB": "512",
        "MODELGATE_ORT_PARALLEL_RUNS": "4", "UNRELATED": "x"})
    assert settings == SessionSettings(provider="cuda", graph_optimization_level="basic",
                                       intra_op_threads=3, gpu_mem_limit_mb=512, parallel_runs=4)
    assert SessionSettings.from_env({}) == SessionSettings()
    assert SessionSettings.from_env({"MODELGATE_ORT_PROVIDER": ""}).provider == "auto"


@pytest.mark.parametrize(("key", "value"), [
    ("MODELGATE_ORT_PROVIDER", "tpu"),
    ("MODELGATE_ORT_GRAPH_OPT", "max"),
    ("MODELGATE_ORT_INTRA_OP_THREADS", "two"),
    ("MODELGATE_ORT_INTRA_OP_THREADS", "0"),
    ("MODELGATE_ORT_GPU_MEM_LIMIT_MB", "-1"),
    ("MODELGATE_ORT_PARALLEL_RUNS", "0"),
], ids=["provider", "graph-opt", "threads-text", "threads-zero", "mem-negative", "runs-zero"])
def test_settings_from_env_errors_name_variable(key: str, value: str) -> None:
    with pytest.raises(ScoringError, match=f"{key}: expected .*got {value!r}"):
        SessionSettings.from_env({key: value})


def test_settings_from_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELGATE_ORT_GRAPH_OPT", "extended")
    monkeypatch.delenv("MODELGATE_ORT_PROVIDER", raising=False)
    settings = settings_from_os_environ()
    assert (settings.provider, settings.graph_optimization_level) == ("auto", "extended")


def test_settings_validate_direct_construction() -> None:
    with pytest.raises(ScoringError, match="provider: expected"):
        SessionSettings(provider="gpu")  # type: ignore[arg-type]
    with pytest.raises(ScoringError, match="intra_op_threads: expected"):
        SessionSettings(intra_op_threads=0)


@pytest.mark.parametrize(("settings", "cuda", "expected"), [
    (SessionSettings(), False, (1, 6)),  # CPU: one single-threaded run per core
    (SessionSettings(), True, (None, 1)),  # CUDA listed: one run, ORT's own threads
    (SessionSettings(intra_op_threads=3), False, (3, 1)),  # explicit threads: as before
    (SessionSettings(parallel_runs=2), False, (1, 2)),
    (SessionSettings(parallel_runs=1), False, (None, 1)),
    (SessionSettings(intra_op_threads=2, parallel_runs=3), True, (2, 3)),
])
def test_resolved_threads(settings: SessionSettings, cuda: bool,
                          expected: tuple[int | None, int]) -> None:
    assert settings.resolved_threads(cuda=cuda, cores=6) == expected


@pytest.mark.parametrize("n", [0, 1, 2047, 2048, 4097, 50_001])
def test_parallel_runs_give_the_single_runs_scores(trained: tuple[Pipeline, LoadedModel],
                                                   n: int) -> None:
    one = open_session(trained[1], SessionSettings(provider="cpu", parallel_runs=1))
    three = open_session(trained[1], SessionSettings(provider="cpu", parallel_runs=3))
    assert (one.parallel_runs, three.parallel_runs) == (1, 3)
    frame = _frame(np.random.default_rng(n), n)
    np.testing.assert_array_equal(three.predict_proba(frame), one.predict_proba(frame))


def test_a_failing_slice_fails_the_whole_prediction(trained: tuple[Pipeline, LoadedModel]) -> None:
    """An ONNX Runtime error in one parallel slice reaches the caller (nothing half-scored)."""
    three = open_session(trained[1], SessionSettings(provider="cpu", parallel_runs=3))
    feeds = three.feeds(_frame(np.random.default_rng(1), 9000))
    feeds["x1"] = feeds["x1"].astype(np.float64)  # wrong element type for the graph
    with pytest.raises(Exception, match="Unexpected input data type"):  # noqa: B017 - ORT type
        three._run(feeds, 9000)


@pytest.mark.parametrize("level", ["disable", "basic", "extended", "all"])
def test_all_optimisation_levels_score_alike(trained: tuple[Pipeline, LoadedModel],
                                             scorer: ModelScorer, level: str) -> None:
    other = open_session(trained[1], SessionSettings(provider="cpu",
                                                     graph_optimization_level=level))  # type: ignore[arg-type]
    frame = _frame(np.random.default_rng(9), 100)
    np.testing.assert_allclose(other.predict_proba(frame), scorer.predict_proba(frame),
                               atol=1e-6, rtol=0)


needs_no_cuda = pytest.mark.skipif("CUDAExecutionProvider" in ort.get_available_providers(),
                                   reason="this machine really has CUDA")


@needs_no_cuda
def test_auto_runs_on_cpu_here(trained: tuple[Pipeline, LoadedModel]) -> None:
    scorer = open_session(trained[1], SessionSettings(provider="auto"))
    assert scorer.provider == "CPUExecutionProvider"
    assert scorer.session.get_providers()[0] == scorer.provider


@needs_no_cuda
def test_cuda_requested_without_cuda_fails(trained: tuple[Pipeline, LoadedModel]) -> None:
    with pytest.raises(ScoringError, match="provider 'cuda' requested but ONNX Runtime offers"):
        open_session(trained[1], SessionSettings(provider="cuda"))


@needs_no_cuda
@pytest.mark.filterwarnings("ignore:Specified provider 'CUDAExecutionProvider'")
def test_cuda_listed_but_not_loading_is_detected(trained: tuple[Pipeline, LoadedModel],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # The CPU wheel cannot load CUDA; pretending it is listed makes ONNX Runtime fall
    # back for real, which the scorer must notice through session.get_providers().
    # (`auto` with CUDA listed: tests/onnx/test_devices.py, on a model `auto` sends to CUDA;
    # this logistic regression is all ai.onnx.ml operators, so `auto` keeps it on the CPU.)
    monkeypatch.setattr(ort, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    scorer = open_session(trained[1], SessionSettings(provider="auto", gpu_mem_limit_mb=64))
    assert scorer.provider == "CPUExecutionProvider"
    # 6 nodes: the Concat in front of the encoder is folded away (modelgate.onnx.encoder_cones)
    assert re.fullmatch(r"auto: CPU, 8\d% of the graph is in operators CUDA lacks \(3 of 6 nodes\)",
                        scorer.provider_reason), scorer.provider_reason
    with pytest.raises(ScoringError, match="fell back to 'CPUExecutionProvider'"):
        open_session(trained[1], SessionSettings(provider="cuda"))



@pytest.mark.e2e
def test_missing_categorical_column_is_named_not_a_bare_keyerror(tmp_path: Path) -> None:
    """A categorical feature missing from the file gets the usual clear error (regression:
    pyarrow's read_dictionary raised KeyError(b'name') before the column check)."""
    from modelgate.demo.data import build_demo

    build = build_demo(tmp_path / "demo", version="1", variant="baseline")
    scorer = open_session(verify(build.archive_path))
    broken = tmp_path / "broken.parquet"
    pq.write_table(pq.read_table(build.heldout_path).drop_columns(["educcat"]), broken)
    with pytest.raises(ScoringError, match="column 'educcat' is missing from parquet file"):
        score_parquet(scorer, broken, tmp_path / "out.parquet")


def _score_in_child(scorer: ModelScorer, frame: pd.DataFrame, queue: object) -> None:
    queue.put(scorer.predict_proba(frame))  # type: ignore[attr-defined]


def test_parallel_runs_work_in_a_forked_child(trained: tuple[Pipeline, LoadedModel]) -> None:
    """A prefork worker inherits the run pool without its threads; it must not hang."""
    import multiprocessing

    two = open_session(trained[1], SessionSettings(provider="cpu", parallel_runs=2))
    frame = _frame(np.random.default_rng(4), 9000)
    expected = two.predict_proba(frame)  # the parent's pool now exists, with threads
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_score_in_child, args=(two, frame, queue))
    child.start()
    try:
        got = queue.get(timeout=30)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    np.testing.assert_array_equal(got, expected)
