"""Benchmark: CPU time of the multiclass and regression segments against the whole evaluation.

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_segment_task_speed --rows 100000 --values 10

Two segment columns of ``values`` values each (:mod:`modelgate.evaluation.segment_rows`),
against the whole data's metrics
(:func:`~modelgate.evaluation.multiclass.evaluate_multiclass`,
:func:`~modelgate.evaluation.regression.evaluate_regression`), 1,000 resamples, one after the
other in one process; CPU seconds (``time.process_time``), so a loaded machine changes them
little.  Prints one markdown row per task, and one for the multiclass segments evaluated by
the route before issue #43's item 1 (each rest's rows evaluated on their own,
:func:`~modelgate.evaluation.multiclass.evaluate_multiclass` with Hall's log-loss interval),
side by side in the same run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.regression import evaluate_regression
from modelgate.evaluation.segment_intervals import hall_mean_interval
from modelgate.evaluation.segment_rows import (
    evaluate_multiclass_segments,
    evaluate_regression_segments,
    segment_rows,
)
from modelgate.fairness.disaggregate import encode_groups

from modelgate.intervals import interval_holding


def _cpu(call: Callable[[], object]) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def _each_rest_from_its_rows(y: np.ndarray, proba: np.ndarray, columns: dict) -> object:
    """The multiclass segments as computed before the rests were read off the totals."""
    eps = np.finfo(np.float64).eps
    losses = -np.log(np.clip(proba[np.arange(y.size), y], eps, 1.0 - eps))

    def estimate(rows: np.ndarray) -> dict:
        found = dict(evaluate_multiclass(y[rows], proba[rows], classes=(0, 1, 2)).by_name())
        loss, part = found["log_loss"], losses[rows]
        lower, upper = hall_mean_interval(rows.size, part.sum(), (part**2).sum(),
                                          (part**3).sum(), 0.95)
        lower, upper = interval_holding(loss.value, max(lower, 0.0), upper)
        found["log_loss"] = replace(loss, ci_lower=lower, ci_upper=upper)
        return found

    return segment_rows(estimate, y.size, columns=columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--values", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.rows
    columns = {c: encode_groups(rng.integers(0, args.values, n)) for c in ("a", "b")}
    y3 = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), y3] += 1.0
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = rng.normal(size=n)
    pred = y + rng.standard_t(5, n)
    print("| task | rows | segments | whole evaluation CPU s | segments CPU s | ratio |")
    print("|---|---|---|---|---|---|")
    for task, whole, segments in (
            ("multiclass (3 classes)", lambda: evaluate_multiclass(y3, proba),
             lambda: evaluate_multiclass_segments(y3, proba, classes=(0, 1, 2), columns=columns)),
            ("multiclass, each rest from its rows (before #43 item 1)",
             lambda: evaluate_multiclass(y3, proba),
             lambda: _each_rest_from_its_rows(y3, proba, columns)),
            ("regression", lambda: evaluate_regression(y, pred),
             lambda: evaluate_regression_segments(y, pred, columns=columns))):
        base, extra = _cpu(whole), _cpu(segments)
        print(f"| {task} | {n:,} | {2 * args.values} | {base:.2f} | {extra:.2f} | "
              f"{extra / base:.1f} |", flush=True)


if __name__ == "__main__":
    main()
