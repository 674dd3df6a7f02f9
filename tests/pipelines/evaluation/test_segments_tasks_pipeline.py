"""``modelgate evaluate --segments`` on a multiclass and a regression model, end to end (issue #43):
the CLI on PostgreSQL and the local object store, each slice's metrics against scikit-learn on the
native model's outputs, the gate's segment check, the stored rows and the report; the same data
as two partitions gives the same segments as one file (the run merges partitions in order)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn import metrics as skm
from support.model_zoo import build

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.store.db import transaction

POLICY = """
segments:
  min_rows: 100
  metrics:
    {metric}: {{margin: 0.0, on_inconclusive: warn, severity: warn}}
"""


def _sklearn(name: str, y: np.ndarray, native: np.ndarray) -> dict[str, float]:
    if name == "sklearn-regression":
        return {"rmse": math.sqrt(skm.mean_squared_error(y, native)),
                "mae": skm.mean_absolute_error(y, native), "r2": skm.r2_score(y, native)}
    pred = native.argmax(axis=1)
    return {"accuracy": skm.accuracy_score(y, pred),
            "macro_f1": skm.f1_score(y, pred, labels=[0, 1, 2], average="macro"),
            "roc_auc_ovr_macro": skm.roc_auc_score(y, native, multi_class="ovr"),
            "log_loss": skm.log_loss(y, native, labels=[0, 1, 2]),
            "recall[1]": skm.recall_score(y, pred, labels=[1], average=None)[0]}


@pytest.mark.e2e
@pytest.mark.parametrize(("name", "label", "metric"), [
    ("sklearn-3-class", "y_3", "macro_f1"), ("sklearn-regression", "y_value", "rmse")],
    ids=["multiclass", "regression"])
def test_evaluate_segments_of_a_multiclass_and_a_regression_model(
        settings_env: Settings, tmp_path: Path, name: str, label: str, metric: str) -> None:
    zoo = build(name)
    frame = zoo.frame.copy()
    rng = np.random.default_rng(1)
    frame["region"] = np.array(["north", "south", "east"])[rng.integers(0, 3, len(frame))]
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    frame.to_parquet(data)
    parts = tmp_path / "parts"
    parts.mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(parts / "part-0.parquet")
    frame.iloc[half:].to_parquet(parts / "part-1.parquet")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(metric=metric))

    done = subprocess.run([sys.executable, "-m", "modelgate.cli", "evaluate", "--model", str(archive),
                           "--data", str(data), "--policy", str(policy), "--segments", "region",
                           "--format", "json"], capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 3), done.stderr[-2000:]
    payload: dict[str, Any] = json.loads(done.stdout)

    seg = payload["segments"]
    records = {r["segment"]: r for r in seg["records"]}
    assert set(records) == {"region=east", "region=north", "region=south"}
    assert seg["weakest_slices"] is None  # the search is binary only
    y = frame[label].to_numpy()
    for value in ("east", "north", "south"):
        mask = (frame["region"] == value).to_numpy()
        record = records[f"region={value}"]
        assert record["n"] == mask.sum() and record["positives"] is None and record["judged"]
        own, rest = _sklearn(name, y[mask], zoo.native[mask]), _sklearn(name, y[~mask], zoo.native[~mask])
        for key, expected in own.items():
            got = record["metrics"][key]
            # the ONNX model computes in float32, the native one in float64
            assert got["value"] == pytest.approx(expected, rel=1e-4, abs=1e-4), (value, key)
            assert got["rest_value"] == pytest.approx(rest[key], rel=1e-4, abs=1e-4), (value, key)
            assert got["ci_lower"] <= got["value"] <= got["ci_upper"]
            assert 0.0 <= got["p_value"] <= got["q_value"] <= 1.0
    check = {c["check_id"]: c for c in payload["gate"]["checks"]}[f"segment:{metric}:margin"]
    assert check["verdict"] in ("pass", "inconclusive", "breach")
    assert "family of 3 one-sided tests" in check["reason"]
    run_id = payload["evaluation_run_id"]
    with transaction(settings_env.database_url) as cur:
        cur.execute("SELECT segment, n, positives FROM analytics.segment_metrics "
                    "WHERE evaluation_run_id = %s AND metric_name = %s ORDER BY segment",
                    (run_id, metric))
        assert cur.fetchall() == [(f"region={v}", int((frame["region"] == v).sum()), None)
                                  for v in ("east", "north", "south")]
        cur.execute("SELECT count(*) FROM analytics.segment_gate_checks WHERE evaluation_run_id = %s",
                    (run_id,))
        assert cur.fetchone() == (3,)

    with urllib.request.urlopen(payload["report"]) as page:  # the local S3 server's link
        report = page.read().decode()
    assert '<h2 id="segments">Segments</h2>' in report and "region=north" in report

    # the same rows as two partitions: scored one by one, merged in order, the same segments
    split = run_evaluation_locally(archive, parts, policy, segments=("region",))
    assert split.payload["segments"]["records"] == seg["records"]
