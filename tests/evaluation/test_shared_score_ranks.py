"""One ranking of a batch's scores (fairness.group_scores.rank_scores) shared by the statistics.

Counting rows per distinct score from the shared ranks must give what sorting the rows gives,
to the last bit: the group score tables and the evaluation statistics (score tables,
bootstrap cells, loss sums) with ``ranks`` against the same calls without.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from modelgate.evaluation.sufficient import collect
from modelgate.fairness.disaggregate import encode_groups
from modelgate.fairness.group_scores import group_score_table_from_codes, rank_scores


def _same(a: Any, b: Any, path: str = "result") -> None:
    """Equal to the last bit: arrays by dtype, shape and bytes; dataclasses field by field.

    A score table's key for the scores -0.0 and 0.0 (one cell) is 0.0 from the ranks and
    either zero from ``np.unique``: zeros are compared without their sign."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), path
        for field in dataclasses.fields(a):
            _same(getattr(a, field.name), getattr(b, field.name), f"{path}.{field.name}")
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), path
        if a.dtype.kind == "f":
            a, b = a + 0.0, b + 0.0
        assert a.tobytes() == b.tobytes(), path
    elif isinstance(a, tuple):
        assert len(a) == len(b), path
        for i, (x, z) in enumerate(zip(a, b, strict=True)):
            _same(x, z, f"{path}[{i}]")
    else:
        assert a == b or (a != a and b != b), (path, a, b)


def _scores(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if kind == "repeating":  # a tabular model's few thousand distinct scores
        return rng.choice(rng.uniform(size=800), size=n)
    if kind == "continuous":  # all distinct: more cells than rows, the sort is kept
        return rng.uniform(size=n)
    # ties at 0, 1, the threshold and -0.0
    return rng.choice(np.array([0.0, -0.0, 0.5, 1.0, 0.25, 0.75]), size=n)


def test_rank_scores_is_np_unique() -> None:
    s = np.random.default_rng(1).choice([0.3, 0.1, 0.9, 0.1, -0.0, 0.0], size=500)
    ranks = rank_scores(s)
    keys, inverse = np.unique(s, return_inverse=True)
    np.testing.assert_array_equal(ranks.keys, keys)
    np.testing.assert_array_equal(ranks.rank, inverse)
    assert not np.signbit(ranks.keys).any()
    with pytest.raises(ValueError, match="NaN"):
        rank_scores([0.2, float("nan")])


@pytest.mark.parametrize("kind", ["repeating", "continuous", "ties"])
@pytest.mark.parametrize("n_groups", [1, 3, 40])
def test_group_tables_from_ranks_equal_the_sorted_ones(kind: str, n_groups: int) -> None:
    rng = np.random.default_rng(n_groups)
    n = 5_000
    s = _scores(kind, rng, n)
    y = (rng.uniform(size=n) < s).astype(np.int8)
    labels, codes = encode_groups(rng.integers(0, n_groups, size=n).astype(str))
    ranks = rank_scores(s)
    for max_distinct in (1 << 22, 500):  # exact, and pooled on a grid
        _same(group_score_table_from_codes("g", y, s, labels, codes, max_distinct=max_distinct,
                                           ranks=ranks),
              group_score_table_from_codes("g", y, s, labels, codes, max_distinct=max_distinct))


@pytest.mark.parametrize("kind", ["repeating", "continuous", "ties"])
@pytest.mark.parametrize("champion", [False, True], ids=["alone", "with champion"])
def test_statistics_from_ranks_equal_the_sorted_ones(kind: str, champion: bool) -> None:
    rng = np.random.default_rng(7)
    n = 5_000
    s = _scores(kind, rng, n)
    y = (rng.uniform(size=n) < s).astype(np.int8)
    groups = {"g": encode_groups(rng.choice(["a", "b", "c"], size=n))}
    other = dict(champion_score=np.clip(s + rng.normal(0, 0.05, n), 0, 1),
                 champion_threshold=0.4) if champion else {}
    for max_cells in (1 << 15, 64):
        _same(collect(y, s, threshold=0.5, groups=groups, max_cells=max_cells,
                      ranks=rank_scores(s), **other),
              collect(y, s, threshold=0.5, groups=groups, max_cells=max_cells, **other))


def test_ranks_of_other_rows_are_refused() -> None:
    s = np.array([0.2, 0.4, 0.6])
    with pytest.raises(ValueError, match="ranks"):
        collect([0, 1, 1], s, threshold=0.5, ranks=rank_scores(s[:2]))
    with pytest.raises(ValueError, match="ranks"):
        group_score_table_from_codes("g", [0, 1, 1], s, ("a",), [0, 0, 0],
                                     ranks=rank_scores(s[:2]))
