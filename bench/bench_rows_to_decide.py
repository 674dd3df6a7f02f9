"""Do the suggested rows decide a fair model's fairness gap? (issue #38 item 4)

Three equally likely groups with one base rate, TPR and FPR (the equalized-odds difference is
0), samples of 200 drawn as counts. For each sample whose check is ``inconclusive`` under the
default policy (limit 0.03), a fresh sample of 200 plus the suggested rows is judged again, for
three suggestions: at the observed gap (``rows_to_decide``), the equal-rates projection the gate
reports (``rows_to_decide_if_equal``: simulated on the pooled rates), and the same projection
extrapolated from the interval's upper end, ``200 (upper / 0.03)**2`` (what the simulation
replaced). Prints one JSON line per population.

    .venv/bin/python bench/bench_rows_to_decide.py --draws 400
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
from modelgate.evaluation.gate import decide
from modelgate.evaluation.policy import default_policy
from modelgate.evaluation.sample_size import rows_to_decide
from modelgate.fairness.disaggregate import table_from_counts
from modelgate.fairness.metrics import fairness_report_from_table

POPULATIONS = {"base 0.30, TPR 0.70, FPR 0.15": (0.30, 0.70, 0.15),
               "base 0.24, TPR 0.60, FPR 0.08": (0.24, 0.60, 0.08)}
POLICY = default_policy()


def _counts(rng: np.random.Generator, n: int, cell: np.ndarray) -> np.ndarray:
    return rng.multinomial(n, np.tile(cell / 3.0, 3)).reshape(3, 4)


def _check(counts: np.ndarray) -> Any:
    report = fairness_report_from_table(table_from_counts(("a", "b", "c"), counts),
                                        sensitive_feature="g")
    decision = decide({}, None, {"g": report}, POLICY)
    return next(c for c in decision.checks if c.metric == "equalized_odds_difference")


def run(base: float, tpr: float, fpr: float, draws: int, seed: int) -> dict[str, Any]:
    cell = np.array([(1 - base) * (1 - fpr), (1 - base) * fpr, base * (1 - tpr), base * tpr])
    rng = np.random.default_rng(seed)
    verdicts: dict[str, int] = {}
    outcome = {"observed": [0, 0], "if_equal": [0, 0], "extrapolated": [0, 0]}
    rows: dict[str, list[int]] = {k: [] for k in outcome}
    cpu = time.process_time()
    checks = tried = 0
    while tried < draws:
        check = _check(_counts(rng, 200, cell))
        checks += 1
        verdicts[check.verdict] = verdicts.get(check.verdict, 0) + 1
        if check.verdict != "inconclusive" or check.rows_to_decide_if_equal is None:
            continue
        tried += 1
        extrapolated = rows_to_decide(check.observed, check.ci_lower, check.ci_upper, 200,
                                      upper=check.upper, fairness_gap=True).rows_if_equal
        for key, more in (("observed", check.rows_to_decide),
                          ("if_equal", check.rows_to_decide_if_equal),
                          ("extrapolated", extrapolated)):
            if more is None:
                continue
            again = _check(_counts(rng, 200 + more, cell))
            checks += 1
            outcome[key][0] += again.verdict == "pass"
            outcome[key][1] += again.verdict == "breach"
            rows[key].append(more)
    cpu = time.process_time() - cpu
    return {"verdicts_at_200": verdicts, "inconclusive_tried": tried,
            **{f"{k}: pass, breach at 200 + rows": v for k, v in outcome.items()},
            **{f"{k}: median more rows": int(np.median(v)) for k, v in rows.items() if v},
            "cpu_s_per_gate": round(cpu / checks, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args()
    for name, (base, tpr, fpr) in POPULATIONS.items():
        print(json.dumps({"population": name, **run(base, tpr, fpr, args.draws, args.seed)}))


if __name__ == "__main__":
    main()
