"""Device choice, CUDA options, slicing and the out-of-memory retry, all on the CPU.

There is no GPU here: CUDA sessions cannot be opened, so the CUDA side is checked through
what modelgate hands ONNX Runtime (provider list and options), and an arena out-of-memory
error is simulated with a session stand-in that raises ONNX Runtime's own exception type
with the message the H200 run printed (issue #13). Everything else is a real session.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException
from skl2onnx import to_onnx
from sklearn.ensemble import RandomForestClassifier
from sklearn.neural_network import MLPClassifier

from modelgate import cli
from modelgate.onnx import devices
from modelgate.onnx.artifact import LoadedModel, package, verify
from modelgate.onnx.scoring import ModelScorer, ScoringError, SessionSettings, open_session

N_FEATURES = 6
# The message ONNX Runtime's BFC arena gave on the H200 with a 256 MiB limit (issue #13).
ARENA_OOM = ("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while "
             "running MatMul node. Name:'MatMul' Status Message: Available memory of 1048576 is "
             "smaller than requested bytes of 204800000")
CUDA_LISTED = ["CUDAExecutionProvider", "CPUExecutionProvider"]


def _data(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, N_FEATURES))
    y = (x[:, 0] + 0.5 * x[:, 1] * x[:, 2] > 0).astype(int)
    return pd.DataFrame(x, columns=[f"x{i}" for i in range(N_FEATURES)]), y


def _archive(estimator: Any, tmp: Path, name: str) -> LoadedModel:
    """A real skl2onnx graph with one float ``[N, 1]`` input per feature, packaged."""
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    frame, y = _data(500, 0)
    columns = list(frame.columns)
    pipe = Pipeline([("pre", ColumnTransformer([("num", "passthrough", columns)])),
                     ("clf", estimator)]).fit(frame.astype(np.float32), y)
    onx = to_onnx(pipe, initial_types=[(c, FloatTensorType([None, 1])) for c in columns],
                  options={id(estimator): {"zipmap": False}}, target_opset={"": 17, "ai.onnx.ml": 3})
    opset = next(o.version for o in onx.opset_import if o.domain == "")
    tmp.mkdir()
    (tmp / "model.onnx").write_bytes(onx.SerializeToString())
    (tmp / "manifest.json").write_text(json.dumps({
        "format_version": 1, "name": name, "version": "1", "opset": opset,
        "features": [{"name": c, "kind": "numeric"} for c in columns],
        "label": {"column": "y", "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1},
        "threshold": 0.5, "sensitive_features": [],
    }))
    return verify(package(tmp / "model.onnx", tmp / "manifest.json", tmp / "out"))


@pytest.fixture(scope="module")
def forest(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    return _archive(RandomForestClassifier(n_estimators=20, random_state=0),
                    tmp_path_factory.mktemp("rf") / "m", "forest")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    return _archive(MLPClassifier(hidden_layer_sizes=(32, 16), max_iter=300, random_state=0),
                    tmp_path_factory.mktemp("mlp") / "m", "mlp")


@pytest.fixture
def cuda_listed(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """ONNX Runtime pretends to offer CUDA; the providers handed to each session are kept.

    The CPU wheel then falls back to the CPU for real (which open_session must notice).
    """
    opened: list[dict[str, Any]] = []
    real = ort.InferenceSession

    def spy(model: bytes, sess_options: Any = None, providers: Any = None) -> Any:
        opened.append({"providers": providers, "options": sess_options})
        return real(model, sess_options=sess_options, providers=providers)

    monkeypatch.setattr(ort, "get_available_providers", lambda: list(CUDA_LISTED))
    monkeypatch.setattr(ort, "InferenceSession", spy)
    return opened


# --- per-model provider choice ---------------------------------------------------------------

def _ml_nodes(loaded: LoadedModel) -> int:
    return sum(n.domain == "ai.onnx.ml" for n in onnx.load_from_string(loaded.onnx_bytes).graph.node)


def test_tree_ensemble_is_mostly_work_cuda_lacks_and_the_mlp_is_not(
        forest: LoadedModel, mlp: LoadedModel) -> None:
    trees, net = devices.graph_work(forest.onnx_bytes), devices.graph_work(mlp.onnx_bytes)
    ops = {n.op_type for n in onnx.load_from_string(forest.onnx_bytes).graph.node}
    assert "TreeEnsembleClassifier" in ops
    assert trees.cuda_lacking_nodes == _ml_nodes(forest) >= 1
    assert trees.cuda_lacking_share > 0.9
    assert net.cuda_lacking_share < 0.1


@pytest.mark.filterwarnings("ignore:Specified provider 'CUDAExecutionProvider'")
def test_auto_keeps_the_forest_on_the_cpu_and_sends_the_mlp_to_cuda(
        forest: LoadedModel, mlp: LoadedModel, cuda_listed: list[dict[str, Any]],
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="modelgate.onnx.scoring"):
        trees = open_session(forest, SessionSettings(provider="auto"))
        net = open_session(mlp, SessionSettings(provider="auto"))
    assert cuda_listed[0]["providers"] == ["CPUExecutionProvider"]
    assert re.fullmatch(r"auto: CPU, (9\d|100)% of the graph is in operators CUDA lacks \(\d+ of \d+ nodes\)",
                        trees.provider_reason), trees.provider_reason
    assert cuda_listed[1]["providers"][0] == ("CUDAExecutionProvider", {"use_tf32": "0"})
    # the CPU wheel cannot load CUDA: ONNX Runtime fell back, and the reason says so
    assert net.provider == "CPUExecutionProvider" and net.gpu_slices is None
    assert net.provider_reason.startswith("auto: CUDA, ")
    assert net.provider_reason.endswith("; CUDA failed to load, ran on CPUExecutionProvider")
    assert any("runs on CPUExecutionProvider" in r.getMessage() for r in caplog.records)


@pytest.mark.filterwarnings("ignore:Specified provider 'CUDAExecutionProvider'")
def test_cuda_requested_is_honoured_even_for_trees(forest: LoadedModel,
                                                   cuda_listed: list[dict[str, Any]]) -> None:
    with pytest.raises(ScoringError, match="fell back to 'CPUExecutionProvider'"):
        open_session(forest, SessionSettings(provider="cuda"))
    assert cuda_listed[0]["providers"][0][0] == "CUDAExecutionProvider"


@pytest.mark.parametrize(("requested", "available", "first", "reason"), [
    ("cpu", CUDA_LISTED, "CPUExecutionProvider", "cpu requested"),
    ("auto", ["CPUExecutionProvider"], "CPUExecutionProvider",
     "auto: CPU, ONNX Runtime offers no CUDA provider"),
    ("auto", CUDA_LISTED, "CUDAExecutionProvider",
     "auto: CUDA, 50% of the graph is in operators CUDA lacks (1 of 2 nodes)"),
    ("cuda", CUDA_LISTED, "CUDAExecutionProvider",
     "cuda requested; 50% of the graph is in operators CUDA lacks (1 of 2 nodes)"),
], ids=["cpu", "auto-no-cuda", "auto-half-stays-on-cuda", "cuda"])
def test_choose_device(requested: devices.Requested, available: list[str], first: str,
                       reason: str) -> None:
    half = devices.GraphWork(nodes=2, cuda_lacking_nodes=1, cuda_lacking_share=0.5,
                             activation_bytes_per_row=256)
    choice = devices.choose_device(requested, available, half, cuda_options={"use_tf32": "0"})
    head = choice.providers[0]
    assert (head[0] if isinstance(head, tuple) else head, choice.reason) == (first, reason)


def test_cuda_requested_without_cuda_names_what_is_offered() -> None:
    work = devices.GraphWork(nodes=1, cuda_lacking_nodes=0, cuda_lacking_share=0.0,
                             activation_bytes_per_row=256)
    with pytest.raises(ValueError, match=r"offers only \['CPUExecutionProvider'\]"):
        devices.choose_device("cuda", ["CPUExecutionProvider"], work, cuda_options={})


# --- TF32, memory limit and log settings -------------------------------------------------------

@pytest.mark.filterwarnings("ignore:Specified provider 'CUDAExecutionProvider'")
@pytest.mark.parametrize(("env", "options"), [
    ({}, {"use_tf32": "0"}),
    ({"MODELGATE_ORT_ALLOW_TF32": "true"}, {"use_tf32": "1"}),
    ({"MODELGATE_ORT_GPU_MEM_LIMIT_MB": "256"},
     {"use_tf32": "0", "gpu_mem_limit": str(256 * 1024 * 1024),
      "arena_extend_strategy": "kSameAsRequested"}),
], ids=["default-tf32-off", "tf32-allowed", "memory-limit"])
def test_cuda_options_handed_to_onnx_runtime(mlp: LoadedModel, cuda_listed: list[dict[str, Any]],
                                             env: dict[str, str], options: dict[str, str]) -> None:
    scorer = open_session(mlp, SessionSettings.from_env({"MODELGATE_ORT_PROVIDER": "auto", **env}))
    assert cuda_listed[0]["providers"] == [("CUDAExecutionProvider", options), "CPUExecutionProvider"]
    assert scorer.tf32_allowed is False  # it ran on the CPU: no TF32 there, whatever was allowed


@pytest.mark.parametrize(("env", "message"), [
    ({"MODELGATE_ORT_ALLOW_TF32": "maybe"}, "MODELGATE_ORT_ALLOW_TF32: expected true or false, got 'maybe'"),
    ({"MODELGATE_ORT_LOG_LEVEL": "loud"}, "MODELGATE_ORT_LOG_LEVEL: expected one of"),
], ids=["tf32", "log-level"])
def test_bad_device_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ScoringError, match=re.escape(message)):
        SessionSettings.from_env(env)


def test_device_settings_from_env() -> None:
    settings = SessionSettings.from_env({"MODELGATE_ORT_ALLOW_TF32": "1",
                                         "MODELGATE_ORT_LOG_LEVEL": "warning"})
    assert (settings.allow_tf32, settings.ort_log_level) == (True, "warning")
    assert (SessionSettings().allow_tf32, SessionSettings().ort_log_level) == (False, "error")
    with pytest.raises(ScoringError, match="allow_tf32: expected True or False, got 'yes'"):
        SessionSettings(allow_tf32="yes")  # type: ignore[arg-type]


def test_onnx_runtime_log_is_errors_only_by_default_and_warnings_with_debug(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from modelgate.onnx.settings import session_options

    assert session_options(SessionSettings()).log_severity_level == 3  # ORT_LOGGING_LEVEL_ERROR
    assert session_options(SessionSettings(ort_log_level="warning")).log_severity_level == 2
    monkeypatch.delenv("MODELGATE_ORT_LOG_LEVEL", raising=False)
    with pytest.raises(Exception, match="none.tar.gz"):  # noqa: B017 - --debug re-raises as is
        cli.main(["--debug", "model", "verify", str(tmp_path / "none.tar.gz")])
    assert os.environ["MODELGATE_ORT_LOG_LEVEL"] == "warning"
    monkeypatch.setenv("MODELGATE_ORT_LOG_LEVEL", "info")  # an explicit setting wins
    with pytest.raises(Exception, match="none.tar.gz"):  # noqa: B017
        cli.main(["--debug", "model", "verify", str(tmp_path / "none.tar.gz")])
    assert os.environ["MODELGATE_ORT_LOG_LEVEL"] == "info"


def test_one_line_per_session_says_where_nodes_run(mlp: LoadedModel,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="modelgate.onnx.scoring"):
        scorer = open_session(mlp, SessionSettings(provider="cpu"))
    lines = [r.getMessage() for r in caplog.records if "nodes:" in r.getMessage()]
    assert len(lines) == 1
    if not hasattr(scorer.session, "get_provider_graph_assignment_info"):  # older ONNX Runtime
        nodes = len(onnx.load_from_string(mlp.onnx_bytes).graph.node)
        assert lines[0] == f"model mlp v1 nodes: (estimated) {nodes} node(s) on CPUExecutionProvider"
        return
    # ONNX Runtime's own record of the placement (fused, so fewer nodes than the file has)
    counted = sum(len(s.get_nodes()) for s in scorer.session.get_provider_graph_assignment_info())
    assert 0 < counted < len(onnx.load_from_string(mlp.onnx_bytes).graph.node)
    assert lines[0] == f"model mlp v1 nodes: {counted} node(s) on CPUExecutionProvider"


# --- slices and the out-of-memory retry -----------------------------------------------------------

class _Session:
    """Stands in for a CUDA session: delegates to a real CPU session, records each run's rows
    and raises ONNX Runtime's arena error above ``fits`` rows (a fault not causable here)."""

    def __init__(self, real: ort.InferenceSession, fits: int) -> None:
        self.real, self.fits, self.rows = real, fits, []  # type: list[int]

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        n = len(next(iter(feeds.values())))
        self.rows.append(n)
        if n > self.fits:
            raise RuntimeException(ARENA_OOM)
        return self.real.run(names, feeds)


def _on_fake_gpu(scorer: ModelScorer, fits: int, slice_rows: int) -> tuple[ModelScorer, _Session]:
    fake = _Session(scorer.session, fits)
    return dataclasses.replace(scorer, session=fake, gpu_slices=devices.SliceBudget(slice_rows)), fake


def test_cuda_runs_go_in_slices_with_the_unsliced_scores(mlp: LoadedModel) -> None:
    cpu = open_session(mlp, SessionSettings(provider="cpu", parallel_runs=1))
    frame, _ = _data(1000, 5)
    gpu, fake = _on_fake_gpu(cpu, fits=10**9, slice_rows=300)
    np.testing.assert_array_equal(gpu.predict_proba(frame), cpu.predict_proba(frame))
    assert fake.rows == [300, 300, 300, 100]


def test_out_of_memory_halves_the_slice_and_retries(mlp: LoadedModel,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    cpu = open_session(mlp, SessionSettings(provider="cpu", parallel_runs=1))
    frame, _ = _data(1000, 6)
    gpu, fake = _on_fake_gpu(cpu, fits=300, slice_rows=1000)
    with caplog.at_level(logging.WARNING, logger="modelgate.onnx.scoring"):
        got = gpu.predict_proba(frame)
    np.testing.assert_array_equal(got, cpu.predict_proba(frame))
    assert fake.rows == [1000, 500, 250, 250, 250, 250]  # 1000 and 500 fail; 250 fits
    assert gpu.gpu_slices is not None and gpu.gpu_slices.rows == 250  # kept for the next batch
    gpu.predict_proba(frame.iloc[:600])
    assert fake.rows[6:] == [250, 250, 100]
    assert sum("retrying in slices of 250 rows" in r.getMessage() for r in caplog.records) == 1


def test_a_row_that_does_not_fit_fails_clearly(mlp: LoadedModel) -> None:
    cpu = open_session(mlp, SessionSettings(provider="cpu", parallel_runs=1))
    gpu, fake = _on_fake_gpu(cpu, fits=0, slice_rows=4)
    with pytest.raises(ScoringError, match="CUDA: one row does not fit in device memory"):
        gpu.predict_proba(_data(4, 7)[0])
    assert fake.rows == [4, 2, 1]


def test_other_runtime_errors_are_not_retried() -> None:
    calls: list[int] = []

    def run(feeds: dict[str, np.ndarray]) -> np.ndarray:
        calls.append(len(feeds["x"]))
        raise RuntimeException("Invalid rank for input: x Got: 3 Expected: 2")

    with pytest.raises(RuntimeException, match="Invalid rank"):
        devices.run_in_slices(run, {"x": np.zeros((8, 1))}, 8, devices.SliceBudget(8))
    assert calls == [8]


def test_slice_rows_from_the_memory_limit_fit_the_issues_case() -> None:
    """The H200 case: a (512, 512, 256) MLP on 64 + 4 inputs, 100k rows, 256 MiB limit, where
    one 100k x 512 float32 activation (204,800,000 bytes) did not fit."""
    wide = devices.GraphWork(nodes=12, cuda_lacking_nodes=0, cuda_lacking_share=0.0,
                             activation_bytes_per_row=4 * (68 + 512 + 512 + 256 + 1))
    rows = devices.gpu_slice_rows(wide, 256)
    assert rows * 512 * 4 <= 256 * 2**20 // 4  # the widest activation takes a quarter at most
    assert 1000 < rows < 100_000
    assert devices.gpu_slice_rows(wide, None) == 2 * 2**30 // (4 * wide.activation_bytes_per_row)
    assert devices.gpu_slice_rows(wide, 1) == 48  # 1 MiB / (4 x 5396 bytes), worked by hand


# --- deeper read-ahead (CUDA's) --------------------------------------------------------------------

def test_deeper_read_ahead_keeps_row_order_and_fails_whole(mlp: LoadedModel, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA reads three batches ahead with feeds built in threads; run here on the CPU."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from modelgate.onnx import scoring

    scorer = open_session(mlp, SessionSettings(provider="cpu", parallel_runs=1))
    frame, _ = _data(1000, 8)
    frame.insert(0, "row_id", np.arange(1000))
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "in.parquet")
    monkeypatch.setitem(scoring.READ_AHEAD, "CPUExecutionProvider", 3)
    scoring.score_parquet(scorer, tmp_path / "in.parquet", tmp_path / "out.parquet",
                          batch_rows=7, id_column="row_id")
    out = pq.read_table(tmp_path / "out.parquet").to_pandas()
    np.testing.assert_array_equal(out["row_id"], np.arange(1000))
    np.testing.assert_array_equal(out["score"], scorer.predict_proba(frame))
    frame.loc[500, "x3"] = np.inf  # batch 71 of 143 is bad: nothing may be written
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "bad.parquet")
    with pytest.raises(ScoringError, match="column 'x3': 1 rows are infinite"):
        scoring.score_parquet(scorer, tmp_path / "bad.parquet", tmp_path / "bad-out.parquet",
                              batch_rows=7)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet", "in.parquet", "out.parquet"]
