"""modelgate's estimated binary performance side by side with NannyML's CBPE, on one simulation.

    bash bench/setup_peers.sh                          # once: NannyML in .venv-nannyml (pandas < 3)
    .venv/bin/python -m bench.bench_estimation_nannyml [--chunks 40] [--chunk-rows 5000]

Data (seeded): the simulation of ``tests/drift/test_performance_estimation_sim.py``: truth
``P(y | x) = sigmoid(2x)``, model score ``sigmoid(1.2x + 0.4)`` (miscalibrated), a 50,000-row
labelled reference, then ``--chunks`` analysis chunks of ``--chunk-rows`` rows, each with its own
covariate shift (``x ~ N(mu, sd)``). Both estimate every chunk from its scores alone; NannyML
runs in its own virtualenv (it pins pandas < 3) with ``chunk_size`` equal to the chunk size.
Printed per metric: the mean absolute difference between the two estimates, and for each the
share of chunks whose realised metric (from the hidden labels) lies in its interval and the mean
interval width. NannyML's interval is its estimate +/- 3 sampling errors; ours is 95%.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
NANNYML = ROOT / ".venv-nannyml" / "bin" / "python"
METRICS = ("roc_auc", "accuracy", "precision", "recall", "f1")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def generate(chunks: int, chunk_rows: int) -> tuple[Path, Path]:
    import pandas as pd

    rng = np.random.default_rng(7)

    def draw(n: int, mu: float, sd: float) -> pd.DataFrame:
        x = rng.normal(mu, sd, n)
        s = _sigmoid(1.2 * x + 0.4)
        return pd.DataFrame({"y_pred_proba": s, "y_pred": (s >= 0.5).astype(int),
                             "y_true": (rng.uniform(size=n) < _sigmoid(2 * x)).astype(int)})

    OUT.mkdir(parents=True, exist_ok=True)
    ref, cur = OUT / "estimation_ref.parquet", OUT / "estimation_cur.parquet"
    draw(50_000, 0.0, 1.0).to_parquet(ref)
    parts = [draw(chunk_rows, mu, sd) for mu, sd in zip(rng.uniform(-1, 1, chunks),
                                                       rng.uniform(0.5, 1.5, chunks), strict=True)]
    pd.concat(parts, ignore_index=True).to_parquet(cur)
    return ref, cur


def realised(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

    yhat = (s >= 0.5).astype(int)
    return {"roc_auc": roc_auc_score(y, s), "accuracy": accuracy_score(y, yhat),
            "precision": precision_score(y, yhat), "recall": recall_score(y, yhat),
            "f1": f1_score(y, yhat)}


def ours(ref_path: Path, cur_path: Path, chunk_rows: int) -> list[dict[str, list[float]]]:
    import pandas as pd
    from modelgate.drift.performance_estimation import estimate_binary, fit_isotonic

    ref, cur = pd.read_parquet(ref_path), pd.read_parquet(cur_path)
    cal = fit_isotonic(ref["y_pred_proba"].to_numpy(), ref["y_true"].to_numpy())
    out = []
    for start in range(0, len(cur), chunk_rows):
        est = estimate_binary(cal, cur["y_pred_proba"].to_numpy()[start:start + chunk_rows],
                              threshold=0.5)
        out.append({m.metric: [m.estimate, m.lower, m.upper] for m in est.metrics})
    return out


def worker_nannyml(ref_path: Path, cur_path: Path, chunk_rows: int) -> None:
    import nannyml as nml
    import pandas as pd

    ref, cur = pd.read_parquet(ref_path), pd.read_parquet(cur_path)
    cbpe = nml.CBPE(y_pred_proba="y_pred_proba", y_pred="y_pred", y_true="y_true",
                    metrics=list(METRICS), chunk_size=chunk_rows, problem_type="classification_binary")
    cbpe.fit(ref)
    df = cbpe.estimate(cur.drop(columns=["y_true"])).filter(period="analysis").to_df()
    rows = []
    for i in range(len(df)):
        rows.append({m: [float(df[(m, "value")].iloc[i]),
                         float(df[(m, "lower_confidence_boundary")].iloc[i]),
                         float(df[(m, "upper_confidence_boundary")].iloc[i])] for m in METRICS})
    json.dump({"nannyml": nml.__version__, "chunks": rows}, sys.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--chunk-rows", type=int, default=5000)
    parser.add_argument("--worker", choices=("nannyml",))
    parser.add_argument("--ref", type=Path)
    parser.add_argument("--cur", type=Path)
    args = parser.parse_args()
    if args.worker:
        worker_nannyml(args.ref, args.cur, args.chunk_rows)
        return
    if not NANNYML.exists():
        sys.exit(f"{NANNYML} missing: run bash bench/setup_peers.sh")
    ref_path, cur_path = generate(args.chunks, args.chunk_rows)
    mine = ours(ref_path, cur_path, args.chunk_rows)
    ran = subprocess.run([str(NANNYML), str(Path(__file__).resolve()), "--worker", "nannyml",
                          "--ref", str(ref_path), "--cur", str(cur_path),
                          "--chunk-rows", str(args.chunk_rows)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    theirs = json.loads(ran.stdout)
    import pandas as pd

    cur = pd.read_parquet(cur_path)
    truth = [realised(cur["y_true"].to_numpy()[i:i + args.chunk_rows],
                      cur["y_pred_proba"].to_numpy()[i:i + args.chunk_rows])
             for i in range(0, len(cur), args.chunk_rows)]
    print(f"NannyML {theirs['nannyml']}; {len(truth)} chunks of {args.chunk_rows:,} rows\n")
    print("| metric | mean abs(ours - NannyML) | ours: covered | ours: mean width "
          "| NannyML: covered | NannyML: mean width |\n|---|---|---|---|---|---|")
    for m in METRICS:
        a = np.array([c[m] for c in mine])
        b = np.array([c[m] for c in theirs["chunks"]])
        r = np.array([t[m] for t in truth])

        def cov(x: np.ndarray, r: np.ndarray = r) -> float:
            return float(np.mean((x[:, 1] <= r) & (r <= x[:, 2])))

        print(f"| {m} | {np.mean(np.abs(a[:, 0] - b[:, 0])):.1e} | {cov(a):.3f} | "
              f"{np.mean(a[:, 2] - a[:, 1]):.4f} | {cov(b):.3f} | {np.mean(b[:, 2] - b[:, 1]):.4f} |")


if __name__ == "__main__":
    main()
