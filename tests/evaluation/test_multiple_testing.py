"""Adjusted p-values against statsmodels' multipletests, the outside implementation."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.multiple_testing import adjusted_p_values
from statsmodels.stats.multitest import multipletests

_STATSMODELS = {"bh": "fdr_bh", "by": "fdr_by", "holm": "holm"}


@pytest.mark.parametrize("correction", sorted(_STATSMODELS))
@pytest.mark.parametrize("seed", range(4))
def test_equal_to_statsmodels(correction: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 1, 40), rng.uniform(0, 0.01, 10)])
    p[:5] = p[5]  # ties
    p[6] = 1.0
    p[7] = 0.0
    rng.shuffle(p)
    expected = multipletests(p, method=_STATSMODELS[correction])[1]
    np.testing.assert_allclose(adjusted_p_values(p, correction), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("correction", sorted(_STATSMODELS))
def test_nan_is_a_test_not_made(correction: str) -> None:
    p = np.array([0.04, np.nan, 0.001, 0.3, np.nan])
    made = ~np.isnan(p)
    out = adjusted_p_values(p, correction)
    assert np.isnan(out[~made]).all()
    np.testing.assert_allclose(out[made], multipletests(p[made], method=_STATSMODELS[correction])[1])


def test_hand_worked_bh() -> None:
    # sorted 0.01, 0.03, 0.04, 0.2 (m = 4): 4 p / rank = 0.04, 0.06, 0.0533, 0.2 -> step-up minimum
    assert adjusted_p_values([0.04, 0.01, 0.2, 0.03]).tolist() == pytest.approx(
        [0.16 / 3, 0.04, 0.2, 0.16 / 3])


def test_empty_and_errors() -> None:
    assert adjusted_p_values([], "holm").size == 0
    with pytest.raises(ValueError, match="correction must be one of bh, by, holm; got 'bonf'"):
        adjusted_p_values([0.1], "bonf")
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        adjusted_p_values([1.5])
    with pytest.raises(ValueError, match="one-dimensional"):
        adjusted_p_values([[0.1]])
