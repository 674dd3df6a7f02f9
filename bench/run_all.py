"""Run every benchmark in turn (``make bench``); each prints its own markdown table.

The drift benchmark compares with Evidently and NannyML, which live in their own virtualenvs
(``bench/setup_peers.sh`` creates them; they pin pandas < 3). Figures, commands and the machine
they were measured on are recorded in bench/RESULTS.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = ("bench_fairness", "bench_scoring", "bench_shap", "bench_tree_shap", "bench_adwin",
              "bench_drift", "bench_multivariate", "bench_evaluate_scale", "bench_score_stage",
              "bench_plain_script", "bench_multiclass_evaluate",
              "bench_gate_verdicts",
              "bench_coverage", "bench_estimation", "bench_estimation_nannyml", "bench_drift_min_rows",
              "bench_js_null")


def main() -> int:
    if not (REPO / ".venv-evidently").exists() or not (REPO / ".venv-nannyml").exists():
        subprocess.run(["bash", str(REPO / "bench" / "setup_peers.sh")], check=True, cwd=REPO)
    failed = []
    for name in BENCHMARKS:
        print(f"\n## {name}\n", flush=True)
        if subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=REPO).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
