"""Benchmark: coverage of the closed-form segment and difference intervals (issue #43 item 6).

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_segment_coverage --runs 400

Per run (seeded): a segment of ``size`` rows and a rest of twice as many, label Bernoulli(0.4),
score ``expit(N(-0.5 + b y, 1))`` with ``b`` 1.5 in the segment and 1.2 in the rest (the segment
truly better, so the difference is not 0).  The true values are each population's metrics on
2,000,000 rows drawn the same way.  Every metric's segment interval and difference interval
(:func:`modelgate.evaluation.segments.evaluate_segments`, 95 %) is checked for holding the truth;
prints one row per size: the share of runs covered, segment / difference, per metric.
"""

from __future__ import annotations

import argparse

import numpy as np
from modelgate.evaluation.metrics import METRIC_NAMES
from modelgate.evaluation.segment_statistics import collect_segments
from modelgate.evaluation.segments import evaluate_segments
from modelgate.fairness.disaggregate import encode_groups
from sklearn.metrics import (
    accuracy_score,
    brier_score_loss,
    f1_score,
    log_loss,
    precision_score,
    recall_score,
    roc_auc_score,
)

SKILL = {"seg": 1.5, "rest": 1.2}


def _draw(rng: np.random.Generator, n: int, skill: float) -> tuple[np.ndarray, np.ndarray]:
    y = (rng.random(n) < 0.4).astype(np.int8)
    s = 1.0 / (1.0 + np.exp(-rng.normal(-0.5 + skill * y, 1.0)))
    return y, s


def _truth(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    p = (s >= 0.5).astype(int)
    return {"roc_auc": roc_auc_score(y, s), "accuracy": accuracy_score(y, p),
            "precision": precision_score(y, p), "recall": recall_score(y, p),
            "f1": f1_score(y, p), "log_loss": log_loss(y, s), "brier": brier_score_loss(y, s)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--sizes", type=str, default="100,1000,10000")
    args = parser.parse_args()
    big = np.random.default_rng(12345)
    truth = {k: _truth(*_draw(big, 2_000_000, b)) for k, b in SKILL.items()}
    print("| segment rows | runs | " + " | ".join(METRIC_NAMES) + " |")
    for size in (int(v) for v in args.sizes.split(",")):
        own = {m: 0 for m in METRIC_NAMES}
        diff = {m: 0 for m in METRIC_NAMES}
        counted = {m: 0 for m in METRIC_NAMES}
        for run in range(args.runs):
            rng = np.random.default_rng([size, run])
            ys, ss = _draw(rng, size, SKILL["seg"])
            yr, sr = _draw(rng, 2 * size, SKILL["rest"])
            y, s = np.concatenate([ys, yr]), np.concatenate([ss, sr])
            g = np.array(["seg"] * size + ["rest"] * (2 * size))
            stats = collect_segments(y, s, threshold=0.5, columns={"g": encode_groups(g)})
            report = evaluate_segments(stats, min_rows=2)
            seg = next(r for r in report.segments if r.values == ("seg",))
            for m in seg.metrics:
                if not (np.isfinite(m.ci_lower) and np.isfinite(m.difference_ci_lower)):
                    continue
                counted[m.name] += 1
                t = truth["seg"][m.name]
                own[m.name] += m.ci_lower <= t <= m.ci_upper
                d = t - truth["rest"][m.name]
                diff[m.name] += m.difference_ci_lower <= d <= m.difference_ci_upper
        cells = [f"{own[m] / max(counted[m], 1):.3f} / {diff[m] / max(counted[m], 1):.3f}"
                 for m in METRIC_NAMES]
        print(f"| {size:,} | {args.runs} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
