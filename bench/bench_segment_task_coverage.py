"""Benchmark: coverage of the multiclass and regression segment intervals (issue #43).

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_segment_task_coverage --runs 400

Per run (seeded): a segment of ``size`` rows and a rest of twice as many.

* Regression: label ``N(0, 1)``, prediction ``label + e`` with ``e`` Student t (5 degrees of
  freedom, heavy-tailed as real errors are) scaled 0.6 in the segment and 0.5 in the rest.
* Multiclass: 3 classes with frequencies 0.5, 0.3, 0.2, logits ``N(0, 1)`` plus ``b`` on the
  true class, ``b`` 1.4 in the segment and 1.1 in the rest, probabilities the softmax.

The true values are each population's metrics on 2,000,000 (regression) or 1,000,000
(multiclass) rows drawn the same way.  Every metric's segment interval and difference interval
(:mod:`modelgate.evaluation.segment_rows`, 95 %) is checked for holding the truth; prints one row
per task and size: the share of runs covered, segment / difference, per metric.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
from modelgate.evaluation.segment_rows import evaluate_multiclass_segments, evaluate_regression_segments
from modelgate.fairness.disaggregate import encode_groups
from sklearn import metrics as skm

REGRESSION = ("rmse", "mae", "r2")
MULTICLASS = ("accuracy", "macro_f1", "roc_auc_ovr_macro", "log_loss", "recall[2]", "precision[1]")
NOISE = {"seg": 0.6, "rest": 0.5}
SKILL = {"seg": 1.4, "rest": 1.1}


def _regression(rng: np.random.Generator, n: int, key: str) -> tuple[np.ndarray, np.ndarray]:
    y = rng.normal(size=n)
    return y, y + NOISE[key] * rng.standard_t(5, n)


def _multiclass(rng: np.random.Generator, n: int, key: str) -> tuple[np.ndarray, np.ndarray]:
    y = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), y] += SKILL[key]
    p = np.exp(logits)
    return y, p / p.sum(axis=1, keepdims=True)


def _regression_truth(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    return {"rmse": math.sqrt(skm.mean_squared_error(y, pred)),
            "mae": skm.mean_absolute_error(y, pred), "r2": skm.r2_score(y, pred)}


def _multiclass_truth(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    pred = p.argmax(axis=1)
    return {"accuracy": skm.accuracy_score(y, pred),
            "macro_f1": skm.f1_score(y, pred, average="macro"),
            "roc_auc_ovr_macro": skm.roc_auc_score(y, p, multi_class="ovr"),
            "log_loss": skm.log_loss(y, p),
            "recall[2]": skm.recall_score(y, pred, labels=[2], average=None)[0],
            "precision[1]": skm.precision_score(y, pred, labels=[1], average=None)[0]}


def _coverage(task: str, size: int, runs: int, truth: dict[str, dict[str, float]],
              draw: Callable[..., tuple[np.ndarray, np.ndarray]], names: tuple[str, ...]) -> str:
    own = dict.fromkeys(names, 0)
    diff = dict.fromkeys(names, 0)
    counted = dict.fromkeys(names, 0)
    for run in range(runs):
        rng = np.random.default_rng([size, run, len(task)])
        ys, ps = draw(rng, size, "seg")
        yr, pr = draw(rng, 2 * size, "rest")
        y, p = np.concatenate([ys, yr]), np.concatenate([ps, pr])
        columns = {"g": encode_groups(np.array(["seg"] * size + ["rest"] * (2 * size)))}
        report = (evaluate_regression_segments(y, p, columns=columns, min_rows=2)
                  if task == "regression" else
                  evaluate_multiclass_segments(y, p, classes=(0, 1, 2), columns=columns,
                                               min_rows=2, seed=run))
        seg = next(r for r in report.segments if r.values == ("seg",))
        for m in seg.metrics:
            if m.name not in names or not (np.isfinite(m.ci_lower) and np.isfinite(m.difference_ci_lower)):
                continue
            counted[m.name] += 1
            t = truth["seg"][m.name]
            own[m.name] += m.ci_lower <= t <= m.ci_upper
            d = t - truth["rest"][m.name]
            diff[m.name] += m.difference_ci_lower <= d <= m.difference_ci_upper
    cells = [f"{own[m] / max(counted[m], 1):.3f} / {diff[m] / max(counted[m], 1):.3f}" for m in names]
    return f"| {task} | {size:,} | {runs} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--sizes", type=str, default="100,300,1000")
    parser.add_argument("--tasks", type=str, default="regression,multiclass")
    args = parser.parse_args()
    big = np.random.default_rng(12345)
    for task in args.tasks.split(","):
        draw, oracle, names = ((_regression, _regression_truth, REGRESSION) if task == "regression"
                               else (_multiclass, _multiclass_truth, MULTICLASS))
        rows = 2_000_000 if task == "regression" else 1_000_000
        truth = {k: oracle(*draw(big, rows, k)) for k in ("seg", "rest")}
        print(f"| task | segment rows | runs | {' | '.join(names)} |", flush=True)
        for size in (int(v) for v in args.sizes.split(",")):
            print(_coverage(task, size, args.runs, truth, draw, names), flush=True)


if __name__ == "__main__":
    main()
