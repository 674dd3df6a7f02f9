"""``modelgate evaluate`` on multiclass and regression models, end to end on real converters'
models, PostgreSQL and the S3 server: stored metrics equal to scikit-learn, fairness gaps equal
to fairlearn's MetricFrame, the gate, the champion comparison and the DAG.

Expected values come from ONNX Runtime run here on the converter's bytes and from
scikit-learn/fairlearn, never from modelgate's own scores.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from fairlearn.metrics import (
    MetricFrame,
    false_positive_rate,
    selection_rate,
    true_positive_rate,
)
from modelgate.evaluation import PolicyError
from sklearn import metrics as skm
from support.model_zoo import FEATURES, Zoo, build
from support.tiny_graphs import manifest_of

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.evaluation.model_tasks import ChampionMismatch
from modelgate.pipelines.refusals import refusal_types
from modelgate.store import models
from modelgate.store.db import transaction

TOL = 1e-9


def _onnx_output(zoo: Zoo) -> np.ndarray:
    """The converter's graph run by ONNX Runtime on the zoo frame: probabilities [N, C] or
    values [N], float64."""
    session = ort.InferenceSession(zoo.onnx_bytes, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: zoo.frame[list(FEATURES)].to_numpy(np.float32)}
    names = [o.name for o in session.get_outputs()]
    if "probabilities" in names:
        out = session.run(["probabilities"], feed)[0]
        if isinstance(out, list):  # ZipMap: one {class: probability} per row
            return np.array([[row[k] for k in sorted(row)] for row in out], dtype=np.float64)
        return np.asarray(out, dtype=np.float64)
    return np.asarray(session.run(None, feed)[0], dtype=np.float64).ravel()


def _archive_and_data(zoo_name: str, tmp_path: Path, **changes: Any) -> tuple[Path, Path]:
    zoo = build(zoo_name)
    folder = tmp_path / f"{zoo_name}-{changes.get('version', '1')}"
    archive = package(*zoo.write(folder / "src", **changes), folder / "out")
    data = folder / "heldout.parquet"
    zoo.frame.to_parquet(data)
    return archive, data


def _rows(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with transaction(url) as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def _scored(settings: Settings, run_id: int) -> Any:
    """The run's stored scores (every partition), as pandas: the predictions whose metrics are
    checked. ONNX Runtime's tree ensembles sum in a thread-dependent order, so a second session
    agrees with them to float32 rounding only (checked against :func:`_onnx_output`)."""
    import pandas as pd
    import pyarrow.parquet as pq

    from modelgate.store.objects import open_object_store

    ((uri,),) = _rows(str(settings.database_url), "SELECT scores_uri FROM evaluation_run WHERE "
                                                  "evaluation_run_id = %s", run_id)
    store = open_object_store(settings)
    prefix = uri.split("/", 3)[3]  # s3://bucket/<prefix>
    keys = sorted(k for k in store.list_keys(prefix + "/") if k.endswith(".parquet"))
    return pd.concat([pq.read_table(_buffer(store.get_bytes(k))).to_pandas() for k in keys],
                     ignore_index=True)


def _buffer(data: bytes) -> Any:
    import pyarrow as pa

    return pa.BufferReader(data)


def _metrics(url: str, run_id: int, role: str = "candidate") -> dict[str, float]:
    return dict(_rows(url, "SELECT metric_name, value FROM evaluation_metric WHERE "
                           "evaluation_run_id = %s AND model_role = %s", run_id, role))


def _gaps(url: str, run_id: int) -> dict[tuple[str, str], float]:
    return {(f, m): v for f, m, v in _rows(
        url, "SELECT sensitive_feature, metric_name, value FROM fairness_metric "
             "WHERE evaluation_run_id = %s", run_id)}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelgate.cli", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_evaluate_a_three_class_model_equals_sklearn_and_fairlearn(settings_env: Settings,
                                                                   tmp_path: Path) -> None:
    zoo = build("sklearn-3-class")
    archive, data = _archive_and_data("sklearn-3-class", tmp_path)
    result = _cli("evaluate", "--model", str(archive), "--data", str(data), "--format", "json")
    assert result.returncode == 0, result.stderr[-3000:]
    payload = json.loads(result.stdout)
    assert payload["task"] == "multiclass_classification" and payload["status"] == "passed"
    per_class = [f"{m}[{k}]" for m in ("recall", "precision") for k in (0, 1, 2)]
    assert set(payload["metrics"]) == {"accuracy", "macro_f1", "weighted_f1",
                                       "roc_auc_ovr_macro", "log_loss", *per_class}

    url, run_id = str(settings_env.database_url), payload["evaluation_run_id"]
    stored = _metrics(url, run_id)
    scored = _scored(settings_env, run_id)
    proba = scored[[f"proba_{k}" for k in range(3)]].to_numpy()
    np.testing.assert_allclose(proba, _onnx_output(zoo), atol=1e-6)
    y = zoo.frame["y_3"].to_numpy()
    pred = proba.argmax(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float32 probabilities sum to 1 within 1e-7
        expected = {
            "accuracy": skm.accuracy_score(y, pred),
            "macro_f1": skm.f1_score(y, pred, average="macro"),
            "weighted_f1": skm.f1_score(y, pred, average="weighted"),
            "roc_auc_ovr_macro": skm.roc_auc_score(y, proba, multi_class="ovr", average="macro"),
            "log_loss": skm.log_loss(y, proba),
        }
    for k in range(3):
        expected[f"recall[{k}]"] = skm.recall_score(y, pred, average=None)[k]
        expected[f"precision[{k}]"] = skm.precision_score(y, pred, average=None)[k]
    assert set(stored) == set(expected)
    for name, value in expected.items():
        assert stored[name] == pytest.approx(value, abs=TOL), name
        assert payload["metrics"][name]["value"] == pytest.approx(value, abs=TOL), name

    gaps = _gaps(url, run_id)
    group = zoo.frame["group"].to_numpy()
    for k in range(3):
        for gap, metric in (("tpr_gap", true_positive_rate), ("fpr_gap", false_positive_rate),
                            ("demographic_parity_difference", selection_rate)):
            frame = MetricFrame(metrics=metric, y_true=(y == k).astype(int),
                                y_pred=(pred == k).astype(int), sensitive_features=group)
            assert gaps[("group", f"{gap}[{k}]")] == pytest.approx(frame.difference(), abs=TOL)
            assert payload["fairness"]["group"]["gaps"][f"{gap}[{k}]"]["value"] == pytest.approx(
                frame.difference(), abs=TOL)
    classes = _rows(url, "SELECT DISTINCT class_label FROM analytics.fairness_by_group "
                         "WHERE evaluation_run_id = %s ORDER BY 1", run_id)
    assert classes == [("0",), ("1",), ("2",)]
    assert _rows(url, "SELECT count(*) FROM calibration_bin WHERE evaluation_run_id = %s",
                 run_id) == [(0,)]
    from modelgate.store.objects import open_object_store

    ((key,),) = _rows(url, "SELECT report_key FROM evaluation_run WHERE evaluation_run_id = %s",
                      run_id)
    page = open_object_store(settings_env).get_bytes(key).decode()
    assert "recall[2]" in page and "precision[0]" in page and "class 1 (one-vs-rest)" in page
    assert "tpr_gap[1]" in page and "predicted class" in page
    # the SHAP summary and SHAP by group sections are there, with their tables
    assert 'id="shap-summary"' in page and 'id="shap-groups-0"' in page
    assert "Mean SHAP per feature by group group" in page and "no champion" in page
    # issue #40: a linear graph's exact values are class scores before the softmax; the JSON,
    # the analysts' view and every SHAP chart's axis say so
    shap = payload["shap"]
    assert (shap["algorithm"], shap["output_space"], shap["output"]) == (
        "linear_interventional", "margin", "margin")
    shown = _rows(url, "SELECT feature, mean_abs_shap, output_space FROM analytics.feature_importance "
                       "WHERE evaluation_run_id = %s ORDER BY importance_rank", run_id)
    assert [(i["feature"], i["mean_abs_shap"], "margin") for i in shap["importance"]] == [
        (f, pytest.approx(v, rel=1e-12), s) for f, v, s in shown]
    for label in ("mean |SHAP value|", "SHAP value (impact on the output)", "mean SHAP value"):
        assert f">{label} (class score (margin), before the softmax)<" in page, label


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_regression_against_its_champion_and_a_gate_on_rmse(settings_env: Settings,
                                                             tmp_path: Path) -> None:
    """v1 (scikit-learn) is promoted; v2 (XGBoost, same model name) is compared with it on the
    same rows and blocked by an RMSE bound it breaches."""
    url = str(settings_env.database_url)
    first = run_evaluation_locally(*_archive_and_data("sklearn-regression", tmp_path), None,
                                   promote=True)
    assert first.payload["status"] == "passed" and first.payload["promoted"]
    # the regression default sets no gap limit (label units): the JSON, the stored checks and
    # the report say that no fairness check covered the sensitive feature
    uncovered = {c["check_id"]: c for c in first.payload["gate"]["checks"]}[
        "fairness:group:no_fairness_check"]
    assert uncovered["effect"] == "warn" and uncovered["reason"].startswith(
        "no fairness check covers sensitive feature 'group' (task regression)")
    assert "no fairness check covers sensitive feature 'group'" in first.payload["gate"]["summary"]
    assert _rows(url, "SELECT effect FROM gate_check WHERE evaluation_run_id = %s AND check_id = "
                      "'fairness:group:no_fairness_check'",
                 first.payload["evaluation_run_id"]) == [("warn",)]
    strict = tmp_path / "strict.yaml"
    strict.write_text("metrics:\n  rmse:\n    value: {upper: 0.05}\n")
    archive, data = _archive_and_data("xgboost-regression", tmp_path, version="2")
    second = run_evaluation_locally(archive, data, strict, promote=True)

    assert second.payload["status"] == "blocked" and second.payload["promoted"] is None
    run_id = second.payload["evaluation_run_id"]
    checks = {c["check_id"]: c for c in second.payload["gate"]["checks"]}
    assert checks["value:rmse"]["verdict"] == "breach" and checks["value:rmse"]["effect"] == "block"
    assert "rmse = " in checks["value:rmse"]["reason"] and "above the upper bound 0.0500" in \
        checks["value:rmse"]["reason"]
    assert _rows(url, "SELECT status FROM evaluation_run WHERE evaluation_run_id = %s",
                 run_id) == [("blocked",)]
    assert models.get(url, "zoo-regression", "1").stage == "production"
    assert models.get(url, "zoo-regression", "2").stage == "candidate"
    from modelgate.store.objects import open_object_store

    ((key,),) = _rows(url, "SELECT report_key FROM evaluation_run WHERE evaluation_run_id = %s", run_id)
    page = open_object_store(settings_env).get_bytes(key).decode()
    assert "<dt>Compared with</dt><dd>champion v1 (production)</dd>" in page  # the header names it
    assert "no fairness check covers sensitive feature" in page

    y = build("xgboost-regression").frame["y_value"].to_numpy()
    scored = _scored(settings_env, run_id)
    new, old = scored["prediction"].to_numpy(), scored["champion_prediction"].to_numpy()
    np.testing.assert_allclose(new, _onnx_output(build("xgboost-regression")), atol=1e-5)
    np.testing.assert_allclose(old, _onnx_output(build("sklearn-regression")), atol=1e-5)

    def sk(pred: np.ndarray) -> dict[str, float]:
        return {"rmse": skm.root_mean_squared_error(y, pred),
                "mae": skm.mean_absolute_error(y, pred), "r2": skm.r2_score(y, pred),
                "mean_error": float(np.mean(pred - y))}

    for role, expected in (("candidate", sk(new)), ("champion", sk(old)),
                           ("delta", {k: sk(new)[k] - sk(old)[k] for k in sk(new)})):
        stored = _metrics(url, run_id, role)
        assert set(stored) == set(expected), role
        for name, value in expected.items():
            assert stored[name] == pytest.approx(value, abs=TOL), (role, name)
    deltas = second.payload["champion_deltas"]
    assert deltas["rmse"]["delta"] == pytest.approx(sk(new)["rmse"] - sk(old)["rmse"], abs=TOL)
    assert deltas["rmse"]["ci_lower"] <= deltas["rmse"]["delta"] <= deltas["rmse"]["ci_upper"]

    group = build("xgboost-regression").frame["group"].to_numpy()
    frames = {
        "mae_gap": MetricFrame(metrics=skm.mean_absolute_error, y_true=y, y_pred=new,
                               sensitive_features=group),
        "rmse_gap": MetricFrame(metrics=skm.root_mean_squared_error, y_true=y, y_pred=new,
                                sensitive_features=group),
        "mean_prediction_gap": MetricFrame(metrics=lambda t, p: float(np.mean(p)), y_true=y,
                                           y_pred=new, sensitive_features=group),
    }
    gaps = _gaps(url, run_id)
    for name, frame in frames.items():
        assert gaps[("group", name)] == pytest.approx(frame.difference(), abs=TOL), name
    by_group = {g: (mae, rmse) for g, mae, rmse in _rows(
        url, "SELECT group_label, mae, rmse FROM analytics.fairness_by_group "
             "WHERE evaluation_run_id = %s AND tpr IS NULL", run_id)}
    for g, (mae, rmse) in by_group.items():
        assert mae == pytest.approx(frames["mae_gap"].by_group[g], abs=TOL)
        assert rmse == pytest.approx(frames["rmse_gap"].by_group[g], abs=TOL)
    assert sorted(by_group) == ["a", "b", "c"]


def test_a_champion_of_another_task_is_refused_with_the_reason_recorded(
        settings_env: Settings, tmp_path: Path) -> None:
    url = str(settings_env.database_url)
    run_evaluation_locally(*_archive_and_data("sklearn-regression", tmp_path, name="mixed"), None,
                           promote=True)
    archive, data = _archive_and_data("sklearn-3-class", tmp_path, name="mixed", version="2")
    with pytest.raises(ChampionMismatch, match="the candidate is multiclass_classification but "
                                               "the production champion .* is regression"):
        run_evaluation_locally(archive, data, None)
    ((status, reason, rows, attempt),) = _rows(
        url, "SELECT status, failure_reason, rows_scored, attempt FROM analytics.evaluation_runs "
             "WHERE version = '2'")
    assert (status, rows, attempt) == ("failed", None, 1)  # refused at prepare: nothing scored
    assert reason.startswith("ChampionMismatch: ") and "same task only" in reason
    assert issubclass(ChampionMismatch, refusal_types())  # final: the DAG's verify is not retried


@pytest.mark.parametrize(("model", "policy", "message"), [
    ("sklearn-regression", "metrics: {roc_auc: {value: {lower: 0.7}}}",
     "policy metric 'roc_auc' is not reported for task regression"),
    ("sklearn-3-class", "metrics: {'recall[7]': {value: {lower: 0.5}}}",
     r"policy metric 'recall\[7\]': '7' is not a class of model"),
], ids=["binary-metric-on-regression", "unknown-class"])
def test_a_policy_is_checked_against_the_task_before_scoring(
        settings_env: Settings, tmp_path: Path, model: str, policy: str, message: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(policy + "\n")
    with pytest.raises(PolicyError, match=message):  # final: the DAG's verify is not retried
        run_evaluation_locally(*_archive_and_data(model, tmp_path), path)
    assert _rows(str(settings_env.database_url),
                 "SELECT status, rows_scored, attempt FROM analytics.evaluation_runs") == [
        ("failed", None, 1)]


def test_the_multiclass_default_fits_any_classes_but_a_named_class_must_exist() -> None:
    from modelgate.evaluation.policy import default_policy, load_policy

    from modelgate.pipelines.evaluation.model_tasks import check_policy_classes

    manifest = manifest_of(task="multiclass_classification", label={"column": "y"},
                           output={"name": "probabilities", "classes": ["a", "b"]}, threshold=None)
    check_policy_classes(default_policy("multiclass_classification"), manifest)  # '<gap>[*]'
    with pytest.raises(ValueError, match=r"'tpr_gap\[c\]': 'c' is not a class of model 'm'"):
        check_policy_classes(load_policy("fairness: {default: {'tpr_gap[c]': {upper: 0.1}}}"),
                             manifest)


@pytest.mark.e2e
def test_dag_evaluates_and_promotes_a_three_class_model(
    settings_env: Settings, airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelgate.airflow_runner import run_dag
    from modelgate.pipelines.context import Context, register_archive

    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "0")
    archive, data = _archive_and_data("lightgbm-3-class", tmp_path)
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, archive)
    result = run_dag("model_evaluation", conf={"model_name": row.model_name, "model_version": "1",
                                               "dataset": str(data), "policy": ""})
    assert str(result.state) == "success"
    assert models.get(ctx.db_url, row.model_name, "1").stage == "production"
    ((run_id, status),) = _rows(ctx.db_url, "SELECT evaluation_run_id, status FROM evaluation_run")
    zoo = build("lightgbm-3-class")
    proba = _scored(settings_env, run_id)[[f"proba_{k}" for k in range(3)]].to_numpy()
    np.testing.assert_allclose(proba, _onnx_output(zoo), atol=1e-6)
    y = zoo.frame["y_3"].to_numpy()
    stored = _metrics(ctx.db_url, run_id)
    assert status == "passed"
    assert stored["macro_f1"] == pytest.approx(
        skm.f1_score(y, proba.argmax(axis=1), average="macro"), abs=TOL)
    assert stored["roc_auc_ovr_macro"] == pytest.approx(
        skm.roc_auc_score(y, proba, multi_class="ovr"), abs=TOL)


def test_readme_json_section_names_every_task_metric() -> None:
    """The README's `evaluate` JSON entry lists the metric and gap names each task reports."""
    import re

    from modelgate.evaluation.metrics import METRIC_NAMES
    from modelgate.evaluation.multiclass import multiclass_metric_names
    from modelgate.evaluation.regression import REGRESSION_METRIC_NAMES
    from modelgate.fairness.regression import REGRESSION_FAIRNESS_NAMES

    root = Path(__file__).resolve().parents[3]  # the README and every docs/ page
    readme = "\n".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    entry = re.search(r"^- `evaluate`: (.*?)^- `explain`", readme, flags=re.S | re.M)
    assert entry is not None
    text = entry.group(1)
    names = (*METRIC_NAMES, *multiclass_metric_names(["<class>"]), *REGRESSION_METRIC_NAMES,
             *REGRESSION_FAIRNESS_NAMES, "tpr_gap[<class>]", "task")
    assert [n for n in names if n not in text] == []


def test_scores_summarised_as_scored_equal_scores_read_back(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A partition summarised from score_parquet's tables (any sizes, cut into batches) gives
    the statistics and group tables of the scores file read back batch by batch."""
    import pickle

    import pyarrow as pa
    import pyarrow.parquet as pq

    from modelgate.pipelines.evaluation import score_step

    monkeypatch.setattr(score_step, "STATS_BATCH_ROWS", 1000)
    rng = np.random.default_rng(3)
    n = 3500  # three whole batches and a remainder
    score = np.round(rng.random(n), 2)
    table = pa.table({"score": score, "prediction": (score >= 0.5).astype(np.int8),
                      "y": rng.integers(0, 2, n),
                      "group": pa.array(rng.choice(["a", "b", None], n).tolist(), type=pa.string())})
    from modelgate.onnx.manifest import Manifest

    manifest = Manifest.from_dict({
        "format_version": 1, "name": "m", "version": "1", "sha256": "0" * 64,
        "features": [{"name": "x", "kind": "numeric"}], "label": {"column": "y", "positive": 1},
        "output": {"name": "p", "positive_index": 1}, "threshold": 0.5,
        "sensitive_features": ["group"]})
    pq.write_table(table, tmp_path / "scores.parquet", row_group_size=700)
    read_back = score_step._summarise(tmp_path / "scores.parquet", None, manifest, None,
                                    tmp_path / "out.parquet")
    inline = score_step._Summary(manifest)
    for start, size in [(0, 300), (300, 1700), (2000, 1), (2001, 1499)]:
        inline.add(table.slice(start, size))
    assert pickle.dumps(inline.result()) == pickle.dumps(read_back)
