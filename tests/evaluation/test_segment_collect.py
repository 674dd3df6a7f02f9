"""Every segment collected in one pass equals ``collect`` on the segment's rows, field for field
and bit for bit (ties, unused codes, the grid fallback), but for the bootstrap cells: none while
the segment's score table is exact; on the grid fallback ``collect``'s cells (cut to fit), whose
loss sums (``count x loss``, not the rows added) agree to rounding."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest
from modelgate.evaluation import segment_collect
from modelgate.evaluation.segment_collect import batch_rows, cells_from_scores, collect_by_code
from modelgate.evaluation.sufficient import collect, to_grid


def _same(a: object, b: object, name: str = "", rounded: bool = False) -> bool:
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name), f.name,
                                                rounded) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray):
        if rounded and name == "loss_sums":
            return isinstance(b, np.ndarray) and np.allclose(a, b, rtol=1e-12, atol=1e-12)
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize(("decimals", "max_cells", "max_distinct"),
                         [(2, 1 << 15, 1 << 22), (None, 1 << 15, 1 << 22), (None, 64, 1 << 22),
                          (None, 1 << 15, 100), (3, 16, 50)])
def test_each_segment_is_collect_on_its_rows(decimals: int | None, max_cells: int,
                                             max_distinct: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # continuous scores take the sorted tables: more distinct scores than FEW_SCORES
    monkeypatch.setattr(segment_collect, "FEW_SCORES", 2000)
    rng = np.random.default_rng(7)
    n = 4000
    y = (rng.random(n) < 0.3).astype(np.int8)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    s = s if decimals is None else np.round(s, decimals)
    codes = rng.choice([0, 1, 2, 4, 6], n, p=[0.5, 0.3, 0.15, 0.049, 0.001])  # 3, 5 unused
    rows = batch_rows(y, s, 0.5, max_cells=max_cells, max_distinct=max_distinct)
    got = collect_by_code(rows, codes, 7, max_cells=max_cells, max_distinct=max_distinct)
    assert (rows.rank is not None) == (decimals is not None)  # counted, or sorted
    assert sorted(got) == sorted(set(codes.tolist()))
    for k, stats in got.items():
        want = collect(y[codes == k], s[codes == k], threshold=0.5, max_cells=max_cells,
                       max_distinct=max_distinct)
        assert _same(replace(stats, bootstrap=want.bootstrap), want), k
        if stats.candidate.scores.grid:  # the scores are lost: the cells stay
            assert _same(stats.bootstrap, want.bootstrap, rounded=True), k
        else:
            assert stats.bootstrap.counts.size == 0, k


def test_cells_from_scores_are_collects_cells() -> None:
    rng = np.random.default_rng(11)
    y = (rng.random(3000) < 0.4).astype(np.int8)
    s = np.round(rng.beta(2, 3, 3000), 3)
    s[:5] = [0.0, 1.0, 0.5, 1e-300, 1.0 - 1e-17]  # clipped log losses, the threshold itself
    want = collect(y, s, threshold=0.5)
    got = cells_from_scores(want.candidate.scores, 0.5)
    assert _same(got, want.bootstrap, rounded=True)
    with pytest.raises(ValueError, match="exact score table"):
        cells_from_scores(to_grid(want.candidate.scores), 0.5)
