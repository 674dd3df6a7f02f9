"""performance_from_statistics's intervals against oracles that draw their own resamples.

The oracle reproduces the module's draws with its own generator: the bootstrap table
(``stats.bootstrap`` from :func:`collect`) has one cell per distinct ``(label, candidate
score, champion score)`` (with distinct scores: per row), sorted by that key, and a
resample is ``np.random.default_rng(seed).multinomial(n, counts / n, size=B)`` (one
chunk at these sizes).  Each replicate is then computed from the rows: a cell's drawn
count is spread over its rows as sample weights, and the metric is the weighted one,
written here (Mann-Whitney with ties one half, shares of rows, mean losses) and checked
against scikit-learn's ``sample_weight`` metrics on a few replicates.  The interval
methods are written here too: the percentile interval, BCa by Efron and Tibshirani
(1993, eq. 14.15) with the row-level leave-one-out jackknife by scikit-learn, Wilson,
Newcombe's method 10 and MOVER over the parts of the per-row log-loss difference
(``binary_oracles``).  Every interval is then widened to hold the point, as documented.

The interval option is also spelled at run time (equal to the literal, another object),
so that the module must compare it by value.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect
from scipy.stats import norm
from sklearn import metrics as skm
from support.binary_oracles import newcombe_method_10, parts_mover, row_log_losses, wilson

GRID = 2**20  # the score table's fallback grid (sufficient.FALLBACK_GRID)
METRICS = ("roc_auc", "accuracy", "log_loss", "brier")


def _spelled_at_run_time(name: str) -> str:
    """``name`` built anew: equal to the literal, never the same object."""
    built = "".join(list(name))
    assert built == name and built is not name
    return built


def _held(point: float, lower: float, upper: float) -> tuple[float, float]:
    return min(lower, point), max(upper, point)


def _weighted(y: np.ndarray, s: np.ndarray, threshold: float,
              w: np.ndarray) -> dict[str, np.ndarray]:
    """The metrics of rows ``y``, ``s`` under each row of sample weights ``w`` (B x n).

    ROC AUC is the weighted Mann-Whitney statistic (pairs ordered right plus half the
    ties, over the weighted positive-negative pairs); with integer weights every sum is an
    exact integer, so the quotient is correctly rounded (a replicate equal to the point
    is bit-equal to it, which BCa's bias correction counts)."""
    pos, neg = y == 1, y == 0
    twice = (2 * (s[:, None] > s[None, :]) + (s[:, None] == s[None, :]))[np.ix_(pos, neg)]
    twice_u = np.einsum("bi,ij,bj->b", w[:, pos], twice.astype(np.float64), w[:, neg])
    total = w.sum(axis=1)
    return {
        "roc_auc": twice_u / (2.0 * w[:, pos].sum(axis=1) * w[:, neg].sum(axis=1)),
        "accuracy": (w * ((s >= threshold) == pos)).sum(axis=1) / total,
        "log_loss": w @ row_log_losses(y, s) / total,
        "brier": w @ (y - s) ** 2 / total,
    }


def _sklearn(y: np.ndarray, s: np.ndarray, threshold: float,
             w: np.ndarray | None = None) -> dict[str, float]:
    return {"roc_auc": skm.roc_auc_score(y, s, sample_weight=w),
            "accuracy": skm.accuracy_score(y, s >= threshold, sample_weight=w),
            "log_loss": skm.log_loss(y, s, sample_weight=w),
            "brier": skm.brier_score_loss(y, s, sample_weight=w)}


def _check_formulas(y: np.ndarray, s: np.ndarray, threshold: float, w: np.ndarray) -> None:
    """The weighted formulas are scikit-learn's on the first few weight rows."""
    mine = _weighted(y, s, threshold, w[:3])
    for b in range(3):
        theirs = _sklearn(y, s, threshold, w[b])
        assert {k: mine[k][b] for k in METRICS} == pytest.approx(theirs, rel=1e-12)


def _check_auc_formula(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> None:
    """The weighted AUC is scikit-learn's on the first few weight rows."""
    mine = _weighted(y, s, 0.5, w[:3])["roc_auc"]
    assert mine == pytest.approx([skm.roc_auc_score(y, s, sample_weight=wb) for wb in w[:3]],
                                 rel=1e-12)


def _bca(replicates: np.ndarray, point: float, jackknife: np.ndarray,
         confidence_level: float, tie: np.ndarray | None = None) -> tuple[float, float]:
    """BCa ends (Efron and Tibshirani 1993, eq. 14.15): ``z0`` the normal quantile of the
    share of replicates below the point (ties one half, clipped to [1/(2B), 1 - 1/(2B)]),
    ``a = sum u^3 / (6 (sum u^2)^1.5)`` with ``u = mean(jackknife) - jackknife``, the
    ends ``np.quantile`` of the replicates at ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))``;
    widened to hold the point.  The ties are the replicates equal to the point, or those
    ``tie`` marks (one flag per replicate, all finite) when the test knows them exactly."""
    finite = np.isfinite(replicates)
    r = replicates[finite]
    tie = r == point if tie is None else tie[finite]
    b = r.size
    share = (np.sum((r < point) & ~tie) + 0.5 * np.sum(tie)) / b
    z0 = norm.ppf(np.clip(share, 0.5 / b, 1 - 0.5 / b))
    u = jackknife.mean() - jackknife
    a = np.sum(u**3) / (6.0 * np.sum(u**2) ** 1.5) if np.sum(u**2) > 0 else 0.0
    alpha = 1.0 - confidence_level
    z = z0 + norm.ppf([alpha / 2, 1 - alpha / 2])
    lower, upper = np.quantile(r, norm.cdf(z0 + z / (1.0 - a * z)))
    return _held(point, lower, upper)


def _percentile(replicates: np.ndarray, point: float, confidence_level: float) -> tuple[float, float]:
    alpha = 1.0 - confidence_level
    lower, upper = np.quantile(replicates[np.isfinite(replicates)], [alpha / 2, 1 - alpha / 2])
    return _held(point, lower, upper)


# ------------------------------------------------------------- the grid's cell midpoints


def test_grid_scores_on_a_bootstrap_cell_s_edges_keep_their_cell_s_concordance() -> None:
    """Scores on the 2**-20 grid (``max_distinct=1``), coarse bootstrap cells
    (``max_cells=16``): a cell's resampled pairs count at the concordance of that cell's
    rows.  Oracle: the percentile interval of the AUCs of this test's own draws, each the
    weighted AUC of the rows on the grid with a cell's drawn count spread evenly over its
    rows (the expected AUC given the cell counts, which is what the module computes).

    At level 3 the cells in [1/4, 1/2) are 1/32 wide; a positive sits exactly on the lower
    edge 0.3125 of its cell and a negative in the last grid step (0.375 - 2**-21) of
    another, so a grid cell's midpoint moved by one step puts that row's pairs into the
    neighbouring cell: in [0.3125, 0.34375) 1 of 4 pairs is ordered right (by hand: only
    0.3234 over 0.3172), without the edge positive 1 of 2; in [0.34375, 0.375) 1 of 3,
    without the edge negative 1 of 2."""
    k = np.arange(16)
    # a negative in each 1/64 step, a positive in every other: 24 cells at level 4, so
    # level 3 (at most 16) is the finest that fits
    s = np.r_[0.25 + (k + 0.3) / 64, 0.25 + (k[::2] + 0.7) / 64, 0.3125, 0.375 - 2**-21]
    y = np.r_[np.zeros(16, int), np.ones(8, int), 1, 0]
    stats = collect(y, s, threshold=0.5, max_distinct=1, max_cells=16)
    assert stats.candidate.scores.grid == GRID and stats.bootstrap.level == 3
    # this test's own cells: (label, floor(32 s)), sorted as the table's
    _, cell, counts = np.unique(np.c_[y, np.floor(s * 32)], axis=0, return_inverse=True,
                                return_counts=True)
    cell = cell.ravel()
    assert counts.tolist() == stats.bootstrap.counts.tolist()
    n, resamples, seed = len(y), 300, 4
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    weights = draws[:, cell] / counts[cell]
    on_grid = np.floor(s * GRID)
    _check_auc_formula(y, on_grid, weights)
    point = skm.roc_auc_score(y, on_grid)
    expected = _percentile(_weighted(y, on_grid, 0.5, weights)["roc_auc"], point, 0.95)
    got = performance_from_statistics(stats, n_bootstrap=resamples, seed=seed,
                                      interval="percentile").candidate.by_name()["roc_auc"]
    assert got.value == pytest.approx(point, rel=1e-12)
    assert (got.ci_lower, got.ci_upper) == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------- the AUC error bound


def test_the_error_bound_counts_each_grid_cell_s_tied_pairs_one_half() -> None:
    """One grid cell holds 1 positive and 2 negatives (ordered right on the exact scores),
    of 2 positives and 3 negatives: the bound is 2 tied pairs / (2 x 2 x 3) = 1/6 (by
    hand), and it is attained: scikit-learn's AUC on the exact scores (1) minus that on
    the grid cells (5/6, the reported one)."""
    w = 2.0**-20
    y = np.array([1, 0, 0, 1, 0])
    s = np.array([0.5 + 0.75 * w, 0.5 + 0.25 * w, 0.5 + 0.5 * w, 0.9, 0.1])
    stats = collect(y, s, threshold=0.5, max_distinct=1)
    assert stats.candidate.scores.grid == GRID
    summary = performance_from_statistics(stats, n_bootstrap=0)
    exact, on_grid = skm.roc_auc_score(y, s), skm.roc_auc_score(y, np.floor(s * GRID))
    assert (exact, on_grid) == pytest.approx((1.0, 5 / 6), rel=1e-12)
    assert summary.candidate.by_name()["roc_auc"].value == pytest.approx(on_grid, rel=1e-12)
    assert summary.auc_error_bound == pytest.approx(1 / 6, rel=1e-12)
    assert summary.auc_error_bound == pytest.approx(exact - on_grid, rel=1e-12)


# ----------------------------------------------- BCa and percentile ends, with the deltas


def _distinct_rows(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, a candidate and a noisier champion, every score distinct."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.45).astype(int)
    x = rng.normal(1.2 * y, 1.0)
    return y, 1 / (1 + np.exp(-x)), 1 / (1 + np.exp(-(x + rng.normal(0.0, 0.8, n))))


def _jackknife(y: np.ndarray, s: np.ndarray, threshold: float) -> dict[str, np.ndarray]:
    """Each metric with one row left out, by scikit-learn."""
    out = [_sklearn(y[keep], s[keep], threshold)
           for keep in ~np.eye(len(y), dtype=bool)]
    return {k: np.array([o[k] for o in out]) for k in METRICS}


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_ends_and_paired_deltas_are_those_of_the_row_bootstrap(method: str) -> None:
    """Distinct scores: every row is its own cell and the draws are a row bootstrap.  The
    oracle recomputes each model's replicates and the paired differences from this test's
    own draws, and the ends by the method's formula (BCa with the row-level jackknife of
    each model, and of the delta as the difference of the two models' leave-one-out
    values, by scikit-learn)."""
    y, s, h = _distinct_rows(7, 28)
    thresholds = (0.5, 0.45)
    stats = collect(y, s, threshold=thresholds[0], champion_score=h,
                    champion_threshold=thresholds[1])
    n, resamples, seed, level = len(y), 400, 11, 0.9
    table = stats.bootstrap
    assert table.counts.tolist() == [1] * n
    order = np.lexsort((h, s, y))  # the table's cells: (label, candidate, champion)
    assert table.label.tolist() == y[order].tolist()
    draws = np.random.default_rng(seed).multinomial(n, np.ones(n) / n, size=resamples)
    weights = np.empty_like(draws)
    weights[:, order] = draws
    _check_formulas(y, s, thresholds[0], weights)
    models = list(zip((s, h), thresholds, strict=True))
    replicates = [_weighted(y, m, t, weights) for m, t in models]
    points = [{k: v[0] for k, v in _weighted(y, m, t, np.ones((1, n))).items()} for m, t in models]
    for (m, t), p in zip(models, points, strict=True):
        assert p == pytest.approx(_sklearn(y, m, t), rel=1e-12)
    jack = [_jackknife(y, m, t) for m, t in models] if method == "bca" else None

    def ends(point: float, r: np.ndarray, j: np.ndarray | None) -> tuple[float, float]:
        return _bca(r, point, j, level) if j is not None else _percentile(r, point, level)

    summary = performance_from_statistics(stats, n_bootstrap=resamples, seed=seed,
                                          confidence_level=level,
                                          interval=_spelled_at_run_time(method))  # type: ignore[arg-type]
    assert summary.champion is not None and summary.comparison is not None
    for i, report in enumerate((summary.candidate, summary.champion)):
        for name in METRICS:
            got = report.by_name()[name]
            want = ends(points[i][name], replicates[i][name], jack[i][name] if jack else None)
            assert got.value == pytest.approx(points[i][name], rel=1e-12), name
            assert (got.ci_lower, got.ci_upper) == pytest.approx(want, rel=1e-9, abs=1e-12), name
    for name in METRICS:
        got = summary.comparison.by_name()[name]
        delta = points[0][name] - points[1][name]
        want = ends(delta, replicates[0][name] - replicates[1][name],
                    jack[0][name] - jack[1][name] if jack else None)
        assert got.delta == pytest.approx(delta, rel=1e-9, abs=1e-15), name
        assert (got.ci_lower, got.ci_upper) == pytest.approx(want, rel=1e-9, abs=1e-12), name


# ------------------------------------------- per-metric intervals on cells of several rows


@pytest.mark.parametrize("spelling", ["literal", "built at run time"])
def test_per_metric_intervals_on_cells_of_duplicate_rows(spelling: str) -> None:
    """Twelve distinct rows, each twice or three times: cells of 2 or 3 identical rows.
    A multinomial draw over the cells is then a row resample (which copy of a row is
    drawn does not matter), so this test turns its own draws into row indices and
    checks the log-loss delta against MOVER over the parts of the per-row loss
    difference with bootstrap-t parts on those rows, the accuracies against Wilson's
    interval and the accuracy delta against Newcombe's method 10, from the rows."""
    y0, s0, h0 = _distinct_rows(21, 12)
    copies = np.tile([2, 3, 2], 4)
    y, s, h = np.repeat(y0, copies), np.repeat(s0, copies), np.repeat(h0, copies)
    n, resamples, seed = len(y), 400, 5
    stats = collect(y, s, threshold=0.5, champion_score=h, champion_threshold=0.5)
    order = np.lexsort((h0, s0, y0))  # the table's cells, one per distinct row
    assert stats.bootstrap.counts.tolist() == copies[order].tolist()
    draws = np.random.default_rng(seed).multinomial(n, copies[order] / n, size=resamples)
    first_copy = np.cumsum(copies) - copies  # a row of each distinct row
    idx = np.stack([np.repeat(first_copy[order], d) for d in draws])
    interval = "per_metric" if spelling == "literal" else _spelled_at_run_time("per_metric")
    summary = performance_from_statistics(stats, n_bootstrap=resamples, seed=seed,
                                          interval=interval)  # type: ignore[arg-type]
    assert summary.champion is not None and summary.comparison is not None
    diff = row_log_losses(y, s) - row_log_losses(y, h)
    loss = summary.comparison.by_name()["log_loss"]
    assert loss.delta == pytest.approx(diff.mean(), rel=1e-12)
    assert (loss.ci_lower, loss.ci_upper) == pytest.approx(parts_mover(diff, idx), abs=1e-12)
    new, old = (s >= 0.5) == y, (h >= 0.5) == y
    # the models disagree on some row (else the delta is the exact [0, 0], not Newcombe's)
    assert np.any(new != old)
    for report, right in ((summary.candidate, new), (summary.champion, old)):
        got = report.by_name()["accuracy"]
        assert (got.ci_lower, got.ci_upper) == pytest.approx(wilson(right.mean(), n), abs=1e-12)
    accuracy = summary.comparison.by_name()["accuracy"]
    assert (accuracy.delta, accuracy.ci_lower, accuracy.ci_upper) == pytest.approx(
        newcombe_method_10(new, old), abs=1e-12)


# ----------------------------------------------------------------- a non-finite statistic


def test_a_loss_sum_that_is_not_finite_gives_nan_with_its_reason() -> None:
    """A metric is NaN with a reason exactly when it cannot be estimated (MetricEstimate's
    contract).  :func:`collect` clips every loss, so a non-finite loss sum comes only from
    statistics built or altered by hand, as here: its log loss and log-loss delta are
    reported NaN, "not finite", never an interval around infinity; the other metrics stay."""
    y = np.array([0, 1, 1, 0, 1, 0, 1, 0])
    s = np.array([0.2, 0.9, 0.4, 0.45, 0.55, 0.6, 0.8, 0.1])
    h = np.array([0.3, 0.7, 0.6, 0.2, 0.4, 0.5, 0.9, 0.35])
    stats = collect(y, s, threshold=0.5, champion_score=h, champion_threshold=0.5)
    broken = dataclasses.replace(stats, candidate=dataclasses.replace(stats.candidate,
                                                                      log_loss_sum=math.inf))
    summary = performance_from_statistics(broken, n_bootstrap=20)
    assert summary.comparison is not None
    for got in (summary.candidate.by_name()["log_loss"], summary.comparison.by_name()["log_loss"]):
        assert got.undefined_reason == "not finite" and got.n == 8
        assert math.isnan(got.ci_lower) and math.isnan(got.ci_upper)
    assert math.isnan(summary.candidate.by_name()["log_loss"].value)
    brier = summary.candidate.by_name()["brier"]
    assert brier.value == pytest.approx(skm.brier_score_loss(y, s), rel=1e-12)
    assert brier.undefined_reason is None and brier.ci_lower <= brier.value <= brier.ci_upper


# --------------------------------------------- BCa ties of summed losses on tiny tables


@pytest.mark.parametrize("rows", [4, 5], ids=["4-rows", "5-rows"])
def test_bca_counts_a_resample_equal_to_the_data_as_a_tie_of_the_summed_losses(rows: int) -> None:
    """On a few rows many resamples draw every row once (4! / 4**4 = 9 %), and their log
    loss and Brier replicates are the point, up to rounding: the losses are summed over
    cells for the replicates and over rows for the point.  The oracle knows such ties
    exactly, from the integer draws (this test's own, every row its own cell), and the
    rows' losses are distinct, so no other draw gives the point: BCa counts exactly those
    one half.  Before the fix they fell below or above by an ulp, as the rounding went:
    the 4-row case's upper log-loss end was 1.3019 instead of 1.2352."""
    y = np.array([0, 1, 1, 0, 1])[:rows]
    s = np.array([0.18, 0.68, 0.45, 0.77, 0.31])[:rows]
    h = np.array([0.27, 0.59, 0.61, 0.42, 0.12])[:rows]
    stats = collect(y, s, threshold=0.5, champion_score=h, champion_threshold=0.5)
    resamples, seed, level = 100, 0, 0.95
    order = np.lexsort((h, s, y))
    assert stats.bootstrap.counts.tolist() == [1] * rows
    draws = np.random.default_rng(seed).multinomial(rows, np.ones(rows) / rows, size=resamples)
    tie = (draws == 1).all(axis=1)
    assert tie.sum() >= 2
    weights = np.empty_like(draws)
    weights[:, order] = draws
    models = ((s, 0.5), (h, 0.5))
    with np.errstate(invalid="ignore"):  # one-class resamples: the oracle's AUC is 0 / 0
        replicates = [_weighted(y, m, t, weights) for m, t in models]
    jack = [_jackknife(y, m, t) for m, t in models]
    summary = performance_from_statistics(stats, n_bootstrap=resamples, seed=seed,
                                          confidence_level=level, interval="bca")
    assert summary.champion is not None and summary.comparison is not None
    points = [_sklearn(y, m, t) for m, t in models]
    for name in ("log_loss", "brier"):
        for i, report in enumerate((summary.candidate, summary.champion)):
            got = report.by_name()[name]
            want = _bca(replicates[i][name], points[i][name], jack[i][name], level, tie)
            assert (got.ci_lower, got.ci_upper) == pytest.approx(want, rel=1e-9), (name, i)
        got = summary.comparison.by_name()[name]
        want = _bca(replicates[0][name] - replicates[1][name],
                    points[0][name] - points[1][name], jack[0][name] - jack[1][name], level, tie)
        assert (got.ci_lower, got.ci_upper) == pytest.approx(want, rel=1e-9), (name, "delta")
    if rows == 4:  # the case worked for the bug report, by the same oracle
        got = summary.candidate.by_name()["log_loss"]
        assert (got.ci_lower, got.ci_upper) == pytest.approx(
            (0.34366852612804877, 1.2352086277538068), rel=1e-9)
