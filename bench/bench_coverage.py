"""Benchmark: coverage of the binary intervals by simulation against known true values.

Run from the repository root::

    .venv/bin/python -m bench.bench_coverage                 # every scenario and size
    .venv/bin/python -m bench.bench_coverage --sizes 2000 --simulations 200 --resamples 400

Each simulation draws ``n`` rows from a population whose metrics are known in closed form
or by quadrature (scipy), summarises them as the evaluation DAG does
(:func:`modelgate.evaluation.sufficient.collect`, then
:func:`~modelgate.evaluation.performance.performance_from_statistics`; the equalized-odds
difference from the merged group counts through
:func:`modelgate.fairness.metrics.fairness_report_from_table`) and records whether each
95 % interval holds the truth, whether it lies in the metric's range and whether it holds
its own point estimate.  Prints one markdown table.

Population (per scenario): label ``y ~ Bernoulli(0.4)``, group ``b`` with probability 0.4
(else ``a``), independent of ``y``; latent ``x ~ N(d * y + shift_g, 1)``; candidate score
``sigmoid(beta * x + beta0)``; champion score ``sigmoid(beta * (x + e) + beta0)`` with
``e ~ N(0, tau**2)``.  Threshold 0.5 for both.  ``moderate`` spreads the scores over
(0, 1); ``confident`` puts most of them within 1e-3 of 0 or 1, the case fixed-width score
bins got wrong.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect
from modelgate.fairness.disaggregate import encode_groups, table_from_counts
from modelgate.fairness.metrics import fairness_report_from_table
from scipy import integrate
from scipy.special import expit, log_expit
from scipy.stats import norm, rankdata

PI, P_B, THRESHOLD, LEVEL = 0.4, 0.4, 0.5, 0.95


@dataclass(frozen=True)
class Scenario:
    name: str
    d: float
    beta: float
    beta0: float
    tau: float
    shift_b: float


SCENARIOS = {
    "moderate": Scenario("moderate", d=1.5, beta=1.0, beta0=-0.75, tau=0.7, shift_b=0.4),
    "confident": Scenario("confident", d=4.0, beta=4.0, beta0=-8.0, tau=0.5, shift_b=0.4),
}


def _components(sc: Scenario, y: int, spread: float) -> list[tuple[float, float, float]]:
    """(weight, mean, sd) of the latent's normal mixture given the label."""
    sd = float(np.sqrt(spread))
    return [(1 - P_B, sc.d * y, sd), (P_B, sc.d * y + sc.shift_b, sd)]


def _truth(sc: Scenario, spread: float) -> dict[str, float]:
    """AUC, accuracy and log loss of a score ``sigmoid(beta * z + beta0)``, ``z`` of variance
    ``spread`` around the label's and group's mean (closed forms and quadrature)."""
    pos, neg = _components(sc, 1, spread), _components(sc, 0, spread)
    auc = sum(w1 * w0 * norm.cdf((m1 - m0) / np.sqrt(s1**2 + s0**2))
              for w1, m1, s1 in pos for w0, m0, s0 in neg)
    cut = -sc.beta0 / sc.beta  # sigmoid(beta * z + beta0) >= 0.5
    accuracy = (PI * sum(w * norm.sf(cut, m, s) for w, m, s in pos)
                + (1 - PI) * sum(w * norm.cdf(cut, m, s) for w, m, s in neg))

    def expected(comps: list[tuple[float, float, float]], sign: float) -> float:
        total = 0.0
        for w, m, s in comps:
            f: Callable[[float], float] = lambda z, m=m, s=s: (  # noqa: E731
                -log_expit(sign * (sc.beta * z + sc.beta0)) * norm.pdf(z, m, s))
            total += w * integrate.quad(f, m - 12 * s, m + 12 * s, limit=200)[0]
        return total

    log_loss = PI * expected(pos, 1.0) + (1 - PI) * expected(neg, -1.0)
    return {"roc_auc": float(auc), "accuracy": float(accuracy), "log_loss": float(log_loss)}


def _true_eod(sc: Scenario) -> float:
    cut = -sc.beta0 / sc.beta
    tpr = [norm.sf(cut, sc.d + shift, 1.0) for shift in (0.0, sc.shift_b)]
    fpr = [norm.sf(cut, shift, 1.0) for shift in (0.0, sc.shift_b)]
    return float(max(abs(tpr[0] - tpr[1]), abs(fpr[0] - fpr[1])))


RANGES = {"roc_auc": (0.0, 1.0), "accuracy": (0.0, 1.0), "log_loss": (0.0, np.inf),
          "equalized_odds_difference": (0.0, 1.0)}


def _row_reference(y: np.ndarray, score: np.ndarray, resamples: int,
                   seed: int) -> dict[str, tuple[float, float, float]]:
    """Percentile intervals of a plain row bootstrap (numpy and scipy only, its own rng):
    the reference the count-table bootstrap should match."""
    idx = np.random.default_rng(10_000 + seed).integers(0, len(y), size=(resamples, len(y)))
    yy, ss = y[idx], score[idx]
    n_pos = yy.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (((rankdata(ss, axis=1) * yy).sum(axis=1) - n_pos * (n_pos + 1) / 2)
               / (n_pos * (len(y) - n_pos)))
    eps = np.finfo(np.float64).eps
    loss = -np.log(np.clip(np.where(yy == 1, ss, 1.0 - ss), eps, 1 - eps)).mean(axis=1)
    replicates = {"roc_auc": auc, "accuracy": ((ss >= THRESHOLD) == yy).mean(axis=1),
                  "log_loss": loss}
    out = {}
    for name, values in replicates.items():
        lo, hi = np.nanquantile(values, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        out[f"row bootstrap {name}"] = (float("nan"), float(lo), float(hi))
    return out


def _simulate(sc: Scenario, n: int, rng: np.random.Generator, resamples: int,
              seed: int, reference: bool, interval: str) -> dict[str, tuple[float, float, float]]:
    """(point, lower, upper) per quantity for one simulated held-out set."""
    y = (rng.random(n) < PI).astype(np.int64)
    group = np.where(rng.random(n) < P_B, "b", "a").astype(object)
    x = rng.normal(sc.d * y + np.where(group == "b", sc.shift_b, 0.0), 1.0)
    score = expit(sc.beta * x + sc.beta0)
    champion = expit(sc.beta * (x + rng.normal(0.0, sc.tau, n)) + sc.beta0)
    stats = collect(y, score, threshold=THRESHOLD, champion_score=champion,
                    champion_threshold=THRESHOLD, groups={"g": encode_groups(group)})
    summary = performance_from_statistics(stats, n_bootstrap=resamples, seed=seed,
                                          interval=interval)  # type: ignore[arg-type]
    out = {}
    for name in ("roc_auc", "accuracy", "log_loss"):
        m = summary.candidate.by_name()[name]
        out[name] = (m.value, m.ci_lower, m.ci_upper)
        assert summary.comparison is not None
        d = summary.comparison.by_name()[name]
        out[f"delta {name}"] = (d.delta, d.ci_lower, d.ci_upper)
    counted = stats.groups[0]
    fair = fairness_report_from_table(table_from_counts(counted.labels, counted.counts),
                                      sensitive_feature="g", n_bootstrap=resamples, seed=seed)
    e = fair.by_name()["equalized_odds_difference"]
    out["equalized_odds_difference"] = (e.value, e.ci_lower, e.ci_upper)
    if reference:
        out.update(_row_reference(y, score, resamples, seed))
    return out


def run(sc: Scenario, n: int, simulations: int, resamples: int, reference: bool,
        seed: int = 0, interval: str = "per_metric") -> list[dict[str, object]]:
    cand, champ = _truth(sc, 1.0), _truth(sc, 1.0 + sc.tau**2)
    truth = {**cand, **{f"delta {k}": cand[k] - champ[k] for k in cand},
             "equalized_odds_difference": _true_eod(sc)}
    if reference:
        truth.update({f"row bootstrap {k}": v for k, v in cand.items()})
    rng = np.random.default_rng([seed, n])
    hits = {k: [] for k in truth}  # type: dict[str, list[tuple[float, float, float]]]
    start = time.perf_counter()
    for rep in range(simulations):
        for k, v in _simulate(sc, n, rng, resamples, seed * simulations + rep, reference,
                                 interval).items():
            hits[k].append(v)
    seconds = time.perf_counter() - start
    rows = []
    for k, values in hits.items():
        arr = np.array(values)
        point, lower, upper = arr.T
        low, high = RANGES.get(k, (-np.inf, np.inf))
        covered = np.mean((lower <= truth[k]) & (truth[k] <= upper))
        rows.append({
            "scenario": sc.name, "n": n, "quantity": k, "truth": truth[k],
            "coverage": covered, "se": float(np.sqrt(covered * (1 - covered) / len(arr))),
            "below": float(np.mean(truth[k] < lower)), "above": float(np.mean(truth[k] > upper)),
            "width": float(np.mean(upper - lower)),
            "out_of_range": int(np.sum((lower < low) | (upper > high))),
            "point_outside": int(np.sum((point < lower) | (point > upper))),  # NaN: never
            "seconds": seconds,
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="moderate,confident")
    parser.add_argument("--sizes", default="200,2000,200000")
    parser.add_argument("--simulations", default="1000,500,150",
                        help="simulations per size (one number, or one per size)")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the simulated data (runs with other seeds can be pooled)")
    parser.add_argument("--row-reference-up-to", type=int, default=2000,
                        help="also run a plain row bootstrap (AUC, accuracy, log loss) "
                             "at sizes up to this many rows")
    parser.add_argument("--interval", choices=("per_metric", "percentile", "bca"),
                        default="per_metric",
                        help="interval method of performance_from_statistics (the row "
                             "reference stays percentile)")
    parser.add_argument("--tau", type=float, default=None,
                        help="the champion's latent noise instead of the scenario's (0.05: a near copy)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    sims = [int(s) for s in args.simulations.split(",")]
    sims = sims * len(sizes) if len(sims) == 1 else sims
    print(f"95 % {args.interval} intervals, {args.resamples} resamples each; coverage ± its standard error; "
          "below/above: truth below the lower / above the upper end")
    print()
    print("| scenario | n | simulations | quantity | truth | coverage | below | above | mean width "
          "| out of range | point outside | s per simulation |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.scenarios.split(","):
        for n, count in zip(sizes, sims, strict=True):
            reference = n <= args.row_reference_up_to
            sc = SCENARIOS[name]
            if args.tau is not None:
                sc = dataclasses.replace(sc, name=f"{name}, tau {args.tau:g}", tau=args.tau)
            for r in run(sc, n, count, args.resamples, reference, args.seed, args.interval):
                print(f"| {r['scenario']} | {r['n']:,} | {count} | {r['quantity']} | {r['truth']:.4f} "
                      f"| {100 * r['coverage']:.1f} ± {100 * r['se']:.1f} % "
                      f"| {100 * r['below']:.1f} % | {100 * r['above']:.1f} % | {r['width']:.4g} "
                      f"| {r['out_of_range']} | {r['point_outside']} "
                      f"| {r['seconds'] / count:.3f} |", flush=True)


if __name__ == "__main__":
    main()
