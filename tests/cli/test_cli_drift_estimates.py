"""``modelgate drift``'s data-quality table and, with ``--model``, estimated performance (#24)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, mean_absolute_error
from support.model_zoo import build, frame

from modelgate.cli import main
from modelgate.onnx.artifact import package

Run = Callable[..., tuple[int, str]]


@pytest.fixture()
def _cli(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*args: str, fmt: str = "json") -> tuple[int, str]:
        code = main(["drift", *args, "--format", fmt])
        return code, capsys.readouterr().out
    return run


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("drift_estimates")
    ref = frame(2000, seed=5)
    cur = frame(1000, seed=6)
    cur.to_parquet(root / "clean.parquet")
    cur.loc[:49, "x1"] = 1000.0  # 5% out of range
    ref.to_parquet(root / "ref.parquet")
    cur.to_parquet(root / "cur.parquet")
    ref.drop(columns=["y_binary", "y_int", "y_3", "y_value"]).to_parquet(root / "unlabelled.parquet")
    out = {"ref": root / "ref.parquet", "cur": root / "cur.parquet", "clean": root / "clean.parquet",
           "unlabelled": root / "unlabelled.parquet"}
    for name in ("sklearn-no-zipmap", "sklearn-regression", "sklearn-3-class"):
        out[name] = package(*build(name).write(root / name), root / f"{name}-out")
    return out


def test_quality_table_counts_planted_problems(files: dict[str, Path], _cli: Run) -> None:
    code, out = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]),
                     "--features", "x1,x2,group", "--quality")
    payload = json.loads(out)
    quality = {q["feature"]: q for q in payload["quality"]["features"]}
    assert quality["x1"]["n_out_of_range"] == 50 and quality["x2"]["n_out_of_range"] < 10
    assert quality["group"]["n_new_category"] == 0 and quality["group"]["domain_checked"]
    assert payload["quality"]["decision"]["breached"] == ["x1"]
    assert payload["estimated_performance"] is None and payload["estimate_skipped"] == "no --model"
    _, plain = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]))
    assert json.loads(plain)["quality"] is None  # the plain run stays light


def test_binary_estimates_hold_the_realised_metrics(files: dict[str, Path], _cli: Run) -> None:
    # The clean current file: its labels follow the reference's P(y | score), as CBPE assumes.
    code, out = _cli("--reference", str(files["ref"]), "--current", str(files["clean"]),
                     "--model", str(files["sklearn-no-zipmap"]))
    est = json.loads(out)["estimated_performance"]
    assert est["task"] == "binary_classification" and est["method"] == "cbpe_isotonic"
    metrics = {m["metric"]: m for m in est["current"]["metrics"]}
    cur = pd.read_parquet(files["clean"])
    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session

    scores = open_session(verify(files["sklearn-no-zipmap"])).predict_proba(cur)
    realised = accuracy_score(cur["y_binary"] == "good", scores >= 0.5)
    assert metrics["accuracy"]["lower"] <= realised <= metrics["accuracy"]["upper"]
    assert code == 0  # nothing drifted
    # On the reference itself the isotonic calibrator reproduces the realised accuracy closely.
    ref_est = {m["metric"]: m["estimate"] for m in est["reference"]["metrics"]}
    assert ref_est["accuracy"] == pytest.approx(est["reference_realised"]["accuracy"], abs=0.02)


def test_regression_and_multiclass_estimates(files: dict[str, Path], _cli: Run) -> None:
    _, out = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]),
                  "--model", str(files["sklearn-regression"]))
    est = json.loads(out)["estimated_performance"]
    assert est["method"] == "nanny_error_model"
    cur = pd.read_parquet(files["cur"]).iloc[50:]  # rows inside the reference's range
    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session

    pred = open_session(verify(files["sklearn-regression"])).predict_value(cur)
    assert est["current"]["n_outside_reference"] >= 50
    assert mean_absolute_error(cur["y_value"], pred) == pytest.approx(est["reference_realised"]["mae"],
                                                                      rel=0.2)
    _, out = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]),
                  "--model", str(files["sklearn-3-class"]))
    multi = json.loads(out)["estimated_performance"]
    assert [c["class"] for c in multi["current"]["per_class"]] == ["0", "1", "2"]
    assert all(0 <= m["lower"] <= m["estimate"] <= m["upper"] <= 1 for m in multi["current"]["metrics"])


def test_unlabelled_reference_skips_estimates_and_text_shows_both(files: dict[str, Path],
                                                                   _cli: Run) -> None:
    _, out = _cli("--reference", str(files["unlabelled"]), "--current", str(files["cur"]),
                  "--model", str(files["sklearn-no-zipmap"]))
    payload = json.loads(out)
    assert payload["estimated_performance"] is None
    assert payload["estimate_skipped"] == "the reference has no label column 'y_binary'"
    _, text = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]),
                   "--model", str(files["sklearn-no-zipmap"]), fmt="text")
    assert "1 feature(s) with quality problems: x1" in text
    assert "estimated accuracy: " in text and "(reference " in text
    assert np.isfinite(float(text.split("estimated roc_auc: ")[1].split()[0]))
