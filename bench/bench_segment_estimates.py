"""Benchmark: estimated performance per segment judged with the segments' drift tests as one family,
under no change and with a degraded slice planted (issue #43 item 4).

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_segment_estimates               # the RESULTS.md table
    .venv/bin/python -m bench.bench_segment_estimates --runs 20 --segments 20  # a quick look

Population: a segment column of ``K`` values drawn uniformly; three features: ``x0`` normal with a
mean of its own per segment (the same in the reference and the interval), ``x1`` standard normal,
``c0`` categorical over 4 values. The model's score is ``sigmoid(2 x1)`` and the label is drawn with
that probability (the score is calibrated: the estimator's assumption holds). The reference has
``ref_rows`` labelled rows per segment on average; the isotonic calibrator is fitted on it and its
realised accuracy and ROC AUC are the baseline. The interval has ``cur_rows`` rows per segment.
Each run goes through the drift pipeline's own code: :func:`modelgate.drift.segment_drift` (KS;
chi-square, at least 30 rows a side), the per-segment estimates of
:func:`modelgate.pipelines.drift.segment_estimates.estimate_by_segment` (at least 50 rows) with
limits on accuracy and ROC AUC, and :func:`modelgate.drift.segment_family` (BH, level 0.05), so
the family is ``3 K`` drift tests plus up to ``2 K`` estimate checks.

*Null*: nothing changes. Reported: the share of intervals with anything flagged (drift or an
estimate breach), with the limits at 0.05 and at 0 (every check at its null's boundary: a
segment's realised value is, in expectation, the reference's), and with no correction.

*Planted*: in the interval, segment 0's ``x1`` is multiplied by ``shrink`` (its scores move towards
0.5: accuracy drops from about 0.77 to about 0.62 at 0.3, ROC AUC from 0.85 to 0.67; a covariate
shift the estimator follows). Reported: the share of intervals where segment 0's accuracy check is
breached, where its accuracy or ROC AUC check is, where anything in segment 0 is flagged (its
``x1`` drift test too), and the mean false-discovery proportion among all flags. "Checks at p <= 0.05
alone" is the share of estimate checks whose own p-value is at most the level (no correction): under
the null with the limit at 0, the size of one check.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from modelgate.drift import fit_isotonic, segment_drift, segment_family, segment_labels

from modelgate.pipelines.drift.estimation import ERROR_METRICS, EstimationReference, realised_metrics
from modelgate.pipelines.drift.segment_estimates import estimate_by_segment

LEVEL = 0.05
FEATURES = ["x0", "x1", "c0"]


def draw(rng: np.random.Generator, k: int, rows: int, means: np.ndarray, shrink: float) -> pd.DataFrame:
    g = rng.integers(0, k, rows)
    x1 = rng.normal(0, 1, rows) * np.where(g == 0, shrink, 1.0)
    score = 1.0 / (1.0 + np.exp(-2.0 * x1))
    return pd.DataFrame({"seg": g.astype(str), "x0": rng.normal(means[g], 1.0), "x1": x1,
                         "c0": rng.choice(list("abcd"), rows, p=[0.4, 0.3, 0.2, 0.1]),
                         "__score__": score, "__prediction__": (score >= 0.5).astype(float),
                         "y": (rng.uniform(size=rows) < score).astype(int)})


def one_run(seed: int, k: int, ref_rows: int, cur_rows: int, shrink: float,
            limit: float) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    means = rng.normal(0, 1, k)
    ref, cur = draw(rng, k, k * ref_rows, means, 1.0), draw(rng, k, k * cur_rows, means, shrink)
    baseline = realised_metrics("binary_classification", ref["y"].to_numpy(), ref)
    reference = EstimationReference("binary_classification", "cbpe_isotonic", 0.5, (),
                                    fit_isotonic(ref["__score__"], ref["y"]), (), baseline)
    drift = segment_drift({c: ref[c].to_numpy() for c in ["seg", *FEATURES]},
                          {c: cur[c].to_numpy() for c in ["seg", *FEATURES]}, ["seg"], FEATURES,
                          categorical=["c0"], level=LEVEL)
    records = estimate_by_segment(reference, cur, {"seg": segment_labels(cur["seg"].tolist(), "seg")},
                                  limits={"accuracy": limit, "roc_auc": limit}, baseline=baseline)
    out = segment_family(records, drift, level=LEVEL, lower_is_better=ERROR_METRICS)
    assert out.drift is not None
    drift_flags = [(r.segment_value, r.feature) for r in out.drift.rows if r.status == "drift"]
    breaches = [(e.segment_value, e.metric) for e in out.estimates if e.status == "breach"]
    check_p = [e.p_value for e in out.estimates if e.p_value is not None]
    raw = [r.p_value for r in out.drift.rows if r.p_value is not None] + check_p
    flags = drift_flags + breaches
    planted = [f for f in flags if f[0] == "0"]
    return {"tests": out.family_size, "checks": sum(e.p_value is not None for e in out.estimates),
            "any": bool(flags), "uncorrected": bool(min(raw, default=1.0) <= LEVEL),
            "check_alarms": float(np.mean(np.asarray(check_p) <= LEVEL)) if check_p else 0.0,
            "accuracy_found": ("0", "accuracy") in breaches,
            "estimate_found": any(b[0] == "0" for b in breaches), "segment_found": bool(planted),
            "fdp": (len(flags) - len(planted)) / max(len(flags), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--segments", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--ref-rows", type=int, default=300, help="reference rows per segment (mean)")
    parser.add_argument("--cur-rows", type=int, default=300, help="interval rows per segment (mean)")
    parser.add_argument("--shrink", type=float, nargs="*", default=[0.5, 0.3],
                        help="planted settings (none: the null ones only)")
    args = parser.parse_args()
    print("| setting | limit | K | runs | tests/run | estimate checks/run | any flag (BH) | no correction | "
          "segment 0 accuracy breached | segment 0 accuracy or AUC breached | "
          "anything in segment 0 flagged | mean FDP | checks at p <= 0.05 alone | CPU s/run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in args.segments:
        settings = [("null", 1.0, 0.05), ("null", 1.0, 0.0),
                    *(("planted", s, 0.05) for s in args.shrink)]
        for setting, shrink, limit in settings:
            start = time.process_time()
            runs = [one_run(1000 * k + r, k, args.ref_rows, args.cur_rows, shrink, limit)
                    for r in range(args.runs)]
            took = (time.process_time() - start) / args.runs

            def mean(key: str, rows: list[dict[str, object]] = runs) -> float:
                return float(np.mean([r[key] for r in rows]))

            name = setting if shrink == 1.0 else f"planted, segment 0 x1 x {shrink:g}"
            print(f"| {name} | {limit:g} | {k} | {args.runs} | {mean('tests'):.0f} | {mean('checks'):.0f} | "
                  f"{mean('any'):.3f} | {mean('uncorrected'):.3f} | {mean('accuracy_found'):.3f} | "
                  f"{mean('estimate_found'):.3f} | {mean('segment_found'):.3f} | {mean('fdp'):.3f} | "
                  f"{mean('check_alarms'):.4f} | {took:.2f} |", flush=True)


if __name__ == "__main__":
    main()
