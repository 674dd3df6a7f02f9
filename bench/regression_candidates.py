"""Candidate intervals for the regression r2 and the paired rmse delta, side by side.

Run from the repository root::

    .venv/bin/python -m bench.regression_candidates --scenario moderate --n 200 --simulations 1000

The population is that of :mod:`bench.coverage_families` (``y = x + sigma t5``, the
candidate predicting ``0.9 x + 0.1``, the champion ``0.8 x + 0.2``).  "production" is
:func:`modelgate.evaluation.regression.evaluate_regression` / ``compare_regression`` on
the set; every other method uses this script's own row bootstrap (numpy and scipy only),
so it shows which method to build, not the production code.  Per method: coverage of the
truth (95 % nominal), truth below / above the interval and the median width.
"""

from __future__ import annotations

import argparse

import numpy as np
from modelgate.evaluation.regression import compare_regression, evaluate_regression
from scipy.stats import norm
from scipy.stats import t as student_t

from bench.coverage_families import SIGMA, _regression_rows, regression_delta_truth, regression_truth

LEVEL = 0.95
Z = float(norm.ppf(0.975))
CAP = 1e6


def _t_ends(point: float, se: float, boot: np.ndarray, boot_se: np.ndarray) -> tuple[float, float]:
    with np.errstate(all="ignore"):
        t = np.where(boot_se > 0, (boot - point) / boot_se, np.sign(boot - point) * CAP)
    t = np.clip(t[np.isfinite(t)], -CAP, CAP)
    lo, hi = np.quantile(t, [0.025, 0.975])
    return point - hi * se, point - lo * se


def _factor(influence: np.ndarray) -> float:
    """t_df / z, Satterthwaite's df of the influences (the production stretch)."""
    d = influence - influence.mean()
    v = float(d @ d)
    spread = float(np.sum(d**4)) - v * v / d.size
    df = max(2.0 * v * v / spread, 1.0) if spread > 1e-12 * v * v else np.inf
    return max(float(student_t.ppf(0.975, df) / Z), 1.0)


def _stretch(point: float, ends: tuple[float, float], f: float) -> tuple[float, float]:
    return point - f * (point - ends[0]), point + f * (ends[1] - point)


def _r2_parts(w: np.ndarray, y: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """r2 and its influence-function standard error per row of counts ``w``."""
    n = w.sum(axis=1)
    dev = y[None, :] - ((w @ y) / n)[:, None]
    q = dev * dev
    spread = np.einsum("bn,bn->b", w, q) / n
    mse = w @ a / n
    r2 = 1.0 - mse / spread
    infl = ((1.0 - r2)[:, None] * q - a[None, :]) / spread[:, None]
    infl -= (np.einsum("bn,bn->b", w, infl) / n)[:, None]
    var = np.einsum("bn,bn->b", w, infl**2) / n / (n - 1.0)
    return r2, np.sqrt(var)


def _one(scenario: str, n: int, rng: np.random.Generator, resamples: int, seed: int) -> dict:
    y, pred = _regression_rows(SIGMA[scenario], n, rng)
    old = pred + 0.1 - 0.1 * (pred - 0.1) / 0.9
    out: dict[str, tuple[float, float]] = {}
    m = evaluate_regression(y, pred, n_bootstrap=resamples, seed=seed).by_name()["r2"]
    out["r2 production"] = (m.ci_lower, m.ci_upper)
    d = compare_regression(y, pred, old, n_bootstrap=resamples, seed=seed).by_name()["rmse"]
    out["delta rmse production"] = (d.ci_lower, d.ci_upper)
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float)
    a, b = (pred - y) ** 2, (old - y) ** 2
    # r2
    r2_one, se_one = _r2_parts(np.ones((1, n)), y, a)
    r2, se = float(r2_one[0]), float(se_one[0])
    r2b, seb = _r2_parts(w, y, a)
    q = (y - y.mean()) ** 2
    infl = ((1 - r2) * q - a) / q.mean()
    f = _factor(infl)
    out["r2 percentile"] = tuple(np.quantile(r2b, [0.025, 0.975]))
    out["r2 percentile stretched"] = _stretch(r2, out["r2 percentile"], f)
    out["r2 Wald t_df"] = (r2 - f * Z * se, r2 + f * Z * se)
    bt = _t_ends(r2, se, r2b, seb)
    out["r2 bootstrap-t"] = bt
    out["r2 bootstrap-t stretched"] = _stretch(r2, bt, f)
    # log(1 - r2): se / (1 - r2)
    g, gse = np.log(1 - r2), se / (1 - r2)
    with np.errstate(all="ignore"):
        lo, hi = _t_ends(g, gse, np.log(1 - r2b), seb / (1 - r2b))
    logt = (1 - np.exp(hi), 1 - np.exp(lo))
    out["r2 bootstrap-t log(1-r2)"] = logt
    out["r2 bootstrap-t log(1-r2) stretched"] = _stretch(r2, logt, f)
    # Fisher z of sqrt(r2)? r2 can be negative; atanh(sqrt) only for r2 > 0: skip
    # rmse delta
    ma, mb = a.mean(), b.mean()
    delta = np.sqrt(ma) - np.sqrt(mb)
    nb = w.sum(axis=1)
    mab, mbb = w @ a / nb, w @ b / nb
    deltab = np.sqrt(mab) - np.sqrt(mbb)
    ia = (a - ma) / (2 * np.sqrt(ma)) - (b - mb) / (2 * np.sqrt(mb))
    dse = float(np.sqrt(ia @ ia / n / (n - 1)))
    fd = _factor(ia)
    # per-resample delta-method se
    iab = (a[None, :] - mab[:, None]) / (2 * np.sqrt(mab))[:, None] \
        - (b[None, :] - mbb[:, None]) / (2 * np.sqrt(mbb))[:, None]
    seb_d = np.sqrt(np.einsum("bn,bn->b", w, iab**2) / nb / (nb - 1))
    bt = _t_ends(delta, dse, deltab, seb_d)
    out["delta rmse bootstrap-t"] = bt
    out["delta rmse bootstrap-t stretched"] = _stretch(delta, bt, fd)
    out["delta rmse Wald t_df"] = (delta - fd * Z * dse, delta + fd * Z * dse)
    # log ratio rmse_a / rmse_b, bootstrap-t; mapped with the champion's rmse held at its value
    lr = 0.5 * (np.log(ma) - np.log(mb))
    il = 0.5 * ((a - ma) / ma - (b - mb) / mb)
    lse = float(np.sqrt(il @ il / n / (n - 1)))
    ilb = 0.5 * ((a[None, :] - mab[:, None]) / mab[:, None] - (b[None, :] - mbb[:, None]) / mbb[:, None])
    lseb = np.sqrt(np.einsum("bn,bn->b", w, ilb**2) / nb / (nb - 1))
    llo, lhi = _stretch(lr, _t_ends(lr, lse, 0.5 * (np.log(mab) - np.log(mbb)), lseb), _factor(il))
    rb = np.sqrt(mb)
    out["delta rmse log-ratio bootstrap-t stretched (champion fixed)"] = (
        rb * (np.exp(llo) - 1), rb * (np.exp(lhi) - 1))
    # MOVER from the two rmse intervals (the production own intervals)
    ra = evaluate_regression(y, pred, n_bootstrap=resamples, seed=seed).by_name()["rmse"]
    rbm = evaluate_regression(y, old, n_bootstrap=resamples, seed=seed).by_name()["rmse"]
    r = float(np.corrcoef(a, b)[0, 1])
    lo1, hi1 = ra.value - ra.ci_lower, ra.ci_upper - ra.value
    lo2, hi2 = rbm.value - rbm.ci_lower, rbm.ci_upper - rbm.value
    out["delta rmse MOVER own intervals"] = (
        delta - np.sqrt(max(lo1**2 + hi2**2 - 2 * r * lo1 * hi2, 0)),
        delta + np.sqrt(max(hi1**2 + lo2**2 - 2 * r * hi1 * lo2, 0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="moderate", choices=sorted(SIGMA))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    truth = {"r2": regression_truth(args.scenario)["r2"],
             "delta rmse": regression_delta_truth(args.scenario)["delta rmse"]}
    rng = np.random.default_rng([args.seed, args.n])
    rows: dict[str, list[tuple[float, float]]] = {}
    for rep in range(args.simulations):
        for k, ends in _one(args.scenario, args.n, rng, args.resamples, rep).items():
            rows.setdefault(k, []).append(ends)
    print(f"{args.scenario}, n = {args.n}, {args.simulations} sets, {args.resamples} resamples")
    print("| method | coverage | below | above | median width |")
    print("|---|---:|---:|---:|---:|")
    for k, ends in rows.items():
        lo, hi = np.array(ends).T
        tr = truth["delta rmse" if k.startswith("delta") else "r2"]
        below, above = np.mean(tr < lo), np.mean(tr > hi)
        print(f"| {k} | {100 * (1 - below - above):.1f} % | {100 * below:.1f} % "
              f"| {100 * above:.1f} % | {np.median(hi - lo):.4g} |")


if __name__ == "__main__":
    main()
