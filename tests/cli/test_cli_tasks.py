"""The CLI on every task: score and explain per task, and evaluate on a ZipMap model with string
classes (multiclass and regression evaluation: tests/pipelines/evaluation/test_evaluate_tasks.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from support.model_zoo import build

from modelgate.onnx.artifact import package


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelgate.cli", *args], capture_output=True,
                          text=True, timeout=600)


def _archive_and_data(name: str, tmp_path: Path) -> tuple[Path, Path]:
    zoo = build(name)
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "data.parquet"
    zoo.frame.to_parquet(data)
    return archive, data


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_explain_a_chosen_class_of_a_multiclass_model(tmp_path: Path) -> None:
    archive, data = _archive_and_data("lightgbm-3-class", tmp_path)
    chosen = _cli("explain", "--model", str(archive), "--data", str(data), "--rows", "3",
                  "--background", "20", "--class", "2")
    assert chosen.returncode == 0, chosen.stderr[-2000:]
    payload = json.loads(chosen.stdout)
    assert payload["explained_class"] == [2, 2, 2]
    # a tree ensemble: exact values of class 2's raw score (the softmax's input)
    assert payload["algorithm"] == "tree_interventional" and payload["output"] == "margin"
    native = build("lightgbm-3-class").raw[:3, 2]
    np.testing.assert_allclose(payload["model_output"], native, atol=2e-5)
    gap = np.array(payload["base_values"]) + np.array(payload["values"]).sum(axis=1) - np.array(
        payload["model_output"])
    assert np.abs(gap).max() <= 1e-6
    predicted = json.loads(_cli("explain", "--model", str(archive), "--data", str(data), "--rows", "3",
                                "--background", "20").stdout)
    assert predicted["explained_class"] == build("lightgbm-3-class").native[:3].argmax(axis=1).tolist()
    wrong = _cli("explain", "--model", str(archive), "--data", str(data), "--class", "7")
    assert wrong.returncode != 0 and "--class '7' is not one of the model's classes" in wrong.stderr


def test_explain_names_rows_by_id_column_in_text_and_json(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from modelgate.cli import main  # in-process: two runs of the CLI cost no interpreter start

    zoo = build("lightgbm-3-class")
    archive = package(*zoo.write(tmp_path / "src", id_column="customer"), tmp_path / "out")
    data = tmp_path / "data.parquet"
    zoo.frame.assign(customer=[f"c-{i + 500}" for i in range(len(zoo.frame))]).to_parquet(data)
    common = ["explain", "--model", str(archive), "--data", str(data), "--rows", "2", "--background", "20"]
    assert main([*common, "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["id_column"] == "customer" and payload["row_ids"] == ["c-500", "c-501"]
    assert main([*common, "--format", "text"]) == 0
    predicted = zoo.native[:2].argmax(axis=1)
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [r.split(": output")[0] for r in rows] == [
        f"customer c-{500 + i} (class {predicted[i]})" for i in range(2)]


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_explain_and_score_a_regression_model(tmp_path: Path) -> None:
    archive, data = _archive_and_data("xgboost-regression", tmp_path)
    explained = _cli("explain", "--model", str(archive), "--data", str(data), "--rows", "2",
                     "--background", "20")
    assert explained.returncode == 0, explained.stderr[-2000:]
    payload = json.loads(explained.stdout)
    assert payload["output"] == "value" and "explained_class" not in payload
    assert payload["id_column"] is None and payload["row_ids"] is None  # rows named by position
    # a tree ensemble is explained exactly from its trees: every standard error is 0
    assert payload["algorithm"] == "tree_interventional" and payload["algorithm_note"]
    assert payload["standard_errors"] == [[0.0] * len(payload["features"])] * 2
    scored = _cli("score", "--model", str(archive), "--data", str(data), "--out",
                  str(tmp_path / "scores.parquet"))
    assert scored.returncode == 0, scored.stderr[-2000:]
    out = pq.read_table(tmp_path / "scores.parquet").to_pandas()
    assert list(out.columns) == ["prediction"]
    np.testing.assert_allclose(out["prediction"], build("xgboost-regression").native,
                               rtol=1e-5, atol=1e-4)


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_evaluate_a_zipmap_model_with_string_classes_and_a_first_positive_class(
        settings_env, tmp_path: Path) -> None:
    """Issue #12's first and fourth cases end to end: a skl2onnx ZipMap model (classes
    ['bad', 'good']) evaluated with positive class 'bad', the first column."""
    from sklearn.metrics import roc_auc_score

    zoo = build("sklearn-zipmap")
    archive = package(*zoo.write(tmp_path / "src", label={"column": "y_binary", "positive": "bad"}),
                      tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    zoo.frame.to_parquet(data)
    result = _cli("evaluate", "--model", str(archive), "--data", str(data), "--format", "json")
    assert result.returncode in (0, 3), result.stderr[-2000:]
    auc = json.loads(result.stdout)["metrics"]["roc_auc"]["value"]
    expected = roc_auc_score(zoo.frame["y_binary"] == "bad", zoo.native[:, 0])
    assert auc == pytest.approx(expected, abs=1e-4) and auc > 0.8  # not inverted


def test_explain_says_when_the_background_is_the_few_rows_it_explains(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from modelgate.cli import main

    archive, data = _archive_and_data("sklearn-no-zipmap", tmp_path)
    one = tmp_path / "one.parquet"
    pq.write_table(pq.read_table(data).slice(0, 1), one)
    assert main(["-q", "explain", "--model", str(archive), "--data", str(one), "--rows", "1",
                 "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "the background is all 1 row(s) of --data (asked for 100)" in captured.err
    assert json.loads(captured.out)["values"] == [[0.0, 0.0, 0.0]]  # the row against itself
    assert main(["-q", "explain", "--model", str(archive), "--data", str(data), "--rows", "1",
                 "--background", "20", "--format", "json"]) == 0
    assert "background is all" not in capsys.readouterr().err
