"""Benchmark: coverage of the intervals by simulation against known true values.

Run from the repository root::

    .venv/bin/python -m bench.bench_coverage                 # moderate and confident, every size
    .venv/bin/python -m bench.bench_coverage --sizes 2000 --simulations 200 --resamples 400
    # issue #38: every binary metric at AUC 0.8 and 0.98, then multiclass and regression
    .venv/bin/python -m bench.bench_coverage --scenarios auc80,auc98 --sizes 200,2000 \
        --simulations 400 --resamples 400 --row-reference-up-to 0
    .venv/bin/python -m bench.bench_coverage --family multiclass --scenarios moderate,confident \
        --sizes 200,2000 --simulations 400 --resamples 400
    .venv/bin/python -m bench.bench_coverage --family regression --scenarios moderate,confident \
        --sizes 200,2000 --simulations 400 --resamples 400
    # their paired deltas against a champion (bench/coverage_families.py)
    .venv/bin/python -m bench.bench_coverage --family multiclass-deltas --scenarios moderate,confident \
        --sizes 200,2000 --simulations 400 --resamples 400

The multiclass and regression populations are in ``bench/coverage_families.py``.

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
bins got wrong.  ``auc80`` and ``auc98`` (ROC AUC 0.807 and 0.981) have calibrated scores
(``beta = d``, ``beta0 = logit(0.4) - d**2 / 2``).  Every binary metric's truth is a closed
form (AUC, accuracy, precision, recall, F1) or a quadrature (log loss, Brier score).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from modelgate.evaluation.metric_results import METRIC_NAMES
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect
from modelgate.fairness.disaggregate import encode_groups, table_from_counts
from modelgate.fairness.metrics import fairness_report_from_table
from scipy import integrate
from scipy.special import expit, log_expit
from scipy.stats import norm, rankdata

from bench.coverage_families import (
    multiclass_delta_truth,
    multiclass_truth,
    regression_delta_truth,
    regression_truth,
    simulate_multiclass,
    simulate_multiclass_deltas,
    simulate_regression,
    simulate_regression_deltas,
)

_Simulate = Callable[[str, int, np.random.Generator, int, int],
                     dict[str, tuple[float, float, float]]]
_FAMILIES: dict[str, tuple[Callable[[str], dict[str, float]], _Simulate]] = {
    "multiclass": (multiclass_truth, simulate_multiclass),
             "regression": (regression_truth, simulate_regression),
             "multiclass-deltas": (multiclass_delta_truth, simulate_multiclass_deltas),
             "regression-deltas": (regression_delta_truth, simulate_regression_deltas)}

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
    # issue #38: AUC about 0.8 and 0.98, calibrated scores (beta = d, beta0 = logit(0.4) - d^2 / 2)
    "auc80": Scenario("auc80", d=1.25, beta=1.25, beta0=-1.1867, tau=0.5, shift_b=0.4),
    "auc98": Scenario("auc98", d=3.0, beta=3.0, beta0=-4.9055, tau=0.3, shift_b=0.4),
}


def _components(sc: Scenario, y: int, spread: float) -> list[tuple[float, float, float]]:
    """(weight, mean, sd) of the latent's normal mixture given the label."""
    sd = float(np.sqrt(spread))
    return [(1 - P_B, sc.d * y, sd), (P_B, sc.d * y + sc.shift_b, sd)]


def _truth(sc: Scenario, spread: float) -> dict[str, float]:
    """Every binary metric of a score ``sigmoid(beta * z + beta0)``, ``z`` of variance
    ``spread`` around the label's and group's mean (closed forms and quadrature)."""
    pos, neg = _components(sc, 1, spread), _components(sc, 0, spread)
    auc = sum(w1 * w0 * norm.cdf((m1 - m0) / np.sqrt(s1**2 + s0**2))
              for w1, m1, s1 in pos for w0, m0, s0 in neg)
    cut = -sc.beta0 / sc.beta  # sigmoid(beta * z + beta0) >= 0.5
    tpr = sum(w * norm.sf(cut, m, s) for w, m, s in pos)
    fpr = sum(w * norm.sf(cut, m, s) for w, m, s in neg)
    accuracy = PI * tpr + (1 - PI) * (1 - fpr)

    def expected(comps: list[tuple[float, float, float]], loss: Callable[[float], float]) -> float:
        total = 0.0
        for w, m, s in comps:
            def f(z: float, m: float = m, s: float = s) -> float:
                return float(loss(z) * norm.pdf(z, m, s))
            total += w * integrate.quad(f, m - 12 * s, m + 12 * s, limit=200)[0]
        return total

    def logit(z: float) -> float:
        return sc.beta * z + sc.beta0

    log_loss = (PI * expected(pos, lambda z: -log_expit(logit(z)))
                + (1 - PI) * expected(neg, lambda z: -log_expit(-logit(z))))
    brier = (PI * expected(pos, lambda z: expit(-logit(z)) ** 2)
             + (1 - PI) * expected(neg, lambda z: expit(logit(z)) ** 2))
    tp, fp = PI * tpr, (1 - PI) * fpr
    return {"roc_auc": float(auc), "accuracy": float(accuracy),
            "precision": float(tp / (tp + fp)), "recall": float(tpr),
            "f1": float(2 * tp / (2 * tp + fp + PI * (1 - tpr))), "log_loss": float(log_loss),
            "brier": float(brier)}


def _true_eod(sc: Scenario) -> float:
    cut = -sc.beta0 / sc.beta
    tpr = [norm.sf(cut, sc.d + shift, 1.0) for shift in (0.0, sc.shift_b)]
    fpr = [norm.sf(cut, shift, 1.0) for shift in (0.0, sc.shift_b)]
    return float(max(abs(tpr[0] - tpr[1]), abs(fpr[0] - fpr[1])))


RANGES = {"roc_auc": (0.0, 1.0), "accuracy": (0.0, 1.0), "log_loss": (0.0, np.inf),
          "precision": (0.0, 1.0), "recall": (0.0, 1.0), "f1": (0.0, 1.0), "brier": (0.0, 1.0),
          "equalized_odds_difference": (0.0, 1.0),
          **{f"delta {k}": (-1.0, 1.0) for k in ("roc_auc", "accuracy", "precision", "recall",
                                                  "f1", "brier")}}


def _range(quantity: str) -> tuple[float, float]:
    """The range of a quantity's values (multiclass and regression names included)."""
    if quantity in RANGES:
        return RANGES[quantity]
    if quantity.startswith("delta "):  # a difference of two values in the metric's range
        low, high = _range(quantity.removeprefix("delta "))
        return low - high, high - low
    if "[" in quantity or quantity in ("macro_f1", "weighted_f1", "roc_auc_ovr_macro"):
        return 0.0, 1.0
    return {"rmse": (0.0, np.inf), "mae": (0.0, np.inf),
            "r2": (-np.inf, 1.0)}.get(quantity, (-np.inf, np.inf))


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
                                          interval=interval)
    out = {}
    for name in METRIC_NAMES:
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
        truth.update({f"row bootstrap {k}": cand[k] for k in ("roc_auc", "accuracy", "log_loss")})
    rng = np.random.default_rng([seed, n])
    hits = {k: [] for k in truth}  # type: dict[str, list[tuple[float, float, float]]]
    start = time.perf_counter()
    for rep in range(simulations):
        for k, v in _simulate(sc, n, rng, resamples, seed * simulations + rep, reference,
                                 interval).items():
            hits[k].append(v)
    return summarise(sc.name, n, hits, truth, time.perf_counter() - start)


def summarise(scenario: str, n: int, hits: dict[str, list[tuple[float, float, float]]],
              truth: dict[str, float], seconds: float) -> list[dict[str, object]]:
    """One row per quantity: coverage and its standard error, misses below and above, mean
    width, intervals out of range (:data:`RANGES`), intervals missing their point."""
    rows = []
    for k, values in hits.items():
        arr = np.array(values)
        point, lower, upper = arr.T
        low, high = _range(k)
        covered = np.mean((lower <= truth[k]) & (truth[k] <= upper))
        rows.append({
            "scenario": scenario, "n": n, "quantity": k, "truth": truth[k],
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
    parser.add_argument("--family", choices=("binary", *_FAMILIES),
                        default="binary",
                        help="binary (the scenarios above), or the multiclass or regression "
                             "populations of bench/coverage_families.py (scenarios moderate, "
                             "confident), or their paired deltas against a champion")
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
            if args.family != "binary":
                _print(run_family(args.family, name, n, count, args.resamples, args.seed), count)
                continue
            reference = n <= args.row_reference_up_to
            sc = SCENARIOS[name]
            if args.tau is not None:
                sc = dataclasses.replace(sc, name=f"{name}, tau {args.tau:g}", tau=args.tau)
            _print(run(sc, n, count, args.resamples, reference, args.seed, args.interval), count)


def _print(rows: list[dict[str, object]], count: int) -> None:
    for r in rows:
        print(f"| {r['scenario']} | {r['n']:,} | {count} | {r['quantity']} | {r['truth']:.4f} "
              f"| {100 * r['coverage']:.1f} ± {100 * r['se']:.1f} % "  # type: ignore[operator]
              f"| {100 * r['below']:.1f} % | {100 * r['above']:.1f} % "  # type: ignore[operator]
              f"| {r['width']:.4g} | {r['out_of_range']} | {r['point_outside']} "
              f"| {r['seconds'] / count:.3f} |", flush=True)  # type: ignore[operator]


def run_family(family: str, scenario: str, n: int, simulations: int, resamples: int,
               seed: int = 0) -> list[dict[str, object]]:
    """Coverage rows of the multiclass or regression intervals (bench/coverage_families.py)."""
    truth_of, simulate = _FAMILIES[family]
    truth = truth_of(scenario)
    rng = np.random.default_rng([seed, n, 38])
    hits: dict[str, list[tuple[float, float, float]]] = {k: [] for k in truth}
    start = time.perf_counter()
    for rep in range(simulations):
        for k, v in simulate(scenario, n, rng, resamples, seed * simulations + rep).items():
            hits[k].append(v)
    return summarise(f"{family} {scenario}", n, hits, truth, time.perf_counter() - start)


if __name__ == "__main__":
    main()
