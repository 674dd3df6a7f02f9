"""performance_from_statistics: the AUC error bound with three positives, and how the
bootstrap draws are held in memory (chunks of at most ``_CHUNK_ELEMENTS`` values).

Oracles: the error bound by hand and attained (scikit-learn's AUC on the exact scores minus
that on the grid cells); the chunks by hand from the documented budget (``B x cells``
float64 values at once, 2**22 of them = 32 MiB by default, at least one resample a chunk, as
``modelgate.intervals`` does for its indices), observed with a spy on the per-chunk
replicate function, and the drawn rows against this test's own
``np.random.default_rng(seed).multinomial`` call.
"""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation import performance
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect
from sklearn import metrics as skm

GRID_STEP = 2.0**-20  # the score table's fallback grid (sufficient.FALLBACK_GRID)


def test_the_error_bound_with_three_positives_is_the_tied_pairs_over_twice_the_pairs() -> None:
    """One grid cell holds a positive and a negative (ordered right on the exact scores), of 3
    positives and 2 negatives: the bound is 1 tied pair / (2 x 3 x 2) = 1/12 (by hand), and it
    is attained: scikit-learn's AUC on the exact scores (1) minus that on the grid (11/12)."""
    y = np.array([1, 0, 1, 1, 0])
    s = np.array([0.5 + 0.75 * GRID_STEP, 0.5 + 0.25 * GRID_STEP, 0.9, 0.8, 0.1])
    stats = collect(y, s, threshold=0.5, max_distinct=1)
    assert stats.candidate.scores.grid == round(1 / GRID_STEP)
    summary = performance_from_statistics(stats, n_bootstrap=0)
    exact, on_grid = skm.roc_auc_score(y, s), skm.roc_auc_score(y, np.floor(s / GRID_STEP))
    assert (exact, on_grid) == pytest.approx((1.0, 11 / 12), rel=1e-12)
    assert summary.candidate.by_name()["roc_auc"].value == pytest.approx(on_grid, rel=1e-12)
    assert summary.auc_error_bound == pytest.approx(1 / 12, rel=1e-12)
    assert summary.auc_error_bound == pytest.approx(exact - on_grid, rel=1e-12)


# ------------------------------------------------------------------ the draws' chunks


class _Enough(Exception):
    """Raised by the spy once it has seen what the test needs."""


def _spy_on_the_draws(monkeypatch: pytest.MonkeyPatch, stop_after: int | None = None
                      ) -> list[np.ndarray]:
    """Record the counts each call of the replicate function gets (first the table's own
    counts, one row per model, then each chunk of draws); raise :class:`_Enough` after
    ``stop_after`` calls."""
    seen: list[np.ndarray] = []
    real = performance.replicate_metrics

    def spy(draws: np.ndarray, *args: object) -> dict[str, np.ndarray]:
        seen.append(draws.copy())
        if stop_after is not None and len(seen) >= stop_after:
            raise _Enough
        return real(draws, *args)

    monkeypatch.setattr(performance, "replicate_metrics", spy)
    return seen


Y = np.array([0, 1, 1, 0, 1, 0, 1, 0])
S = np.array([0.2, 0.9, 0.4, 0.45, 0.55, 0.6, 0.8, 0.1])  # 8 distinct scores: 8 cells


@pytest.mark.parametrize(("elements", "chunks"), [
    (16, [2, 2, 1]),       # 16 values / 8 cells: 2 resamples a chunk
    (40, [5]),             # 5 resamples a chunk: all 5 at once
    (20, [2, 2, 1]),       # 20 // 8 = 2 (never more values than the budget)
    (1, [1, 1, 1, 1, 1]),  # fewer values than a resample holds: one resample a chunk
], ids=["two-a-chunk", "one-chunk", "budget-not-a-multiple", "one-resample-a-chunk"])
def test_draws_are_taken_in_the_largest_chunks_the_budget_allows(
        monkeypatch: pytest.MonkeyPatch, elements: int, chunks: list[int]) -> None:
    """Each chunk of draws holds at most ``_CHUNK_ELEMENTS`` values (``resamples x cells``),
    one resample at least, in as few chunks as that allows (sizes by hand), and the chunks
    are the rows of one multinomial call of this test's own generator, in order."""
    stats = collect(Y, S, threshold=0.5)
    counts = stats.bootstrap.counts
    assert len(counts) == 8
    monkeypatch.setattr(performance, "_CHUNK_ELEMENTS", elements)
    seen = _spy_on_the_draws(monkeypatch)
    performance_from_statistics(stats, n_bootstrap=5, seed=3, interval="percentile")
    own, *drawn = seen
    assert own.tolist() == [counts.tolist()]
    assert [d.shape for d in drawn] == [(k, 8) for k in chunks]
    expected = np.random.default_rng(3).multinomial(8, counts / 8, size=5)
    assert np.concatenate(drawn).tolist() == expected.tolist()


def test_the_default_chunk_holds_2_to_the_22_values_32_mib_of_float64(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """By default a chunk holds 2**22 drawn counts (32 MiB as float64, the budget of
    ``modelgate.intervals``): with 2 cells, 2**21 resamples, and one more resample needs a
    second chunk.  The spy stops the run at the first chunk (its draws are the costly part)."""
    stats = collect([0, 1], [0.3, 0.7], threshold=0.5)
    assert len(stats.bootstrap.counts) == 2
    seen = _spy_on_the_draws(monkeypatch, stop_after=2)
    with pytest.raises(_Enough):
        performance_from_statistics(stats, n_bootstrap=2**21 + 1, seed=0, interval="percentile")
    assert [d.shape for d in seen] == [(1, 2), (2**21, 2)]
