"""Benchmark: fairness gaps and bootstrap intervals (modelgate vs fairlearn / scikit-learn loops).

Run from the repository root::

    .venv/bin/python -m bench.bench_fairness

Prints a markdown table.  Loops over fairlearn / scikit-learn are timed on a few
resamples and extrapolated to 1000 (said so in the table).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from fairlearn.metrics import equalized_odds_difference as fl_eod
from modelgate.evaluation.metrics import compare, evaluate
from modelgate.fairness import equalized_odds_difference, fairness_report
from sklearn import metrics as skm

N_BIG = 1_000_000
N_BOOT_ROWS = 100_000
N_BOOT = 1000
LOOP_SAMPLE = 5


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 4, n)
    y = (rng.random(n) < 0.3 + 0.05 * groups).astype(np.int64)
    score = np.clip(rng.normal(0.35 + 0.3 * y + 0.02 * groups, 0.2), 0.0, 1.0)
    return y, (score >= 0.5).astype(np.int64), groups, score


def _fairlearn_loop(y: np.ndarray, pred: np.ndarray, groups: np.ndarray) -> float:
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(LOOP_SAMPLE):
        idx = rng.integers(0, len(y), len(y))
        fl_eod(y[idx], pred[idx], sensitive_features=groups[idx])
    return (time.perf_counter() - start) / LOOP_SAMPLE * N_BOOT


def _sklearn_loop(y: np.ndarray, score: np.ndarray) -> float:
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(LOOP_SAMPLE):
        idx = rng.integers(0, len(y), len(y))
        yy, ss = y[idx], score[idx]
        pred = (ss >= 0.5).astype(int)
        skm.roc_auc_score(yy, ss)
        skm.accuracy_score(yy, pred)
        skm.precision_score(yy, pred)
        skm.recall_score(yy, pred)
        skm.f1_score(yy, pred)
        skm.log_loss(yy, ss)
        skm.brier_score_loss(yy, ss)
    return (time.perf_counter() - start) / LOOP_SAMPLE * N_BOOT


def main() -> None:
    y, pred, groups, score = _data(N_BIG, 0)
    labels = np.array(["w", "x", "y", "z"])[groups]
    ours = equalized_odds_difference(y, pred, groups)
    theirs = fl_eod(y, pred, sensitive_features=groups)
    assert abs(ours - theirs) < 1e-12, (ours, theirs)
    rows = [
        ("EOD, 1M rows, 4 int groups", _best(lambda: equalized_odds_difference(y, pred, groups), 5),
         _best(lambda: fl_eod(y, pred, sensitive_features=groups), 2), "measured", "< 0.05 s"),
        ("EOD, 1M rows, 4 string groups", _best(lambda: equalized_odds_difference(y, pred, labels),
                                                5),
         _best(lambda: fl_eod(y, pred, sensitive_features=labels), 2), "measured", ""),
    ]
    yb, pb, gb, sb = y[:N_BOOT_ROWS], pred[:N_BOOT_ROWS], groups[:N_BOOT_ROWS], score[:N_BOOT_ROWS]
    rows.append((
        "fairness_report (6 gaps) with 1000 bootstrap resamples, 100k rows",
        _best(lambda: fairness_report(yb, pb, gb, sensitive_feature="g", n_bootstrap=N_BOOT), 3),
        _fairlearn_loop(yb, pb, gb), f"fairlearn EOD only, {LOOP_SAMPLE} resamples x 200",
        "< 1 s",
    ))
    rows.append((
        "evaluate (7 metrics + calibration), 1000 resamples, 100k rows, continuous scores",
        _best(lambda: evaluate(yb, sb, n_bootstrap=N_BOOT), 1),
        _sklearn_loop(yb, sb), f"sklearn loop, {LOOP_SAMPLE} resamples x 200", "seconds",
    ))
    rounded = np.round(sb, 3)
    rows.append((
        "evaluate, 1000 resamples, 100k rows, scores rounded to 0.001",
        _best(lambda: evaluate(yb, rounded, n_bootstrap=N_BOOT), 1),
        _sklearn_loop(yb, rounded), f"sklearn loop, {LOOP_SAMPLE} resamples x 200", "seconds",
    ))
    other = np.clip(sb + np.random.default_rng(1).normal(0, 0.05, N_BOOT_ROWS), 0, 1)
    rows.append((
        "compare (paired deltas, 2 models), 1000 resamples, 100k rows",
        _best(lambda: compare(sb, other, yb, n_bootstrap=N_BOOT), 1),
        2 * _sklearn_loop(yb, sb), f"2 x sklearn loop, {LOOP_SAMPLE} resamples x 200", "seconds",
    ))
    print("| task | modelgate (s) | reference (s) | reference timing | target |")
    print("|---|---:|---:|---|---|")
    for task, mine, ref, how, target in rows:
        print(f"| {task} | {mine:.4f} | {ref:.2f} | {how} | {target} |")


if __name__ == "__main__":
    main()
