"""Benchmark: fairness gap intervals at and near a true gap of 0 (issue #38), by simulation.

Run from the repository root::

    .venv/bin/python -m bench.bench_fairness_coverage                  # the RESULTS.md table
    .venv/bin/python -m bench.bench_fairness_coverage --simulations 200 --groups 3

Population (known rates): label ``y ~ Bernoulli(0.3)``; the sensitive attribute one of ``K``
groups with equal chances, independent of everything else (a random attribute); latent
``x ~ N(d_g * y, 1)`` and prediction ``x > t``, so a group's TPR is ``Phi(d_g - t)`` and its
FPR ``Phi(-t)``.  ``moderate``: ``d = 1.5, t = 0.75`` (TPR 0.773, FPR 0.227); ``confident``:
``d = 4, t = 2`` (TPR 0.977, FPR 0.023).  With every ``d_g`` equal every gap is 0; with
``gap = delta`` group 0's ``d_0`` is lowered so that its TPR is ``delta`` below the others',
so the true TPR gap and equalized-odds difference are ``delta``, the FPR gap 0, the
demographic-parity difference ``0.3 delta`` and the predictive-parity difference follows
from the rates (all computed here in closed form).

Each simulation draws the ``(K, 4)`` confusion-count table of ``n`` rows (a multinomial draw
with the population's cell probabilities: exactly the table of ``n`` rows drawn from it) and
passes it through :func:`modelgate.fairness.metrics.fairness_report_from_table`, the API the
pipelines use (``min_group_size=1``: every group takes part).  A ``breach`` is what the gate
(:func:`modelgate.evaluation.gate._verdict`) calls one at the default policy's limit:
the interval's lower end above 0.03.  Prints markdown tables.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from modelgate.fairness.disaggregate import table_from_counts
from modelgate.fairness.metrics import fairness_report_from_table
from modelgate.fairness.score_intervals import modified_wilson_bounds
from scipy.stats import norm

PI, LIMIT = 0.3, 0.03  # base rate; default policy's equalized_odds_difference upper limit
Z95 = float(norm.ppf(0.975))  # the groups' rate intervals at the reports' default 95 %
GAPS = ("equalized_odds_difference", "tpr_gap", "fpr_gap", "demographic_parity_difference",
        "predictive_parity_difference")
SHORT = {"equalized_odds_difference": "EO", "tpr_gap": "TPR", "fpr_gap": "FPR",
         "demographic_parity_difference": "DP", "predictive_parity_difference": "PPV"}


@dataclass(frozen=True)
class Model:
    name: str
    d: float
    t: float


MODELS = (Model("moderate", 1.5, 0.75), Model("confident", 4.0, 2.0))


def population(model: Model, k: int, delta: float
               ) -> tuple[np.ndarray, dict[str, float], np.ndarray]:
    """Cell probabilities ``(K, 4)`` (``tn, fp, fn, tp``), the true gaps and the true group
    rates ``(4, K)`` (TPR, FPR, selection rate, PPV)."""
    tpr = np.full(k, norm.cdf(model.d - model.t))
    tpr[0] -= delta
    fpr = np.full(k, norm.cdf(-model.t))
    cells = np.stack([(1 - PI) * (1 - fpr), (1 - PI) * fpr, PI * (1 - tpr), PI * tpr], axis=1) / k
    sel = PI * tpr + (1 - PI) * fpr
    ppv = PI * tpr / sel
    spread = {"tpr_gap": np.ptp(tpr), "fpr_gap": np.ptp(fpr),
              "demographic_parity_difference": np.ptp(sel),
              "predictive_parity_difference": np.ptp(ppv)}
    truth = {name: float(v) for name, v in spread.items()}
    truth["equalized_odds_difference"] = max(truth["tpr_gap"], truth["fpr_gap"])
    return cells, truth, np.stack([tpr, fpr, sel, ppv])


def simulate(model: Model, k: int, n: int, delta: float, simulations: int, seed: list[int]
             ) -> dict[str, dict[str, float]]:
    """Per gap: share of intervals breaching 0.03, holding 0, holding the truth, below it; and
    under ``"group rates"`` the share of the groups' 95 % modified Wilson intervals (those of
    :meth:`~modelgate.fairness.disaggregate.GroupStats.rate_interval`) holding their group's
    rate, per rate (TPR, FPR, selection rate, PPV)."""
    cells, truth, rates = population(model, k, delta)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, cells.ravel(), size=simulations).reshape(simulations, k, 4)
    labels = tuple(f"g{i}" for i in range(k))
    tally = {g: np.zeros(4) for g in GAPS}
    defined = dict.fromkeys(GAPS, 0)
    held, rated = np.zeros(4), np.zeros(4)
    for counts in draws:
        tn, fp, fn, tp = counts.T
        lower, upper = modified_wilson_bounds(
            np.stack([tp, fp, tp + fp, tp]), np.stack([tp + fn, tn + fp, counts.sum(axis=1), tp + fp]),
            Z95)
        rated += np.isfinite(lower).sum(axis=1)
        held += ((lower <= rates) & (rates <= upper)).sum(axis=1)
        report = fairness_report_from_table(table_from_counts(labels, counts, min_group_size=1),
                                            sensitive_feature="s")
        for name, est in report.by_name().items():
            if name not in tally or not np.isfinite(est.ci_lower):
                continue
            defined[name] += 1
            tally[name] += (est.ci_lower > LIMIT, est.ci_lower <= 0.0,
                            est.ci_lower <= truth[name] <= est.ci_upper, truth[name] < est.ci_lower)
    out = {g: {"truth": truth[g], "defined": defined[g],
               **dict(zip(("breach", "holds_0", "covers", "truth_below"),
                          tally[g] / max(defined[g], 1), strict=True))} for g in GAPS}
    out["group rates"] = dict(zip(("tpr", "fpr", "selection_rate", "ppv"),
                                  held / np.maximum(rated, 1), strict=True))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulations", type=int, default=1000,
                        help="samples per row of the small-gap table")
    parser.add_argument("--null-simulations", type=int, default=4000,
                        help="samples per row of the no-gap table (its breach rates sit near 5 %%)")
    parser.add_argument("--models", nargs="+", default=[m.name for m in MODELS])
    parser.add_argument("--groups", type=int, nargs="+", default=[2, 3, 5, 10])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.05, 0.10, 0.20])
    args = parser.parse_args()
    start = time.perf_counter()
    models = [m for m in MODELS if m.name in args.models]
    if args.null_simulations > 0:
        _null_table(models, args)
    if args.simulations > 0:
        _gap_table(models, args)
    print(f"\n{time.perf_counter() - start:.0f} s")


def _null_table(models: list[Model], args: argparse.Namespace) -> None:
    """True gap 0: the breach rate of the equalized-odds difference, every gap's share of
    intervals holding 0 and the largest breach rate of any gap.  Seeds fixed per row."""
    print("### True gap 0 (random attribute)\n")
    print("| model | K | n | samples | EO breach | EO holds 0 | TPR holds 0 | FPR holds 0 "
          "| DP holds 0 | PPV holds 0 | largest breach of any gap |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model, k, n in ((m, k, n) for m in models for k in args.groups for n in args.sizes):
        seed = [MODELS.index(model), k, n]
        r = simulate(model, k, n, 0.0, args.null_simulations, seed)
        worst = max(GAPS, key=lambda g: r[g]["breach"])
        print(f"| {model.name} | {k} | {n:,} | {args.null_simulations:,} | "
              f"{r[GAPS[0]]['breach']:.1%} | " + " | ".join(f"{r[g]['holds_0']:.1%}" for g in GAPS)
              + f" | {r[worst]['breach']:.1%} ({SHORT[worst]}) |", flush=True)


def _gap_table(models: list[Model], args: argparse.Namespace) -> None:
    """Small true gaps: every gap's coverage, and the share of samples with the truth below."""
    print("\n### Small true gaps (group 0's TPR lowered by delta): coverage (truth below the "
          "interval)\n")
    print("| model | K | n | delta | samples | " + " | ".join(SHORT[g] for g in GAPS)
          + " | group TPR / FPR / selection / PPV (modified Wilson) |")
    print("|---|---|---|---|---|" + "---|" * (len(GAPS) + 1))
    for model, k, n, delta in ((m, k, n, d) for m in models for k in args.groups
                               for n in args.sizes for d in args.deltas):
        seed = [MODELS.index(model), k, n, round(delta * 1000)]
        r = simulate(model, k, n, delta, args.simulations, seed)
        cells = [f"{r[g]['covers']:.1%} ({r[g]['truth_below']:.1%})"
                 if r[g]["truth"] > 0 else f"{r[g]['covers']:.1%} (true 0)" for g in GAPS]
        groups = " / ".join(f"{v:.1%}" for v in r["group rates"].values())
        print(f"| {model.name} | {k} | {n:,} | {delta:.2f} | {args.simulations:,} | "
              + " | ".join(cells) + f" | {groups} |", flush=True)


if __name__ == "__main__":
    main()
