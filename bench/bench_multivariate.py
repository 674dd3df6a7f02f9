"""Multivariate drift benchmark: modelgate's sliced Wasserstein vs NannyML's PCA reconstruction error.

Synthetic, seeded data: ``--rows`` reference and as many current rows of 20 numeric features,
standard normal with two correlated pairs; in the current data the correlation of the first
pair flips sign (every marginal unchanged: no per-feature statistic can see it). Written to
``.npy`` under bench/out/ (gitignored). Each contender runs in a fresh subprocess and times,
after its imports, from the arrays in memory to its verdict:

* modelgate_build: ``build_multivariate_reference`` (once per model version, not per run)
* modelgate: ``multivariate_drift`` against the built reference (what each drift run does)
* nannyml: ``DataReconstructionDriftCalculator(chunk_number=1)``, ``fit`` on the reference
  and ``calculate`` on the current rows (its fit is its "reference build"; both are timed)

NannyML runs in its own venv (``bash bench/setup_peers.sh``). Run from the repository root:

    .venv/bin/python -m bench.bench_multivariate            # 1M x 1M x 20
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
N_FEATURES = 20
PYTHON = {"modelgate": ROOT / ".venv/bin/python", "nannyml": ROOT / ".venv-nannyml/bin/python"}


def generate(rows: int) -> tuple[Path, Path]:
    import numpy as np

    OUT.mkdir(parents=True, exist_ok=True)
    paths = OUT / f"mv-reference-{rows}.npy", OUT / f"mv-current-{rows}.npy"
    if all(p.exists() for p in paths):
        return paths
    rng = np.random.default_rng(0)
    for path, rho in zip(paths, (0.8, -0.8), strict=True):
        x = rng.standard_normal((rows, N_FEATURES))
        # pair (0, 1): correlation rho (flips in the current data); pair (2, 3): 0.5 in both
        x[:, 1] = rho * x[:, 0] + np.sqrt(1 - rho**2) * x[:, 1]
        x[:, 3] = 0.5 * x[:, 2] + np.sqrt(0.75) * x[:, 3]
        np.save(path, x)
    return paths


def work_modelgate(ref_path: str, cur_path: str) -> dict[str, Any]:
    import numpy as np
    from modelgate.drift.multivariate import build_multivariate_reference, multivariate_drift

    reference, current = np.load(ref_path), np.load(cur_path)
    names = [f"num_{i:02d}" for i in range(N_FEATURES)]
    t0 = time.perf_counter()
    ref = build_multivariate_reference(reference, features=names)
    t1 = time.perf_counter()
    result = multivariate_drift(ref, current)
    t2 = time.perf_counter()
    return {"build_s": t1 - t0, "run_s": t2 - t1, "verdict": result.verdict,
            "note": f"SW2 = {result.statistic:.3f}, threshold {result.threshold:.3f}, "
                    f"{result.n_projections} directions, {result.n_compared:,} rows compared per side"}


def work_nannyml(ref_path: str, cur_path: str) -> dict[str, Any]:
    import nannyml as nml
    import numpy as np
    import pandas as pd

    names = [f"num_{i:02d}" for i in range(N_FEATURES)]
    reference = pd.DataFrame(np.load(ref_path), columns=names)
    current = pd.DataFrame(np.load(cur_path), columns=names)
    t0 = time.perf_counter()
    calc = nml.DataReconstructionDriftCalculator(column_names=names, chunk_number=1).fit(reference)
    t1 = time.perf_counter()
    result = calc.calculate(current).filter(period="analysis").to_df()
    t2 = time.perf_counter()
    error = float(result[("reconstruction_error", "value")].iloc[0])
    alert = bool(result[("reconstruction_error", "alert")].iloc[0])
    return {"build_s": t1 - t0, "run_s": t2 - t1, "verdict": "drift" if alert else "ok",
            "note": f"nannyml {nml.__version__}: reconstruction error {error:.4f}"}


def run(contender: str, paths: tuple[Path, Path]) -> dict[str, Any]:
    python = PYTHON[contender]
    if not python.exists():
        return {"error": f"{python} missing (run bench/setup_peers.sh)"}
    t0 = time.perf_counter()
    proc = subprocess.run([str(python), str(Path(__file__).resolve()), "--worker", contender,
                           str(paths[0]), str(paths[1])], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--worker", nargs=3, metavar=("CONTENDER", "REF", "CUR"))
    args = parser.parse_args()
    if args.worker:
        contender, ref, cur = args.worker
        if contender == "modelgate":
            sys.path.insert(0, str(ROOT))
        worker = work_modelgate if contender == "modelgate" else work_nannyml
        print(json.dumps(worker(ref, cur)))
        return
    paths = generate(args.rows)
    print(f"### {args.rows:,} reference x {args.rows:,} current rows, {N_FEATURES} numeric features\n")
    print("| contender | reference build s | per-run s | process s | verdict | note |")
    print("|---|---:|---:|---:|---|---|")
    for contender in ("modelgate", "nannyml"):
        r = run(contender, paths)
        if "error" in r:
            print(f"| {contender} | - | - | - | - | {r['error']} |")
        else:
            print(f"| {contender} | {r['build_s']:.2f} | {r['run_s']:.2f} | {r['process_s']:.1f} "
                  f"| {r['verdict']} | {r['note']} |")


if __name__ == "__main__":
    main()
