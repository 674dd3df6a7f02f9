"""Candidate intervals of the paired precision, F1, accuracy, recall and Brier deltas.

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.paired_delta_candidates --scenario auc98 --n 200 --simulations 1000

The population is that of :mod:`bench.bench_coverage` (candidate ``c``; champion ``h`` the
candidate's latent plus noise of sd ``tau``, near-equal models).  Every method works on the
rows with numpy and scipy and this script's own generator, so it shows which method to build
on the merged counts and cell table, not the production code (``bench_coverage`` measures
that).  The rate deltas depend on the rows only through the 8 counts of ``(label,
candidate's prediction, champion's prediction)``, so their resamples are multinomial draws
of those 8 cells (the row bootstrap's law).  Printed per method: coverage of the true delta
(95 % nominal), truth below / above, median width; then the recall delta's coverage given
the number of discordant positives (the positives one model finds and the other misses).

Candidates of a rate delta ``A_c / B_c - A_h / B_h`` (precision: ``A = tp``, ``B =
predicted positives``; F1: ``A = 2 tp``, ``B = positives + predicted positives``;
accuracy ``A = right``, ``B = n``; recall ``A = tp``, ``B = positives``):

- ``MOVER Wilson, resampled r``: the production method before (MOVER of each model's
  Wilson interval, F1's through the Jaccard index, with the correlation of the resampled
  values).
- ``Wald``: the delta method's standard error of the paired difference of two ratios of
  means (each row's influence ``(a_i - m b_i) / mean(b)`` under both models, their
  difference's variance), normal quantile (F1's before the pseudo-rows).
- ``Wald, t of Satterthwaite df``: Student's t with Satterthwaite's degrees of freedom of
  the influence differences (adopted for precision).
- ``Wald, +0.125 / +0.5 / +1 per discordant cell``: pseudo-rows in the 4 cells where the
  models differ (Bonett and Price's adjustment), held to the point.
- ``Wald, +1/16 / +1/8 / +1/4 per cell``: half, one or two pseudo-rows spread evenly over
  the 8 cells (Agresti and Min's matched-pairs adjustment, 0.5 per cell of a 2 x 2 table,
  scaled), the normal quantile, held to the point; +1/8 adopted for F1.
- ``bootstrap-t``: the same statistic studentized on every resample.
- ``percentile``.
- Accuracy and recall also: Tango's score interval; accuracy Newcombe's method 10 (MOVER,
  phi).

Brier delta (mean of ``d_i = (s_c - y)^2 - (s_h - y)^2``): the production method before
(MOVER of the positive and negative parts' bootstrap-t), Wald with the t quantile
(``n - 1``, or Satterthwaite's df: adopted), bootstrap-t of ``mean(d)``, percentile.

The recall delta's table: coverage given the number ``k`` of discordant positives, and
the share of sets whose ``k`` no valid conditional interval could exclude the truth after
(``bench/RESULTS.md``, "Paired precision, F1 and Brier deltas of near-equal models").
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from modelgate.evaluation.paired_rates import tango_interval
from scipy import integrate
from scipy.special import expit
from scipy.stats import beta as beta_dist
from scipy.stats import norm
from scipy.stats import t as student_t

from bench.bench_coverage import P_B, PI, SCENARIOS, THRESHOLD, Scenario, _truth
from bench.interval_candidates import _boot_t, _mover, _pct, _wilson
from modelgate.intervals import satterthwaite_df

Z = float(norm.ppf(0.975))
CAP = 1e6
# cell j = 4 y + 2 pred_c + pred_h
Y = np.array([0, 0, 0, 0, 1, 1, 1, 1], float)
PC = np.array([0, 0, 1, 1, 0, 0, 1, 1], float)
PH = np.array([0, 1, 0, 1, 0, 1, 0, 1], float)


def ratio_parts(metric: str, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell numerator ``a`` and denominator ``b`` of ``metric = sum(a) / sum(b)``."""
    tp = Y * pred
    if metric == "precision":
        return tp, pred
    if metric == "recall":
        return tp, Y
    if metric == "f1":
        return 2 * tp, Y + pred
    return (pred == Y).astype(float), np.ones(8)  # accuracy


def delta_and_se(metric: str, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Delta and its delta-method standard error per row of cell ``counts`` (k, 8)."""
    n = counts.sum(1, keepdims=True)
    influence = []
    values = []
    for pred in (PC, PH):
        a, b = ratio_parts(metric, pred)
        with np.errstate(all="ignore"):
            m = (counts @ a) / (counts @ b)
            influence.append((a - m[:, None] * b) / ((counts @ b)[:, None] / n))
        values.append(m)
    diff = influence[0] - influence[1]
    se = np.sqrt((counts * diff**2).sum(1) / n[:, 0] ** 2)
    return values[0] - values[1], se


def _influence_difference(metric: str, counts: np.ndarray) -> np.ndarray:
    """Per cell, the candidate's minus the champion's influence on their ratios."""
    n = counts.sum()
    parts = []
    for pred in (PC, PH):
        a, b = ratio_parts(metric, pred)
        m = (counts @ a) / (counts @ b)
        parts.append((a - m * b) / ((counts @ b) / n))
    return parts[0] - parts[1]


def _own(metric: str, counts: np.ndarray, pred: np.ndarray) -> tuple[float, tuple[float, float]]:
    a, b = ratio_parts(metric, pred)
    if metric == "f1":  # Wilson of the Jaccard index, mapped through 2 J / (1 + J)
        tp = counts @ (Y * pred)
        m = counts @ np.maximum(Y, pred)
        lo, hi = _wilson(tp / m, int(m))
        return 2 * tp / (tp + m), (2 * lo / (1 + lo), 2 * hi / (1 + hi))
    s, t = counts @ a, counts @ b
    return s / t, _wilson(s / t, int(t))


def rate_candidates(metric: str, counts: np.ndarray, draws: np.ndarray, out: dict) -> None:
    point, se = (v[0] for v in delta_and_se(metric, counts[None, :]))
    star, se_star = delta_and_se(metric, draws)
    key = f"delta {metric}"
    if metric in ("recall", "accuracy"):
        hit_c = ratio_parts(metric, PC)[0] if metric == "recall" else (PC == Y).astype(float)
        hit_h = ratio_parts(metric, PH)[0] if metric == "recall" else (PH == Y).astype(float)
        rows = Y if metric == "recall" else np.ones(8)
        only_c = int(counts @ (rows * hit_c * (1 - hit_h)))
        only_h = int(counts @ (rows * hit_h * (1 - hit_c)))
        out[f"{key} Tango score"] = tango_interval(only_c, only_h, int(counts @ rows), 0.95)
        if metric == "accuracy":  # Newcombe's method 10: Wilson intervals, phi of the table
            both = int(counts @ (hit_c * hit_h))
            m = int(counts.sum())
            den = np.sqrt((both + only_c) * (m - both - only_c) * (both + only_h) * (m - both - only_h))
            phi = (both * (m - both - only_c - only_h) - only_c * only_h) / den if den > 0 else 0.0
            p1, p2 = (both + only_c) / m, (both + only_h) / m
            out[f"{key} MOVER Wilson phi (Newcombe 10)"] = (
                _mover(p1, _wilson(p1, m), p2, _wilson(p2, m), phi) if only_c + only_h
                else (p1 - p2, p1 - p2))
    if not se > 0:  # the same prediction on every row: production gives [d, d]
        for label in ("MOVER Wilson, resampled r", "Wald", "bootstrap-t", "percentile",
                      "Wald, t of Satterthwaite df", "Wald, +0.125 per discordant cell",
                      "Wald, +0.5 per discordant cell", "Wald, +1 per discordant cell",
                      "Wald, +0.0625 per cell", "Wald, +0.125 per cell", "Wald, +0.25 per cell"):
            out[f"{key} {label}"] = (point, point)
        return
    pc, ec = _own(metric, counts, PC)
    ph, eh = _own(metric, counts, PH)
    a_c, b_c = ratio_parts(metric, PC)
    a_h, b_h = ratio_parts(metric, PH)
    with np.errstate(all="ignore"):
        rc, rh = draws @ a_c / (draws @ b_c), draws @ a_h / (draws @ b_h)
    ok = np.isfinite(rc) & np.isfinite(rh)
    r = float(np.corrcoef(rc[ok], rh[ok])[0, 1]) if np.std(rc[ok]) > 0 and np.std(rh[ok]) > 0 else 0.0
    out[f"{key} MOVER Wilson, resampled r"] = _mover(pc, ec, ph, eh, r if np.isfinite(r) else 0.0)
    out[f"{key} Wald"] = (point - Z * se, point + Z * se)
    n = counts.sum()
    with np.errstate(all="ignore"):
        dev = _influence_difference(metric, counts)
    df = satterthwaite_df(np.repeat(dev, counts.astype(int)) / n)
    tq = float(student_t.ppf(0.975, max(df, 1.0))) if np.isfinite(df) else Z
    out[f"{key} Wald, t of Satterthwaite df"] = (point - tq * se, point + tq * se)
    pads = [(f"+{a:g} per discordant cell", a * (PC != PH)) for a in (0.125, 0.5, 1.0)]
    pads += [(f"+{a:g} per cell", np.full(8, a)) for a in (0.0625, 0.125, 0.25)]
    for label, pad in pads:
        # pseudo-rows: in the discordant cells (Bonett and Price's adjustment, per cell) or
        # spread over all 8 (Agresti and Min's matched-pairs adjustment, scaled)
        centre, se_a = (v[0] for v in delta_and_se(metric, (counts + pad)[None, :]))
        out[f"{key} Wald, {label}"] = (min(centre - Z * se_a, point), max(centre + Z * se_a, point))
    with np.errstate(all="ignore"):
        t = (star - point) / se_star
    t = np.where(se_star > 0, t, np.sign(star - point) * CAP)
    t = t[np.isfinite(star)]
    hi_q, lo_q = np.quantile(t, [0.975, 0.025])
    out[f"{key} bootstrap-t"] = (min(point - hi_q * se, point), max(point - lo_q * se, point))
    out[f"{key} percentile"] = _pct(star[np.isfinite(star)])


def brier_candidates(d: np.ndarray, w: np.ndarray, out: dict) -> None:
    n = len(d)
    up, dn = np.maximum(d, 0.0), np.maximum(-d, 0.0)
    sd_up, sd_dn = up.std(), dn.std()
    r = -up.mean() * dn.mean() / (sd_up * sd_dn) if sd_up > 0 and sd_dn > 0 else 0.0
    out["delta brier MOVER of the +/- parts, boot-t"] = _mover(
        up.mean(), _boot_t(up, w), dn.mean(), _boot_t(dn, w), r)
    se = d.std(ddof=1) / np.sqrt(n)
    tq = float(student_t.ppf(0.975, n - 1))
    out["delta brier Wald t"] = (d.mean() - tq * se, d.mean() + tq * se)
    df = satterthwaite_df(d - d.mean())
    tq = float(student_t.ppf(0.975, max(df, 1.0))) if np.isfinite(df) else Z
    out["delta brier Wald, t of Satterthwaite df"] = (d.mean() - tq * se, d.mean() + tq * se)
    mean = w @ d / n
    se_star = np.sqrt(np.maximum(w @ d**2 / n - mean**2, 0.0) / (n - 1))
    with np.errstate(all="ignore"):
        t = np.where(se_star > 0, (mean - d.mean()) / se_star, np.sign(mean - d.mean()) * CAP)
    hi_q, lo_q = np.quantile(t, [0.975, 0.025])
    out["delta brier bootstrap-t"] = (d.mean() - hi_q * se, d.mean() - lo_q * se)
    out["delta brier percentile"] = _pct(mean)


def one_set(sc: Scenario, n: int, rng: np.random.Generator, resamples: int) -> tuple[dict, int, int]:
    y = (rng.random(n) < PI).astype(np.int64)
    x = rng.normal(sc.d * y + np.where(rng.random(n) < P_B, sc.shift_b, 0.0), 1.0)
    sc_c = expit(sc.beta * x + sc.beta0)
    sc_h = expit(sc.beta * (x + rng.normal(0.0, sc.tau, n)) + sc.beta0)
    cell = 4 * y + 2 * (sc_c >= THRESHOLD) + (sc_h >= THRESHOLD)
    counts = np.bincount(cell, minlength=8).astype(float)
    draws = rng.multinomial(n, counts / n, size=resamples).astype(float)
    out: dict[str, tuple[float, float]] = {}
    for metric in ("precision", "f1", "accuracy", "recall"):
        rate_candidates(metric, counts, draws, out)
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float)
    brier_candidates((sc_c - y) ** 2 - (sc_h - y) ** 2, w, out)
    return out, int(counts[5] + counts[6]), int(counts[6])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="auc98", choices=sorted(SCENARIOS))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--tau", type=float, default=None)
    args = parser.parse_args()
    sc = SCENARIOS[args.scenario]
    if args.tau is not None:
        sc = dataclasses.replace(sc, name=f"{sc.name}-tau{args.tau:g}", tau=args.tau)
    cand, champ = _truth(sc, 1.0), _truth(sc, 1.0 + sc.tau**2)
    truth = {f"delta {k}": cand[k] - champ[k] for k in ("precision", "f1", "accuracy", "recall", "brier")}
    rng = np.random.default_rng([args.seed, args.n])
    rows: dict[str, list[tuple[float, float]]] = {}
    discordant, only_c = [], []
    for _ in range(args.simulations):
        out, k, b = one_set(sc, args.n, rng, args.resamples)
        discordant.append(k)
        only_c.append(b)
        for key, ends in out.items():
            rows.setdefault(key, []).append(ends)
    mc = 100 * np.sqrt(0.95 * 0.05 / args.simulations)
    print(f"{args.scenario}, n = {args.n}, {args.simulations} sets, {args.resamples} resamples, "
          f"seed {args.seed}; Monte Carlo error of a 95 % coverage ±{mc:.1f} points")
    print("true deltas: " + ", ".join(f"{k[6:]} {v:.4f}" for k, v in truth.items()))
    print("| method | coverage | below | above | median width |")
    print("|---|---:|---:|---:|---:|")
    for key, ends in rows.items():
        lo, hi = np.array(ends).T
        tr = truth[" ".join(key.split()[:2])]
        below, above = np.mean(tr < lo), np.mean(tr > hi)
        print(f"| {key} | {100 * (1 - below - above):.1f} % | {100 * below:.1f} % "
              f"| {100 * above:.1f} % | {np.median(hi - lo):.4g} |")
    _recall_floor(rows, np.array(discordant), np.array(only_c), truth["delta recall"],
                  discordant_split(sc))


def discordant_split(sc: Scenario) -> tuple[float, float]:
    """Among positives: P(only the candidate finds it), P(only the champion does), by quadrature."""
    cut = -sc.beta0 / sc.beta
    only_c = only_h = 0.0
    for weight, shift in ((1 - P_B, 0.0), (P_B, sc.shift_b)):
        mu = sc.d + shift
        only_c += weight * integrate.quad(
            lambda x, mu=mu: norm.pdf(x - mu) * norm.cdf((cut - x) / sc.tau), cut, mu + 12)[0]
        only_h += weight * integrate.quad(
            lambda x, mu=mu: norm.pdf(x - mu) * norm.sf((cut - x) / sc.tau), mu - 12, cut)[0]
    return only_c, only_h


def _recall_floor(rows: dict, k: np.ndarray, b: np.ndarray, truth: float,
                  split: tuple[float, float]) -> None:
    """The recall delta's coverage given the number ``k`` of discordant positives.

    Given ``k``, the candidate-only count ``b`` is binomial with ``pi = p12 / (p12 + p21)``
    (McNemar's conditional law).  Where even the most lopsided split of ``k`` (``0`` or
    ``k`` of ``k``) has a 95 % Clopper-Pearson interval holding the true ``pi``, no
    interval valid given ``k`` can miss the truth; the rest of the sets hold it in at
    least 95 %, so such an interval's coverage is at least ``P(k small) + 0.95 P(rest)``.
    Printed: Tango's coverage per ``k`` and the exact conditional interval's (Clopper-
    Pearson of ``b / k`` mapped to ``pi``).
    """
    lo, hi = np.array(rows["delta recall Tango score"]).T
    tango = (lo <= truth) & (truth <= hi)
    pi = split[0] / (split[0] + split[1])
    ends = np.array([_clopper_pearson(int(bi), int(ki)) for bi, ki in zip(b, k, strict=True)])
    exact = (ends[:, 0] <= pi) & (pi <= ends[:, 1])
    forced = np.array([_clopper_pearson(0, int(ki))[1] >= pi and _clopper_pearson(int(ki), int(ki))[0] <= pi
                       for ki in k])
    print()
    floor = forced.mean() + 0.95 * (1 - forced.mean())
    print(f"recall delta {truth:.4f}: only-candidate {split[0]:.4f}, only-champion {split[1]:.4f} of "
          f"positives, pi = {pi:.3f}; sets whose k cannot exclude pi: {100 * forced.mean():.1f} %, "
          f"so a conditionally valid interval covers at least {100 * floor:.1f} %")
    print("| discordant positives k | share of sets | no split of k excludes pi | Tango | exact given k |")
    print("|---|---:|---:|---:|---:|")
    groups = [(f"{j}", k == j) for j in range(7)] + [("7+", k >= 7), ("all", k >= 0)]
    for label, sel in groups:
        if sel.any():
            word = "yes" if forced[sel].all() else ("no" if not forced[sel].any() else "some")
            print(f"| {label} | {100 * sel.mean():.1f} % | {word} "
                  f"| {100 * tango[sel].mean():.1f} % | {100 * exact[sel].mean():.1f} % |")


def _clopper_pearson(b: int, k: int) -> tuple[float, float]:
    if k == 0:
        return 0.0, 1.0
    lower = beta_dist.ppf(0.025, b, k - b + 1) if b > 0 else 0.0
    upper = beta_dist.ppf(0.975, b + 1, k - b) if b < k else 1.0
    return float(lower), float(upper)


if __name__ == "__main__":
    main()
