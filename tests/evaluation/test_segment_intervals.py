"""Closed-form segment intervals: the rest by subtraction equals the merge of the others,
Hall's interval against hand-computed cases, the losses' moments against the rows."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.segment_intervals import (
    closed_form_estimates,
    hall_mean_interval,
    loss_power_sums,
    rest_of,
)
from modelgate.evaluation.segment_statistics import collect_segments, merge_segments
from modelgate.evaluation.sufficient import collect, merge
from modelgate.fairness.disaggregate import encode_groups
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score


def _parts(seed: int = 0) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 900)
    s = np.round(np.clip(0.4 * y + rng.uniform(0, 0.6, 900), 0, 1), 2)
    g = rng.integers(0, 3, 900)
    return [collect(y[g == k], s[g == k], threshold=0.5) for k in range(3)], y, s, g


def test_the_rest_by_subtraction_is_the_merge_of_the_other_segments() -> None:
    parts, y, s, g = _parts()
    total = merge(parts).candidate
    rest = rest_of(total, parts[0].candidate)
    other = merge(parts[1:]).candidate
    assert (rest.n, rest.n_pos, rest.tp, rest.fp) == (other.n, other.n_pos, other.tp, other.fp)
    at = np.searchsorted(rest.scores.keys, other.scores.keys)
    assert rest.scores.neg.sum() == other.scores.neg.sum()
    assert np.array_equal(rest.scores.neg[at], other.scores.neg)
    assert np.array_equal(rest.scores.pos[at], other.scores.pos)
    sums = loss_power_sums(merge(parts)) - loss_power_sums(parts[0])
    found = closed_form_estimates(rest, sums, 0.95)
    yr, sr = y[g != 0], s[g != 0]
    assert found["roc_auc"].value == pytest.approx(roc_auc_score(yr, sr), abs=1e-12)
    assert found["log_loss"].value == pytest.approx(log_loss(yr, sr), abs=1e-9)
    assert found["brier"].value == pytest.approx(brier_score_loss(yr, sr), abs=1e-12)
    assert sums[0, 1] / sums[0, 0] == pytest.approx(log_loss(yr, sr), abs=1e-9)


def test_loss_power_sums_are_the_rows_moments() -> None:
    parts, y, s, g = _parts(1)
    row = (y[g == 1] - s[g == 1]) ** 2
    got = loss_power_sums(parts[1])[1]
    expected = [row.size, row.sum(), (row ** 2).sum(), (row ** 3).sum()]
    assert got == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("max_distinct", [1 << 22, 300], ids=["exact", "grid"])
def test_segment_loss_moments_are_the_rows_whatever_the_cells(max_distinct: int) -> None:
    # continuous scores: a segment's moments come from its score table, exact where collect's
    # bootstrap cells would be cut (64 cells for ~800 scores); on the grid fallback from the
    # cells (one partition's rebuilt from its exact table), exact while they are distinct scores
    rng = np.random.default_rng(5)
    y = (rng.random(1600) < 0.4).astype(np.int8)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.25), 0.0, 1.0)
    g = rng.integers(0, 2, 1600)
    cells = 64 if max_distinct > 1000 else 1 << 15
    parts = merge_segments([collect_segments(y[r], s[r], threshold=0.5, columns=_column(g, r),
                                             max_cells=cells, max_distinct=max_distinct)
                            for r in (slice(0, 500), slice(500, None))],
                           max_cells=cells, max_distinct=max_distinct)[0].parts
    assert [bool(p.candidate.scores.grid) for p in parts] == [max_distinct < 1000] * 2
    for k, part in enumerate(parts):
        yk, sk = y[g == k], s[g == k]
        p = np.clip(np.where(yk == 1, sk, 1 - sk), np.finfo(float).eps, 1 - np.finfo(float).eps)
        for column, row in enumerate((-np.log(p), (yk - sk) ** 2)):
            expected = [row.size, row.sum(), (row ** 2).sum(), (row ** 3).sum()]
            assert loss_power_sums(part)[column] == pytest.approx(expected, rel=1e-12)


def _column(g: np.ndarray, rows: slice) -> dict:
    return {"g": encode_groups(g[rows].astype(str))}


def test_hall_interval_is_wald_without_skew_and_leans_with_it() -> None:
    # values -1, 1 (n = 2 each): mean 0, sd sqrt(4/3), no skew: 0 -+ 1.96 sd / 2
    lo, hi = hall_mean_interval(4, 0.0, 4.0, 0.0, 0.95)
    assert hi == pytest.approx(1.959964 * np.sqrt(4 / 3) / 2, rel=1e-5) and lo == -hi
    # right-skewed values: the upper end farther from the mean than the lower
    x = np.array([0.0] * 90 + [1.0] * 10)
    lo, hi = hall_mean_interval(x.size, x.sum(), (x ** 2).sum(), (x ** 3).sum(), 0.95)
    assert hi - 0.1 > 0.1 - lo > 0
    assert np.isnan(hall_mean_interval(1, 1.0, 1.0, 1.0, 0.95)[0])
    assert hall_mean_interval(3, 3.0, 3.0, 3.0, 0.95) == (1.0, 1.0)
