"""Simulation: how often the gate's equalized-odds check reads pass, breach or inconclusive.

Run from the repository root::

    .venv/bin/python -m bench.bench_gate_verdicts

Two groups assigned by row parity; the model is right on 80% of rows whatever the group, and
in the "real gap" rows it misses 20% more of group "odd"'s positives (a TPR gap of 0.16).
Each cell counts the verdicts of :func:`modelgate.evaluation.gate.decide` on 200 seeded
samples, the limit 0.03 (the shipped default), on the point-estimate basis (the former rule)
and the interval basis (the default). Prints a markdown table.
"""

from __future__ import annotations

import numpy as np
from modelgate.evaluation.gate import decide
from modelgate.evaluation.policy import Policy, load_policy
from modelgate.fairness import fairness_report

SEEDS = 200
LIMIT = 0.03


def _verdict(n: int, gap: bool, seed: int, policy: Policy) -> str:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    odd = np.arange(n) % 2 == 1
    right = rng.random(n) < 0.8
    if gap:  # miss some more of group "odd"'s positives
        right &= ~(odd & (y == 1) & (rng.random(n) < 0.2))
    pred = np.where(right, y, 1 - y)
    report = fairness_report(y, pred, np.where(odd, "odd", "even"), sensitive_feature="parity",
                             n_bootstrap=1000, seed=seed)
    (check,) = decide({}, None, {"parity": report}, policy).checks
    return check.verdict


def main() -> None:
    print("| rows | real gap | basis | pass | breach | inconclusive |")
    print("|---:|---|---|---:|---:|---:|")
    for n in (228, 1000, 4000):
        for gap in (False, True):
            for basis in ("point_estimate", "interval"):
                policy = load_policy(f"basis: {basis}\nfairness: {{default: "
                                     f"{{equalized_odds_difference: {{upper: {LIMIT}}}}}}}")
                verdicts = [_verdict(n, gap, seed, policy) for seed in range(SEEDS)]
                counts = [verdicts.count(v) for v in ("pass", "breach", "inconclusive")]
                print(f"| {n} | {'yes' if gap else 'no'} | {basis} | "
                      + " | ".join(str(c) for c in counts) + " |", flush=True)


if __name__ == "__main__":
    main()
