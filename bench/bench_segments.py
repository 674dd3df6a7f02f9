"""Benchmark: segment thresholds in the gate under no difference, and with a planted weak slice (issue #43).

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_segments                    # the RESULTS.md tables
    .venv/bin/python -m bench.bench_segments --runs 20 --segments 20       # a quick look

Population: label ``y ~ Bernoulli(0.4)``; score ``clip(N(0.35 + 0.3 y, 0.2), 0, 1)``
rounded to 0.01 (a calibrated-looking model of ROC AUC about 0.86; rounding keeps the
bootstrap tables small, ties are handled exactly); threshold 0.5.  A segment column of
``K`` values drawn uniformly and independently of everything (*random segments*: no
segment truly differs), ``rows_per_segment`` rows per segment on average.

*Null*: each run draws a data set, evaluates every segment
(:func:`modelgate.evaluation.segments.evaluate_segments`, closed-form 95 % intervals)
and judges it with the gate's segment thresholds
(:func:`modelgate.evaluation.segment_gate.segment_verdicts`): ``margin: 0`` on all seven
binary metrics (the strictest margin: any segment worse than its rest) at level 0.05.
Reported: the share of runs with any breach (the family-wise error; under the global null
also the false-discovery rate) for BH, BY and Holm over the same p-values, and without any
correction (each test at 0.05 on its own), which is what a per-slice gate without control
does.

*Planted*: as the null, but segment 0's scores are replaced, with probability
``weakness``, by a uniform draw (no skill on those rows): its AUC, accuracy and losses are
worse than the rest's.  Reported: the share of runs in which segment 0 breaches the ROC
AUC margin (power), in which the ROC AUC check names it (the check's segment is the one
with the smallest q), and the mean false-discovery proportion among the breaches (breaches
of other segments over all breaches).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from modelgate.evaluation.multiple_testing import adjusted_p_values
from modelgate.evaluation.policy import load_policy
from modelgate.evaluation.segment_gate import segment_checks, segment_verdicts
from modelgate.evaluation.segment_statistics import collect_segments
from modelgate.evaluation.segments import evaluate_segments
from modelgate.fairness.disaggregate import encode_groups

LEVEL = 0.05
POLICY = load_policy("segments: {level: 0.05, metrics: {"
                     + ", ".join(f"{m}: {{margin: 0}}" for m in
                                 ("roc_auc", "accuracy", "precision", "recall", "f1", "log_loss",
                                  "brier")) + "}}").segments
assert POLICY is not None


def draw(rng: np.random.Generator, k: int, rows_per_segment: int,
         weakness: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = k * rows_per_segment
    y = (rng.random(n) < 0.4).astype(int)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    g = rng.integers(0, k, n)
    hit = (g == 0) & (rng.random(n) < weakness)
    s[hit] = rng.random(hit.sum())
    return y, np.round(s, 2), g


def one_run(seed: int, k: int, rows_per_segment: int, weakness: float) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    y, s, g = draw(rng, k, rows_per_segment, weakness)
    stats = collect_segments(y, s, threshold=0.5, columns={"g": encode_groups(g)})
    report = evaluate_segments(stats, n_bootstrap=200, seed=seed)
    verdicts = segment_verdicts(POLICY, report)
    p = np.array([v.p_value for v in verdicts])
    planted = np.array([v.values == ("0",) for v in verdicts])
    auc = np.array([v.metric == "roc_auc" for v in verdicts])
    out: dict[str, object] = {"tests": len(verdicts)}
    for name in ("bh", "by", "holm"):
        breach = adjusted_p_values(p, name) <= LEVEL
        out[name] = (bool(breach.any()), bool(breach[planted & auc].any()),
                     float((breach & ~planted).sum() / max(breach.sum(), 1)))
    breach = p <= LEVEL
    out["none"] = (bool(breach.any()), bool(breach[planted & auc].any()),
                   float((breach & ~planted).sum() / max(breach.sum(), 1)))
    auc_check = [c for c in segment_checks(POLICY, report) if c.metric == "roc_auc"][0]
    out["named"] = auc_check.verdict == "breach" and auc_check.reason.startswith("segment g=0 ")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--segments", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--rows-per-segment", type=int, default=300)
    parser.add_argument("--weakness", type=float, nargs="+", default=[0.3, 0.5])
    args = parser.parse_args()
    print("| setting | K | runs | tests/run | any breach: BH | BY | Holm | no correction | "
          "planted found (BH) | named by the AUC check | mean FDP (BH) | s/run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in args.segments:
        for weakness in [0.0, *args.weakness]:
            start = time.perf_counter()
            runs = [one_run(1000 * k + r + int(1e6 * weakness), k, args.rows_per_segment, weakness)
                    for r in range(args.runs)]
            took = (time.perf_counter() - start) / args.runs

            def share(key: str, i: int, rows: list[dict[str, object]] = runs) -> str:
                return f"{np.mean([r[key][i] for r in rows]):.3f}"  # type: ignore[index]

            setting = "null" if weakness == 0 else f"planted, weakness {weakness:g}"
            tests = np.mean([r["tests"] for r in runs])
            named = np.mean([r["named"] for r in runs])
            print(f"| {setting} | {k} | {args.runs} | {tests:.0f} | {share('bh', 0)} | "
                  f"{share('by', 0)} | {share('holm', 0)} | {share('none', 0)} | "
                  f"{share('bh', 1)} | {named:.3f} | {share('bh', 2)} | {took:.2f} |", flush=True)


if __name__ == "__main__":
    main()
