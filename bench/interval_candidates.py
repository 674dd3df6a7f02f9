"""Candidate interval methods for the binary metrics, side by side on the same simulated sets.

Run from the repository root::

    .venv/bin/python -m bench.interval_candidates --scenario confident --n 200 --simulations 1000
    .venv/bin/python -m bench.interval_candidates --scenario auc98 --n 200 --simulations 1000 --quick

``--quick`` runs only the paired ROC AUC, recall and accuracy delta candidates.

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
import dataclasses

import numpy as np
from modelgate.evaluation.paired_rates import tango_interval
from scipy.special import expit, logit
from scipy.stats import norm
from scipy.stats import t as student_t

from bench.bench_coverage import P_B, PI, SCENARIOS, THRESHOLD, Scenario, _truth

Z = float(norm.ppf(0.975))
EPS = np.finfo(np.float64).eps
CAP = 1e6
QUICK = False  # --quick: the paired AUC, recall and accuracy delta candidates only


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


def _log_scale_methods(v: np.ndarray, w: np.ndarray, out: dict, key: str) -> None:
    """Bootstrap-t of ``log(mean(v))`` (standard error ``se / mean``, delta method) and
    BCa of the mean (acceleration from the row jackknife), for a positive mean."""
    n = len(v)
    m, se = v.mean(), v.std(ddof=1) / np.sqrt(n)
    mb = w @ v / n
    seb = np.sqrt(np.maximum(w @ v**2 / n - mb**2, 0) * n / (n - 1) / n)
    with np.errstate(all="ignore"):
        t = np.where(seb > 0, (np.log(mb) - np.log(m)) / (seb / mb), np.sign(mb - m) * CAP)
    lo, hi = _t_ends(float(np.log(m)), se / m, t)
    out[f"{key} bootstrap-t log scale"] = (float(np.exp(lo)), float(np.exp(hi)))
    z0 = norm.ppf(np.clip(np.mean(mb < m) + 0.5 * np.mean(mb == m), 1e-6, 1 - 1e-6))
    jack = (v.sum() - v) / (n - 1)
    dj = jack.mean() - jack
    acc = np.sum(dj**3) / (6 * np.sum(dj**2) ** 1.5) if np.sum(dj**2) > 0 else 0.0
    ends = []
    for zq in (-Z, Z):
        level = norm.cdf(z0 + (z0 + zq) / (1 - acc * (z0 + zq)))
        ends.append(float(np.quantile(mb, level)))
    out[f"{key} BCa"] = (ends[0], ends[1])


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
    _paired_rate_candidates(scores, y, w, out)
    _paired_auc_candidates(scores, y, w, c["A"] - h["A"], out)
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
        tq = float(student_t.ppf(0.975, min(n1, n0) - 1))  # issue #38: t quantile
        out["auc logit Wald t + separation bound"] = (float(expit(g - tq * gse)),
                                                       float(expit(g + tq * gse)))
    else:  # a perfect separation
        out["auc studentized logit bootstrap"] = out["auc logit Wald"] = (a, a)
        out["auc logit Wald + separation bound"] = (0.025 ** (1 / min(n1, n0)), 1.0)
        out["auc logit Wald t + separation bound"] = out["auc logit Wald + separation bound"]
    if QUICK:
        return out
    _mean_methods(c["loss"], w, out, "log_loss")
    _log_scale_methods(c["loss"], w, out, "log_loss")
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
    _mover_candidates(c, h, y, w, out)
    return out


def _bonett_price(only_1: float, only_2: float, n: float) -> tuple[float, float]:
    """Bonett and Price (2012) adjusted Wald interval of a paired difference of proportions
    (``only_1``, ``only_2``: the discordant counts of ``n`` pairs), held to the point."""
    p12, p21 = (only_1 + 1) / (n + 2), (only_2 + 1) / (n + 2)
    d = p12 - p21
    half = Z * np.sqrt(max(p12 + p21 - d * d, 0.0) / (n + 2))
    point = (only_1 - only_2) / n
    return min(d - half, point), max(d + half, point)


def _paired_rate_candidates(scores: dict, y: np.ndarray, w: np.ndarray, out: dict) -> None:
    """Recall and accuracy deltas: MOVER of the Wilson intervals (resampled r for the recall,
    phi for both), Bonett-Price."""
    fc, fh = scores["c"] >= THRESHOLD, scores["h"] >= THRESHOLD
    for name, rows, hit_c, hit_h in (("recall", y == 1, fc, fh),
                                     ("accuracy", np.ones(len(y), bool), fc == (y == 1),
                                      fh == (y == 1))):
        a, b = hit_c[rows], hit_h[rows]
        m = int(rows.sum())
        both, only_1 = float(np.sum(a & b)), float(np.sum(a & ~b))
        only_2, neither = float(np.sum(~a & b)), float(np.sum(~a & ~b))
        p1, p2 = (both + only_1) / m, (both + only_2) / m
        den = np.sqrt((both + only_1) * (only_2 + neither) * (both + only_2) * (only_1 + neither))
        phi = (both * neither - only_1 * only_2) / den if den > 0 else 0.0
        out[f"delta {name} Tango score"] = tango_interval(int(only_1), int(only_2), m, 0.95)
        if only_1 == 0 and only_2 == 0:
            point = (p1 - p2, p1 - p2)
            out[f"delta {name} MOVER Wilson phi"] = out[f"delta {name} Bonett-Price"] = point
            out[f"delta {name} MOVER Wilson resampled r"] = point
            continue
        e1, e2 = _wilson(p1, m), _wilson(p2, m)
        out[f"delta {name} MOVER Wilson phi"] = _mover(p1, e1, p2, e2, phi)
        out[f"delta {name} Bonett-Price"] = _bonett_price(only_1, only_2, m)
        wr = w[:, rows]
        with np.errstate(all="ignore"):
            r1, r2 = wr @ a / wr.sum(1), wr @ b / wr.sum(1)
        ok = np.isfinite(r1) & np.isfinite(r2)
        r = float(np.corrcoef(r1[ok], r2[ok])[0, 1]) if np.std(r1[ok]) > 0 and np.std(r2[ok]) > 0 else 0.0
        out[f"delta {name} MOVER Wilson resampled r"] = _mover(p1, e1, p2, e2, r)


def _row_placements(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """AUC and each row's placement value per row of counts ``w`` (rows in data order)."""
    o = np.argsort(s, kind="stable")
    a, _, pl = _auc_parts(w[:, o], y[o])
    out = np.empty_like(pl)
    out[:, o] = pl
    return a, out


def _paired_auc_candidates(scores: dict, y: np.ndarray, w: np.ndarray, d: float, out: dict) -> None:
    """Delta AUC: paired DeLong Wald (t quantile) and a studentized bootstrap with the paired
    DeLong standard error of each resample."""
    one = np.ones((1, len(y)))
    n1, n0 = int(y.sum()), int(len(y) - y.sum())
    acs = {}
    for k in ("c", "h"):
        aa, pp = _row_placements(scores[k], y, one)
        o = np.argsort(scores[k], kind="stable")
        _, vv, _ = _auc_parts(one[:, o], y[o])
        acs[k] = (float(aa[0]), float(vv[0]), pp[0])
    cov = sum(np.cov(acs["c"][2][cls], acs["h"][2][cls])[0, 1] / cls.sum() for cls in (y == 1, y == 0))
    den = np.sqrt(acs["c"][1] * acs["h"][1])
    r = float(np.clip(cov / den, -1, 1)) if den > 0 else 0.0
    out["delta auc MOVER fallback"] = _mover(acs["c"][0], _logit_sep(acs["c"][0], acs["c"][1], n1, n0),
                                             acs["h"][0], _logit_sep(acs["h"][0], acs["h"][1], n1, n0), r)
    parts = {}
    for weights, key in ((one, "data"), (w, "boot")):
        ac, pc = _row_placements(scores["c"], y, weights)
        ah, ph = _row_placements(scores["h"], y, weights)
        diff = pc - ph
        var = np.zeros(weights.shape[0])
        for cls in (y == 1, y == 0):
            ww = weights[:, cls]
            m = ww.sum(1)
            with np.errstate(all="ignore"):
                mean = (ww * diff[:, cls]).sum(1) / m
                var = var + (ww * (diff[:, cls] - mean[:, None]) ** 2).sum(1) / (m - 1) / m
        parts[key] = (ac - ah, var)
    dd, vd = float(parts["data"][0][0]), float(parts["data"][1][0])
    _logit_normal_candidate(scores, y, out)
    if QUICK:
        return
    se = np.sqrt(vd)
    m = int(min(y.sum(), len(y) - y.sum()))
    tq = float(student_t.ppf(0.975, m - 1))
    out["delta auc paired DeLong Wald t"] = (dd - tq * se, dd + tq * se)
    if se > 0:
        db, vb = parts["boot"]
        out["delta auc bootstrap-t paired DeLong"] = _t_ends(dd, se, np.where(
            vb > 0, (db - dd) / np.sqrt(np.maximum(vb, 0)), np.sign(db - dd) * CAP))
    else:
        out["delta auc bootstrap-t paired DeLong"] = (dd, dd)


def _logit_normal_candidate(scores: dict, y: np.ndarray, out: dict) -> None:
    """Delta AUC: the two AUCs' logits as bivariate normal with DeLong's covariance (t
    quantile scale), the interval the 2.5 / 97.5 % quantiles of ``expit(g1) - expit(g2)``
    (fixed-seed normal draws); for one model this is its logit Wald interval."""
    one = np.ones((1, len(y)))
    a, pl = {}, {}
    for k in ("c", "h"):
        aa, pp = _row_placements(scores[k], y, one)
        a[k], pl[k] = float(aa[0]), pp[0]
    if not all(0 < a[k] < 1 for k in a):
        for tag in ("", " sat own", " sat diff"):
            out[f"delta auc logit-normal DeLong{tag}"] = out["delta auc MOVER fallback"]
        return
    cov = np.zeros((2, 2))
    for cls in (y == 1, y == 0):
        cov += np.cov(np.vstack([pl["c"][cls], pl["h"][cls]])) / cls.sum()
    jac = np.array([1 / (a["c"] * (1 - a["c"])), 1 / (a["h"] * (1 - a["h"]))])
    m = int(min(y.sum(), len(y) - y.sum()))
    n1, n0 = int(y.sum()), int(len(y) - y.sum())
    dev = {k: np.where(y == 1, (pl[k] - a[k]) / np.sqrt(n1 * (n1 - 1.0)),
                       (pl[k] - a[k]) / np.sqrt(n0 * (n0 - 1.0))) for k in ("c", "h")}

    def sat(d: np.ndarray) -> float:
        v = float(d @ d)
        spread = float(np.sum(d**4)) - v * v / d.size
        return 2 * v * v / spread if spread > 1e-12 * v * v else np.inf

    for tag, df in (("", m - 1.0),
                    (" sat own", min(m - 1.0, sat(dev["c"]), sat(dev["h"]))),
                    (" sat diff", min(m - 1.0, sat(dev["c"] - dev["h"])))):
        _logit_normal_quantiles(a, cov, jac, float(student_t.ppf(0.975, max(df, 1.0)) / Z),
                                out, f"delta auc logit-normal DeLong{tag}")


def _logit_normal_quantiles(a: dict, cov: np.ndarray, jac: np.ndarray, tz: float, out: dict,
                            key: str) -> None:
    sig = cov * np.outer(jac, jac) * tz**2
    g = logit(np.array([a["c"], a["h"]]))
    draws = np.random.default_rng(0).multivariate_normal(g, sig, size=20000, method="cholesky") \
        if np.all(np.linalg.eigvalsh(sig) > 0) else None
    if draws is None:
        out[key] = out["delta auc MOVER fallback"]
        return
    diff = expit(draws[:, 0]) - expit(draws[:, 1])
    lo, hi = np.quantile(diff, [0.025, 0.975])
    d = a["c"] - a["h"]
    out[key] = (min(lo, d), max(hi, d))


def _mover(d1: float, e1: tuple[float, float], d2: float, e2: tuple[float, float],
           r: float) -> tuple[float, float]:
    """MOVER interval of ``d1 - d2`` from the two single intervals and their correlation
    (Zou and Donner 2008)."""
    lo1, hi1 = d1 - e1[0], e1[1] - d1
    lo2, hi2 = d2 - e2[0], e2[1] - d2
    lower = d1 - d2 - np.sqrt(max(lo1**2 + hi2**2 - 2 * r * lo1 * hi2, 0.0))
    upper = d1 - d2 + np.sqrt(max(hi1**2 + lo2**2 - 2 * r * hi1 * lo2, 0.0))
    return float(lower), float(upper)


def _logit_sep(a: float, v: float, n1: int, n0: int) -> tuple[float, float]:
    if 0 < a < 1 and v > 0:
        g, gse = logit(a), np.sqrt(v) / (a * (1 - a))
        return float(expit(g - Z * gse)), float(expit(g + Z * gse))
    if a >= 1:
        return 0.025 ** (1 / min(n1, n0)), 1.0
    return a, a


def _wilson(p: float, n: int) -> tuple[float, float]:
    centre, half = (p + Z**2 / (2 * n)), Z * np.sqrt(p * (1 - p) / n + Z**2 / (4 * n * n))
    return float((centre - half) / (1 + Z**2 / n)), float((centre + half) / (1 + Z**2 / n))


def _boot_t(v: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    tmp: dict[str, tuple[float, float]] = {}
    _mean_methods(v, w, tmp, "x")
    return tmp["x bootstrap-t"]


def _mover_candidates(c: dict, h: dict, y: np.ndarray, w: np.ndarray, out: dict) -> None:
    n = len(y)
    n1, n0 = int(y.sum()), int(n - y.sum())
    # delta AUC: each model's logit Wald (+ separation bound), paired DeLong correlation
    cov = 0.0
    for cls in (y == 1, y == 0):
        cov += np.cov(c["pl"][cls], h["pl"][cls])[0, 1] / cls.sum()
    denom = np.sqrt(c["V"] * h["V"])
    r = float(np.clip(cov / denom, -1, 1)) if denom > 0 else 0.0
    ec = _logit_sep(c["A"], c["V"], n1, n0)
    eh = _logit_sep(h["A"], h["V"], n1, n0)
    out["delta auc MOVER logit-Wald DeLong r"] = _mover(c["A"], ec, h["A"], eh, r)
    rb = np.corrcoef(c["Ab"], h["Ab"])[0, 1]
    out["delta auc MOVER logit-Wald bootstrap r"] = _mover(
        c["A"], ec, h["A"], eh, float(rb) if np.isfinite(rb) else 0.0)
    # delta accuracy: Newcombe (1998) method 10, Wilson intervals and the phi correlation
    a_ = float(np.sum((c["correct"] == 1) & (h["correct"] == 1)))
    b_ = float(np.sum((c["correct"] == 1) & (h["correct"] == 0)))
    c_ = float(np.sum((c["correct"] == 0) & (h["correct"] == 1)))
    d_ = float(n - a_ - b_ - c_)
    den = np.sqrt((a_ + b_) * (c_ + d_) * (a_ + c_) * (b_ + d_))
    num = a_ * d_ - b_ * c_
    for tag, nm in (("phi", num), ("phi corrected", max(num - n / 2, 0.0) if num > 0 else num)):
        phi = nm / den if den > 0 else 0.0
        p1, p2 = (a_ + b_) / n, (a_ + c_) / n
        out[f"delta accuracy Newcombe 10 ({tag})"] = _mover(p1, _wilson(p1, n), p2, _wilson(p2, n), phi)
    # delta log loss: each model's bootstrap-t, correlation of the row losses / of the resamples
    lc, lh = c["loss"], h["loss"]
    ecl, ehl = _boot_t(lc, w), _boot_t(lh, w)
    rl = float(np.corrcoef(lc, lh)[0, 1])
    out["delta log_loss MOVER boot-t row r"] = _mover(lc.mean(), ecl, lh.mean(), ehl, rl)
    dl = lc - lh
    skew_shift = np.mean((dl - dl.mean()) ** 3) / (6 * dl.var(ddof=1) * n)  # Johnson (1978)
    half = Z * dl.std(ddof=1) / np.sqrt(n)
    out["delta log_loss Johnson t"] = (dl.mean() + skew_shift - half, dl.mean() + skew_shift + half)
    rbl = float(np.corrcoef(w @ lc, w @ lh)[0, 1])
    out["delta log_loss MOVER boot-t bootstrap r"] = _mover(lc.mean(), ecl, lh.mean(), ehl, rbl)
    # MOVER over the positive and negative parts of the per-row difference: each part is a
    # non-negative, right-skewed mean like a log loss (bootstrap-t), and the parts live on
    # disjoint rows, so their correlation is -m+ m- / (sd+ sd-) <= 0 and MOVER's r -> 1
    # failure on near copies cannot arise
    up, dn = np.maximum(dl, 0.0), np.maximum(-dl, 0.0)
    sd_up, sd_dn = up.std(), dn.std()
    r_parts = -up.mean() * dn.mean() / (sd_up * sd_dn) if sd_up > 0 and sd_dn > 0 else 0.0
    out["delta log_loss MOVER of the +/- parts, boot-t"] = _mover(
        up.mean(), _boot_t(up, w), dn.mean(), _boot_t(dn, w), r_parts)
    out["delta log_loss MOVER of the +/- parts, boot-t, r=0"] = _mover(
        up.mean(), _boot_t(up, w), dn.mean(), _boot_t(dn, w), 0.0)


def low_end(method: str, lower: np.ndarray) -> str:
    return f"{100 * np.mean(lower < 0.95):.1f} %" if method.startswith("auc") else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="confident", choices=sorted(SCENARIOS))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tau", type=float, default=None,
                        help="the champion's latent noise instead of the scenario's (0.05: a near copy)")
    parser.add_argument("--quick", action="store_true",
                        help="the paired AUC, recall and accuracy delta candidates only")
    args = parser.parse_args()
    global QUICK
    QUICK = args.quick
    sc = SCENARIOS[args.scenario]
    if args.tau is not None:
        sc = dataclasses.replace(sc, name=f"{sc.name}-tau{args.tau:g}", tau=args.tau)
    cand, champ = _truth(sc, 1.0), _truth(sc, 1.0 + sc.tau**2)
    truth = {"auc": cand["roc_auc"], "log_loss": cand["log_loss"], "accuracy": cand["accuracy"],
             "delta auc": cand["roc_auc"] - champ["roc_auc"],
             "delta log_loss": cand["log_loss"] - champ["log_loss"],
             "delta accuracy": cand["accuracy"] - champ["accuracy"],
             "delta recall": cand["recall"] - champ["recall"]}
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
