"""How many rows a default scoring batch takes: fewer for wide outputs, the same scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.special import softmax
from support.tiny_graphs import archive, binary_graph, wide_class_graph

from modelgate.onnx import scoring
from modelgate.onnx.scorer import ModelScorer
from modelgate.onnx.scoring import (
    BATCH_OUTPUT_VALUES,
    DEFAULT_BATCH_ROWS,
    SessionSettings,
    default_batch_rows,
    open_session,
    score_parquet,
)

CPU = SessionSettings(provider="cpu", intra_op_threads=1)
WIDTH = 1000


def _wide(tmp_path: Path, width: int = WIDTH) -> ModelScorer:
    classes = [f"c{k}" for k in range(width)]
    model = archive(tmp_path / "wide", wide_class_graph(width), task="multiclass_classification",
                    label={"column": "y"}, threshold=None,
                    output={"name": "probabilities", "classes": classes})
    return open_session(model, CPU)


def test_a_two_column_output_takes_the_providers_default(tmp_path: Path) -> None:
    scorer = open_session(archive(tmp_path, binary_graph("FLOAT")), CPU)
    assert default_batch_rows(scorer) == DEFAULT_BATCH_ROWS["CPUExecutionProvider"]


def test_a_thousand_class_output_takes_fewer_rows(tmp_path: Path) -> None:
    assert default_batch_rows(_wide(tmp_path)) == BATCH_OUTPUT_VALUES // WIDTH == 4194


def test_the_smaller_batches_give_the_closed_form_scores(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    width = 64
    monkeypatch.setattr(scoring, "BATCH_OUTPUT_VALUES", 1 << 16)  # 1,024 rows a batch
    scorer = _wide(tmp_path, width)
    assert default_batch_rows(scorer) == 1024
    x = np.linspace(-3.0, 3.0, 3000, dtype=np.float32)  # three batches
    pq.write_table(pa.table({"x": x, "y": np.array(["c0"] * x.size)}), tmp_path / "in.parquet")
    score_parquet(scorer, tmp_path / "in.parquet", tmp_path / "out.parquet")
    out = pq.read_table(tmp_path / "out.parquet")
    weights = np.linspace(-1.0, 1.0, width)
    expected = softmax(x.astype(np.float64)[:, None] * weights[None, :], axis=1)
    got = np.column_stack([out.column(f"proba_{k}").to_numpy() for k in range(width)])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    np.testing.assert_array_equal(out.column("prediction").to_numpy(), expected.argmax(axis=1))
