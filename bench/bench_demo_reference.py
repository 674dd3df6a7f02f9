"""Which reference the demo's performance estimates should be calibrated on (issue #39 item 7).

For each of the demo's first 7 drift intervals (v1, survey years 1991-2002), the estimated
accuracy, ROC AUC, precision and F1 of ``modelgate drift --model`` (CBPE, 95% intervals) are
read against the realised values the labels give (scikit-learn on the scored live rows joined
to their labels), once with the training rows (``reference.parquet``) as the reference and
once with the held-out set (``heldout.parquet``). Counts the realised values inside the
estimate's interval. A few seconds per interval on one core.

Run: ``.venv/bin/python -m bench.bench_demo_reference .modelgate/demo/v1`` (a ``make demo``
build, or a test cache's ``v1``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from sklearn.metrics import accuracy_score, f1_score, precision_score, roc_auc_score

INTERVALS = 7
METRICS = ("accuracy", "roc_auc", "precision", "f1")


def _cli(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "modelgate.cli", *args], capture_output=True,
                          text=True, check=False).stdout


def _realised(archive: str, part: Path, labels: Path, work: Path) -> dict[str, float]:
    _cli("score", "--model", archive, "--data", str(part), "--out", str(work / "s.parquet"),
         "--keep", "row_id")
    scored = pd.read_parquet(work / "s.parquet").merge(pd.read_parquet(labels), on="row_id")
    y, predicted = scored["high_income"].to_numpy(), scored["prediction"].to_numpy()
    return {"accuracy": accuracy_score(y, predicted), "roc_auc": roc_auc_score(y, scored["score"]),
            "precision": precision_score(y, predicted), "f1": f1_score(y, predicted)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path, help="a demo build's v1 folder")
    build = parser.parse_args().build
    archive = str(next((build / "model").glob("model-*-v1.tar.gz")))
    days = sorted(p.name for p in (build / "live").iterdir())[:INTERVALS]
    with tempfile.TemporaryDirectory() as tmp:
        realised = {d: _realised(archive, build / "live" / d / "part-0.parquet",
                                 build / "labels" / d / "part-0.parquet", Path(tmp)) for d in days}
    for reference in ("reference", "heldout"):
        inside = 0
        for day in days:
            out = json.loads(_cli("drift", "--reference", str(build / f"{reference}.parquet"),
                                  "--current", str(build / "live" / day / "part-0.parquet"),
                                  "--model", archive, "--format", "json"))
            for m in out["estimated_performance"]["current"]["metrics"]:
                if m["metric"] in METRICS:
                    inside += m["lower"] <= realised[day][m["metric"]] <= m["upper"]
        print(f"{reference}.parquet: {inside} of {INTERVALS * len(METRICS)} realised values "
              "inside the estimate's 95% interval")


if __name__ == "__main__":
    main()
