"""`modelgate evaluate` beside the plain script a data scientist would write, on one file, in one run.

The plain script (:data:`PLAIN_SCRIPT`, run as its own Python process) computes point metrics
only: pandas reads the whole parquet file, an ONNX Runtime session with default options scores
every row in one ``run`` call, scikit-learn computes ROC AUC, accuracy, precision, recall, F1,
log loss and Brier score, and fairlearn the per-group rates and the demographic-parity and
equalized-odds differences for each sensitive feature. ``modelgate evaluate --model ARCHIVE
--data FILE`` runs as the user runs it (a fresh process, a fresh results database, the local
object store) and does much more: intervals for every metric (1000 resamples), fairness gaps
with intervals, SHAP, the gate, the HTML report, everything stored. Each side is timed as a whole
process (start-up and imports included) with its peak RSS.

The two must agree: the plain script's ROC AUC, accuracy and each sensitive feature's
equalized-odds and demographic-parity differences are checked against the values
`modelgate evaluate` reports (``--format json``), to 1e-6.

Run: ``.venv/bin/python -m bench.bench_plain_script --rows 10000000``
(needs PostgreSQL on ``--pg``, default ``postgresql://postgres@127.0.0.1:5432/postgres``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_evaluate_scale import _database, _generate

#: What a data scientist would write for point metrics: pandas, ONNX Runtime's default
#: session, scikit-learn, fairlearn. Arguments: model.onnx, data.parquet; prints JSON.
PLAIN_SCRIPT = r'''
import json, sys
import numpy as np, pandas as pd, onnxruntime as ort
from sklearn import metrics
from fairlearn.metrics import (MetricFrame, demographic_parity_difference,
                               equalized_odds_difference, selection_rate)

model, data = sys.argv[1], sys.argv[2]
numeric = ["age", "prestg10", "childs"]
categorical = ["occrecode", "wrkstat", "educcat", "maritalcat"]
df = pd.read_parquet(data)
session = ort.InferenceSession(model)
feeds = {c: df[[c]].to_numpy(dtype=np.float32) for c in numeric}
feeds.update({c: df[[c]].fillna("").astype(str).to_numpy(dtype=object) for c in categorical})
proba = session.run(["probabilities"], feeds)[0][:, 1].astype(np.float64)
y = df["high_income"].to_numpy()
pred = (proba >= 0.5).astype(int)
out = {"roc_auc": metrics.roc_auc_score(y, proba), "accuracy": metrics.accuracy_score(y, pred),
       "precision": metrics.precision_score(y, pred), "recall": metrics.recall_score(y, pred),
       "f1": metrics.f1_score(y, pred), "log_loss": metrics.log_loss(y, proba),
       "brier": metrics.brier_score_loss(y, proba)}
for feature in ["gender", "age_group"]:
    groups = df[feature].fillna("__missing__")
    frame = MetricFrame(metrics={"selection_rate": selection_rate, "recall": metrics.recall_score},
                        y_true=y, y_pred=pred, sensitive_features=groups)
    out[f"{feature}.by_group"] = frame.by_group.to_dict()
    out[f"{feature}.demographic_parity_difference"] = demographic_parity_difference(
        y, pred, sensitive_features=groups)
    out[f"{feature}.equalized_odds_difference"] = equalized_odds_difference(
        y, pred, sensitive_features=groups)
print(json.dumps({k: v for k, v in out.items() if not k.endswith(".by_group")}))
'''


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, str, int]:
    """Wall seconds, CPU seconds (user + sys), peak RSS (MB), stdout and exit status of one
    child process."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert child.stdout is not None
    out = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    return (time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            out, os.waitstatus_to_exitcode(status))


def _onnx_of(archive: Path, out: Path) -> Path:
    import tarfile

    with tarfile.open(archive) as tar:
        member = tar.extractfile("model.onnx")
        assert member is not None
        out.write_bytes(member.read())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = parser.parse_args()
    from modelgate.demo.data import build_demo

    with tempfile.TemporaryDirectory(prefix="bench-plain-") as tmp:
        root = Path(tmp)
        demo = build_demo(root / "demo", version="1", variant="baseline")
        data = root / "heldout"
        data.mkdir()
        _generate(demo.heldout_path, data, args.rows, args.rows, seed=0)  # one file
        (file,) = sorted(data.glob("*.parquet"))
        onnx_path = _onnx_of(demo.archive_path, root / "model.onnx")
        (root / "plain.py").write_text(PLAIN_SCRIPT)
        plain_s, plain_cpu, plain_mb, plain_out, plain_rc = _timed(
            [sys.executable, str(root / "plain.py"), str(onnx_path), str(file)], dict(os.environ))
        if plain_rc != 0:
            raise SystemExit(f"the plain script failed with exit code {plain_rc}")
        db_name = f"modelgate_bench_plain_{os.getpid()}"
        env = {**os.environ, "MODELGATE_HOME": str(root / "home"),
               "MODELGATE_DATABASE_URL": _database(args.pg, db_name, create=True)}
        for key in ("MODELGATE_S3_ENDPOINT", "AIRFLOW_CONN_MODELGATE_S3"):
            env.pop(key, None)
        try:
            ours_s, ours_cpu, ours_mb, ours_out, ours_rc = _timed(
                [str(Path(sys.executable).with_name("modelgate")), "evaluate", "--model",
                 str(demo.archive_path), "--data", str(file), "--format", "json"], env)
        finally:
            _database(args.pg, db_name, create=False)
        if ours_rc not in (0, 3):  # 3: the gate blocked, still a whole evaluation
            raise SystemExit(f"modelgate evaluate failed with exit code {ours_rc}")
    plain = json.loads(plain_out.strip().splitlines()[-1])
    ours = json.loads(ours_out)
    ours_values = {name: ours["metrics"][name]["value"] for name in ("roc_auc", "accuracy")}
    for feature, section in ours["fairness"].items():  # the gaps both sides compute
        for gap in ("equalized_odds_difference", "demographic_parity_difference"):
            if gap in section["gaps"] and f"{feature}.{gap}" in plain:
                ours_values[f"{feature}.{gap}"] = section["gaps"][gap]["value"]
    for name, value in ours_values.items():
        if abs(value - plain[name]) > 1e-6:
            raise SystemExit(f"{name}: modelgate {value} vs the plain script {plain[name]}")
    print(f"rows {args.rows:,} in one parquet file; both sides as whole processes, one after the other")
    print("| path | what it computes | wall s | CPU s | peak RSS MB |\n|---|---|---:|---:|---:|")
    print(f"| plain script (pandas, ONNX Runtime default session, scikit-learn, fairlearn) | "
          f"7 point metrics, per-group rates and 2 gaps per sensitive feature | {plain_s:.1f} | "
          f"{plain_cpu:.1f} | {plain_mb:.0f} |")
    print(f"| `modelgate evaluate --format json` | metrics with intervals, fairness with "
          f"intervals, SHAP, gate, report, stored | {ours_s:.1f} | {ours_cpu:.1f} | {ours_mb:.0f} |")
    print(f"ratio plain / modelgate: {plain_s / ours_s:.2f}x wall, {plain_cpu / ours_cpu:.2f}x CPU; "
          f"load average {os.getloadavg()[0]:.1f} at the end; equal in both (to 1e-6): "
          + ", ".join(f"{name} {value:.6f}" for name, value in ours_values.items()))


if __name__ == "__main__":
    main()
