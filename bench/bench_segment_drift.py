"""Benchmark: drift per segment under no change, and with a shift planted in one segment (issue #43 item 4).

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_segment_drift               # the RESULTS.md table
    .venv/bin/python -m bench.bench_segment_drift --runs 20 --segments 20  # a quick look

Population: a segment column of ``K`` values drawn uniformly; five features: ``x0`` normal
with a mean of its own per segment (drawn once per run, the same in the reference and the
interval: a segment's own distribution, not drift), ``x1`` lognormal, ``x2`` Poisson(3)
(many ties), ``c0`` categorical over 5 values (0.4/0.3/0.15/0.1/0.05), ``c1`` over 3
(0.6/0.3/0.1). The reference has ``ref_rows`` rows per segment on average, the interval
``cur_rows``. :func:`modelgate.drift.segment_drift` tests every feature within every
segment (KS; chi-square), one family, at level 0.05, minimum 30 rows a side.

*Null*: nothing changes. Reported: the share of intervals with any (feature, segment)
flagged under BH, BY and Holm over the same p-values, and with no correction (each test at
0.05 on its own).

*Planted*: in the interval, segment 0's ``x0`` is shifted by ``shift`` of its standard
deviation. Reported: the share of intervals where (segment 0, ``x0``) is flagged (BH), where
it is the first flagged (smallest q: the one a report names first), and the mean
false-discovery proportion among the flags.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from modelgate.drift import segment_drift
from modelgate.evaluation import adjusted_p_values

LEVEL = 0.05
FEATURES = ["x0", "x1", "x2", "c0", "c1"]
CATEGORICAL = ["c0", "c1"]


def draw(rng: np.random.Generator, k: int, rows: int, means: np.ndarray,
         shift: float) -> dict[str, np.ndarray]:
    g = rng.integers(0, k, rows)
    x0 = rng.normal(means[g], 1.0) + shift * (g == 0)
    return {"seg": g.astype(str), "x0": x0, "x1": rng.lognormal(0, 1, rows),
            "x2": rng.poisson(3, rows).astype(float),
            "c0": rng.choice(list("abcde"), rows, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
            "c1": rng.choice(list("uvw"), rows, p=[0.6, 0.3, 0.1])}


def one_run(seed: int, k: int, ref_rows: int, cur_rows: int, shift: float) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    means = rng.normal(0, 1, k)
    reference = draw(rng, k, k * ref_rows, means, 0.0)
    current = draw(rng, k, k * cur_rows, means, shift)
    family = segment_drift(reference, current, ["seg"], FEATURES, categorical=CATEGORICAL,
                           level=LEVEL)
    tested = [r for r in family.rows if r.p_value is not None]
    p = np.array([r.p_value for r in tested])
    planted = np.array([r.segment_value == "0" and r.feature == "x0" for r in tested])
    out: dict[str, object] = {"tests": family.family_size,
                              "insufficient": len(family.rows) - family.family_size}
    for name in ("bh", "by", "holm"):
        flag = adjusted_p_values(p, name) <= LEVEL
        out[name] = (bool(flag.any()), bool(flag[planted].any()),
                     float((flag & ~planted).sum() / max(flag.sum(), 1)))
    flag = p <= LEVEL
    out["none"] = (bool(flag.any()), bool(flag[planted].any()), 0.0)
    first = family.flagged[0] if family.flagged else None
    out["named"] = first is not None and (first.segment_value, first.feature) == ("0", "x0")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--segments", type=int, nargs="+", default=[20, 50])
    parser.add_argument("--ref-rows", type=int, default=200, help="reference rows per segment (mean)")
    parser.add_argument("--cur-rows", type=int, default=60, help="interval rows per segment (mean)")
    parser.add_argument("--shift", type=float, nargs="+", default=[1.0])
    args = parser.parse_args()
    print("| setting | K | runs | tests/run | not judged/run | any flag: BH | BY | Holm | no correction | "
          "planted found (BH) | planted named first | mean FDP (BH) | s/run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in args.segments:
        for shift in [0.0, *args.shift]:
            start = time.perf_counter()
            runs = [one_run(1000 * k + r + int(1e6 * shift), k, args.ref_rows, args.cur_rows, shift)
                    for r in range(args.runs)]
            took = (time.perf_counter() - start) / args.runs

            def share(key: str, i: int, rows: list[dict[str, object]] = runs) -> str:
                return f"{np.mean([r[key][i] for r in rows]):.3f}"  # type: ignore[index]

            setting = "null" if shift == 0 else f"planted, shift {shift:g} sd"
            tests = np.mean([r["tests"] for r in runs])
            small = np.mean([r["insufficient"] for r in runs])
            named = np.mean([r["named"] for r in runs])
            print(f"| {setting} | {k} | {args.runs} | {tests:.0f} | {small:.1f} | {share('bh', 0)} | "
                  f"{share('by', 0)} | {share('holm', 0)} | {share('none', 0)} | {share('bh', 1)} | "
                  f"{named:.3f} | {share('bh', 2)} | {took:.2f} |", flush=True)


if __name__ == "__main__":
    main()
