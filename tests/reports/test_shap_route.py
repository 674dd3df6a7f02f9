"""``modelgate explain`` on the zoo's graphs: which are read exactly from their trees or
linear model (margin space, labelled), which fall back to the estimators and say why; the
margin checked against the native model's own probabilities (its logit) or raw scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.model_zoo import build

from modelgate.onnx.artifact import package

CASES = {  # zoo entry -> (algorithm, output)
    "lightgbm-zipmap": ("tree_interventional", "logit"),
    "xgboost": ("tree_interventional", "logit"),
    "sklearn-double": ("linear_interventional", "logit"),
    "sklearn-3-class": ("linear_interventional", "margin"),
    "sklearn-columns": ("exact", "probability"),  # a scaler in front of the model: falls back
}


@pytest.mark.parametrize("name", sorted(CASES), ids=str)
def test_explain_reads_trees_and_linear_models_exactly_and_says_why_not(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from modelgate.cli import main  # in-process: no interpreter start per case

    zoo = build(name)
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "data.parquet"
    zoo.frame.to_parquet(data)
    assert main(["explain", "--model", str(archive), "--data", str(data), "--rows", "4",
                 "--background", "30", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["algorithm"], payload["output"]) == CASES[name]
    assert payload["output_space"] == CASES[name][1]  # issue #40: the space named as such too
    values, base = np.asarray(payload["values"]), np.asarray(payload["base_values"])
    assert np.abs(base + values.sum(axis=1) - payload["model_output"]).max() <= 1e-6
    if payload["algorithm"] == "exact":
        assert "Scaler" in payload["algorithm_note"] or "in front of it" in payload["algorithm_note"]
        return
    assert "exact values" in payload["algorithm_note"] and not np.any(payload["standard_errors"])
    proba = zoo.native[:4]
    if payload["output"] == "logit":  # the positive class is the last: log-odds of the native model
        np.testing.assert_allclose(payload["model_output"], np.log(proba[:, -1] / proba[:, 0]), atol=1e-4)


def test_attribution_drift_explains_a_tree_model_exactly_in_log_odds(tmp_path: Path) -> None:
    """The drift pipeline's SHAP values of a LightGBM graph come from its trees; the oracle is
    brute force over all 2**3 coalitions in log-odds (the masker's exact algorithm)."""
    from modelgate.reports.explanation import explain

    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session
    from modelgate.pipelines.drift import joint

    zoo = build("lightgbm-zipmap")
    loaded = verify(package(*zoo.write(tmp_path / "src"), tmp_path / "out"))
    scorer = open_session(loaded)
    features = list(scorer.feature_names)
    rows, background = zoo.frame.iloc[:6][features], zoo.frame.iloc[100:140][features]
    route = joint._route(loaded, scorer, rows, background, features)
    values, first = joint._shap_values(scorer, rows, background, features, route)
    assert first.algorithm == "tree_interventional" and first.output == "logit"
    brute = explain(scorer.predict_proba, rows, background, features=features, algorithm="exact",
                    output="logit")
    np.testing.assert_allclose(values, brute.values, atol=1e-6)
