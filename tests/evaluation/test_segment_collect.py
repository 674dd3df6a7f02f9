"""Every segment collected in one pass equals ``collect`` on the segment's rows, field for field
and bit for bit (ties, unused codes, the bootstrap table cut to fit, the grid fallback); with few
distinct scores the cells' loss sums are added in row order one by one rather than pairwise,
so they agree to rounding."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from modelgate.evaluation import segment_collect
from modelgate.evaluation.segment_collect import batch_rows, collect_by_code
from modelgate.evaluation.sufficient import collect


def _same(a: object, b: object, name: str = "", rounded: bool = False) -> bool:
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name), f.name,
                                                rounded) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray):
        if rounded and name == "loss_sums":
            return isinstance(b, np.ndarray) and np.allclose(a, b, rtol=1e-12, atol=1e-13)
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
        assert _same(stats, want, rounded=decimals is not None), k
