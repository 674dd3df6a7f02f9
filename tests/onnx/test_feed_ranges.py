"""Numeric feeds are range-checked for the graph input's type, and outputs for every caller.

Tiny hand-built graphs (``tiny_graphs.binary_graph``: x -> Cast(float) -> Sigmoid) so the
expected scores are a closed form (the logistic function) and each input type is tested alone.
The boundaries come from the ONNX types themselves: INT64 holds [-2**63, 2**63 - 1],
INT32 [-2**31, 2**31 - 1], FLOAT overflows past about 3.4e38.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from support.tiny_graphs import SCALE, archive, binary_graph

from modelgate import cli
from modelgate.onnx.artifact import LoadedModel
from modelgate.onnx.scoring import ModelScorer, ScoringError, SessionSettings, open_session, score_parquet


def _model(tmp_path: Path, elem: str, *, allow_missing: bool = False) -> LoadedModel:
    return archive(tmp_path / f"src-{elem}-{allow_missing}", binary_graph(elem),
                   name=f"ranges-{elem.lower()}",
                   features=[{"name": "x", "kind": "numeric", "allow_missing": allow_missing}])


def _scorer(tmp_path: Path, elem: str, **kw: Any) -> ModelScorer:
    return open_session(_model(tmp_path, elem, **kw), SessionSettings(provider="cpu"))


def _logistic(x: np.ndarray) -> np.ndarray:
    return expit(np.asarray(x, dtype=np.float64) * SCALE)


BAD = [  # (graph type, column values, what the message says)
    ("INT64", pd.Series([1.0, 1e30, 2.0]), "outside INT64's range"),
    ("INT64", pd.Series([1.0, 2.0**63, 2.0]), "outside INT64's range"),
    ("INT64", pd.Series(np.array([1, 2**63, 2], dtype=np.uint64)), "outside INT64's range"),
    ("INT64", pd.Series(np.array([1, 2**64 - 1, 2], dtype=np.uint64)), "outside INT64's range"),
    ("INT32", pd.Series(np.array([1, 2**31, 2], dtype=np.int64)), "outside INT32's range"),
    ("INT32", pd.Series(np.array([1, -(2**31) - 1, 2], dtype=np.int64)), "outside INT32's range"),
    ("INT32", pd.Series([1.0, 3e9, 2.0]), "outside INT32's range"),
    ("INT32", pd.Series(np.array([1, 2**32 - 1, 2], dtype=np.uint32)), "outside INT32's range"),
    ("INT64", pd.Series([1.0, 0.5, 2.0]), "not whole numbers"),
    ("INT64", pd.Series([1.0, np.inf, 2.0]), "infinite"),
    ("INT32", pd.Series([1.0, np.nan, 2.0]), "cannot hold missing values"),
    ("FLOAT", pd.Series([1.0, 1e39, 2.0]), "infinite or overflow FLOAT"),
    ("DOUBLE", pd.Series([1.0, -np.inf, 2.0]), "infinite or overflow DOUBLE"),
]


@pytest.mark.parametrize(("elem", "values", "why"), BAD,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(BAD)])
def test_out_of_range_values_are_refused_naming_column_count_and_row(
        tmp_path: Path, elem: str, values: pd.Series, why: str) -> None:
    frame = pd.DataFrame({"x": values})
    frame.index = pd.Index([10, 11, 12], name="row_id")
    with pytest.raises(ScoringError) as err:
        _scorer(tmp_path, elem).predict_proba(frame)
    assert str(err.value).startswith("column 'x': 1 rows ")
    assert why in str(err.value) and str(err.value).endswith("(first: row_id 11)")


@pytest.mark.parametrize(("elem", "values"), [
    ("INT64", np.array([-(2**63), 2**63 - 1, 0], dtype=np.int64)),
    ("INT64", np.array([0, 2**63 - 1, 5], dtype=np.uint64)),
    ("INT64", np.array([-(2.0**63), 2.0**62, 3.0])),
    ("INT32", np.array([-(2**31), 2**31 - 1, 0], dtype=np.int64)),
    ("INT32", np.array([-(2.0**31), 2.0**31 - 1, 7.0])),
    ("FLOAT", np.array([-3.0e38, 3.0e38, 1.0])),
], ids=["int64-bounds", "uint64-below-2^63", "float-at-int64-min", "int32-bounds",
        "float-at-int32-bounds", "float-near-max"])
def test_values_at_the_bounds_are_fed_exactly(tmp_path: Path, elem: str, values: np.ndarray) -> None:
    got = _scorer(tmp_path, elem).predict_proba(pd.DataFrame({"x": values}))
    np.testing.assert_allclose(got, _logistic(values.astype(np.float32)), rtol=1e-6)


def test_nan_output_of_a_graph_that_does_not_impute_is_refused(tmp_path: Path) -> None:
    scorer = _scorer(tmp_path, "FLOAT", allow_missing=True)  # allowed, but Sigmoid(NaN) = NaN
    with pytest.raises(ScoringError, match=r"model output 'probabilities': 2 rows are NaN or "
                                           r"infinite; features \['x'\] allow missing.*\(first: row 1\)"):
        scorer.predict_proba(pd.DataFrame({"x": [1.0, np.nan, np.nan]}))


def test_score_file_names_the_id_of_the_first_refused_row(tmp_path: Path) -> None:
    scorer = _scorer(tmp_path, "INT64")
    data = tmp_path / "in.parquet"
    frame = pd.DataFrame({"row_id": np.arange(5000, dtype=np.int64) + 100,
                          "x": np.arange(5000, dtype=np.float64)})
    frame.loc[4321, "x"] = 1e30
    frame.to_parquet(data, index=False)
    with pytest.raises(ScoringError, match=r"column 'x': 1 rows are outside INT64's range.*"
                                           r"\(first: row_id 4421\)"):
        score_parquet(scorer, data, tmp_path / "out.parquet", batch_rows=1000)
    assert not (tmp_path / "out.parquet").exists()
    frame.drop(columns="row_id").to_parquet(data, index=False)  # no ids: the 0-based position
    with pytest.raises(ScoringError, match=r"\(first: row 4321\)"):
        score_parquet(scorer, data, tmp_path / "out.parquet", batch_rows=1000)


def _archive(tmp_path: Path, elem: str, **kw: Any) -> Path:
    return _model(tmp_path, elem, **kw).path


@pytest.mark.parametrize(("elem", "allow_missing", "x", "why"), [
    ("INT64", False, [1.0, 1e30], "outside INT64's range"),
    ("INT64", False, np.array([1, 2**63], dtype=np.uint64), "outside INT64's range"),
    ("FLOAT", True, [1.0, np.nan], "model output 'probabilities': 1 rows are NaN"),
], ids=["int64-float-1e30", "int64-uint64", "nan-scores"])
def test_score_command_refuses_what_evaluate_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], elem: str, allow_missing: bool,
        x: Any, why: str) -> None:
    data = tmp_path / "in.parquet"
    pd.DataFrame({"row_id": [7, 8], "x": x}).to_parquet(data, index=False)
    out = tmp_path / "scores.parquet"
    code = cli.main(["score", "--model", str(_archive(tmp_path, elem, allow_missing=allow_missing)),
                     "--data", str(data), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and why in err and "(first: row_id 8)" in err
    assert not out.exists()
