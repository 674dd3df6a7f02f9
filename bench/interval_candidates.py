"""Candidate interval methods for the binary metrics, side by side on the same simulated sets.

Run from the repository root::

    .venv/bin/python -m bench.interval_candidates --scenario confident --n 200 --simulations 1000

The population is that of :mod:`bench.bench_coverage`.  Every method here works on the
rows (numpy and scipy only, a row bootstrap with this script's own generator), so it
shows which method to build on the cell table, not the production code; what was
adopted is measured through the production path by ``bench_coverage``.  Per method:
coverage of the truth (95 % nominal), truth below / above the interval, median width
and, for the AUC methods, the share of sets whose interval reaches below 0.95 (a
studentized bootstrap can buy coverage with useless lower ends).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import expit, logit
from scipy.stats import norm

from bench.bench_coverage import P_B, PI, SCENARIOS, THRESHOLD, Scenario, _truth

Z = float(norm.ppf(0.975))
EPS = np.finfo(np.float64).eps
CAP = 1e6


def _auc_parts(w: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """AUC, DeLong variance and placement values per row of counts ``w`` (rows in score order)."""
    pw, nw = w * y, w * (1 - y)
    n1, n0 = pw.sum(1), nw.sum(1)
    below = np.cumsum(nw, 1) - nw
    above = n1[:, None] - np.cumsum(pw, 1)
    with np.errstate(all="ignore"):
        v10, v01 = below / n0[:, None], above / n1[:, None]
        auc = (pw * v10).sum(1) / n1
        var = ((pw * (v10 - auc[:, None]) ** 2).sum(1) / (n1 - 1) / n1
               + (nw * (v01 - auc[:, None]) ** 2).sum(1) / (n0 - 1) / n0)
    return auc, var, np.where(y == 1, v10, v01)


def _pct(r: np.ndarray) -> tuple[float, float]:
    lo, hi = np.nanquantile(r, [0.025, 0.975])
    return float(lo), float(hi)


def _t_ends(point: float, se: float, t: np.ndarray) -> tuple[float, float]:
    t = t[~np.isnan(t)]
    if t.size == 0 or not se > 0:
        return point, point
    lo, hi = np.quantile(np.clip(t, -CAP, CAP), [0.025, 0.975])
    return point - hi * se, point - lo * se


def _mean_methods(v: np.ndarray, w: np.ndarray, out: dict, key: str) -> None:
    """Percentile, bootstrap-t and Wald intervals of the mean of ``v``."""
    n = len(v)
    m, se = v.mean(), v.std(ddof=1) / np.sqrt(n)
    mb = w @ v / n
    seb = np.sqrt(np.maximum(w @ v**2 / n - mb**2, 0) * n / (n - 1) / n)
    with np.errstate(all="ignore"):
        t = np.where(seb > 0, (mb - m) / seb, np.sign(mb - m) * CAP)
    out[f"{key} percentile"] = _pct(mb)
    out[f"{key} bootstrap-t"] = _t_ends(m, se, t)
    out[f"{key} Wald"] = (m - Z * se, m + Z * se)


def _one(sc: Scenario, n: int, rng: np.random.Generator, resamples: int) -> dict:
    y = (rng.random(n) < PI).astype(np.int64)
    x = rng.normal(sc.d * y + np.where(rng.random(n) < P_B, sc.shift_b, 0.0), 1.0)
    scores = {"c": expit(sc.beta * x + sc.beta0),
              "h": expit(sc.beta * (x + rng.normal(0.0, sc.tau, n)) + sc.beta0)}
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float)
    res = {}
    for tag, s in scores.items():
        o = np.argsort(s, kind="stable")
        a0, v0, pl0 = _auc_parts(np.ones((1, n)), y[o])
        ab, vb, _ = _auc_parts(w[:, o], y[o])
        placement = np.empty(n)
        placement[o] = pl0[0]
        loss = -np.log(np.clip(np.where(y == 1, s, 1 - s), EPS, 1 - EPS))
        res[tag] = {"A": float(a0[0]), "V": float(v0[0]), "Ab": ab, "Vb": vb, "pl": placement,
                    "loss": loss, "correct": ((s >= THRESHOLD) == y).astype(float)}
    c, h = res["c"], res["h"]
    out: dict[str, tuple[float, float]] = {}
    a, v = c["A"], c["V"]
    out["auc percentile"] = _pct(c["Ab"])
    out["auc DeLong Wald"] = (max(a - Z * np.sqrt(v), 0.0), min(a + Z * np.sqrt(v), 1.0))
    n1, n0 = int(y.sum()), int(n - y.sum())
    if 0 < a < 1:
        g, gse = logit(a), np.sqrt(v) / (a * (1 - a))
        wald = (float(expit(g - Z * gse)), float(expit(g + Z * gse)))
        with np.errstate(all="ignore"):
            t = (logit(c["Ab"]) - g) / (np.sqrt(c["Vb"]) / (c["Ab"] * (1 - c["Ab"])))
        t = np.where((c["Ab"] >= 1) | (c["Vb"] <= 0), np.sign(c["Ab"] - a) * CAP, t)
        lo, hi = _t_ends(g, gse, t)
        out["auc studentized logit bootstrap"] = (float(expit(lo)), float(expit(hi)))
        out["auc logit Wald"] = out["auc logit Wald + separation bound"] = wald
    else:  # a perfect separation
        out["auc studentized logit bootstrap"] = out["auc logit Wald"] = (a, a)
        out["auc logit Wald + separation bound"] = (0.025 ** (1 / min(n1, n0)), 1.0)
    _mean_methods(c["loss"], w, out, "log_loss")
    lm = c["loss"]
    mu3 = np.mean((lm - lm.mean()) ** 3)
    shift = mu3 / (6 * lm.var(ddof=1) * n)  # Johnson (1978)
    out["log_loss Johnson t"] = (lm.mean() + shift - Z * lm.std(ddof=1) / np.sqrt(n),
                                 lm.mean() + shift + Z * lm.std(ddof=1) / np.sqrt(n))
    p = c["correct"].mean()
    out["accuracy percentile"] = _pct(w @ c["correct"] / n)
    centre, half = (p + Z**2 / (2 * n)), Z * np.sqrt(p * (1 - p) / n + Z**2 / (4 * n * n))
    out["accuracy Wilson"] = ((centre - half) / (1 + Z**2 / n), (centre + half) / (1 + Z**2 / n))
    d = c["A"] - h["A"]
    out["delta auc percentile"] = _pct(c["Ab"] - h["Ab"])
    vd = 0.0
    for cls in (y == 1, y == 0):  # paired DeLong: variance of the placement differences
        vd += np.var(c["pl"][cls] - h["pl"][cls], ddof=1) / cls.sum()
    out["delta auc paired DeLong Wald"] = (d - Z * np.sqrt(vd), d + Z * np.sqrt(vd))
    _mean_methods(c["loss"] - h["loss"], w, out, "delta log_loss")
    _mean_methods(c["correct"] - h["correct"], w, out, "delta accuracy")
    return out


def low_end(method: str, lower: np.ndarray) -> str:
    return f"{100 * np.mean(lower < 0.95):.1f} %" if method.startswith("auc") else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="confident", choices=sorted(SCENARIOS))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sc = SCENARIOS[args.scenario]
    cand, champ = _truth(sc, 1.0), _truth(sc, 1.0 + sc.tau**2)
    truth = {"auc": cand["roc_auc"], "log_loss": cand["log_loss"], "accuracy": cand["accuracy"],
             "delta auc": cand["roc_auc"] - champ["roc_auc"],
             "delta log_loss": cand["log_loss"] - champ["log_loss"],
             "delta accuracy": cand["accuracy"] - champ["accuracy"]}
    rng = np.random.default_rng([args.seed, args.n])
    rows: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.simulations):
        for k, ends in _one(sc, args.n, rng, args.resamples).items():
            rows.setdefault(k, []).append(ends)
    print(f"{args.scenario}, n = {args.n}, {args.simulations} sets, {args.resamples} resamples")
    print("| method | coverage | below | above | median width | lower end < 0.95 |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, ends in rows.items():
        lo, hi = np.array(ends).T
        words = k.split()
        tr = truth[" ".join(words[:2]) if words[0] == "delta" else words[0]]
        below, above = np.mean(tr < lo), np.mean(tr > hi)
        print(f"| {k} | {100 * (1 - below - above):.1f} % | {100 * below:.1f} % | {100 * above:.1f} % "
              f"| {np.median(hi - lo):.4g} | {low_end(k, lo)} |")


if __name__ == "__main__":
    main()
