"""Count tables drawn from given uniforms (fairness/count_draws.py): the tables with a fixed
total against the multivariate hypergeometric law written out with binomial coefficients, and
against scipy's hypergeometric distribution function at larger counts."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from modelgate.fairness.count_draws import equal_rates_draws, fixed_uniforms
from scipy.stats import hypergeom


def test_tables_with_the_total_follow_the_multivariate_hypergeometric_law() -> None:
    """Six successes among 4, 5 and 6 trials: each table's share of 200,000 draws within four
    standard errors of ``C(4, a) C(5, b) C(6, c) / C(15, 6)``, and every table sums to 6."""
    draws = 200_000
    got = equal_rates_draws(np.random.default_rng(1).random((draws, 3)), [3, 1, 2], [4, 5, 6])
    assert (got.sum(axis=1) == 6).all()
    seen = Counter(map(tuple, got.astype(int).tolist()))
    tables = [t for t in itertools.product(range(5), range(6), range(7)) if sum(t) == 6]
    assert set(seen) <= set(tables)
    for a, b, c in tables:
        p = math.comb(4, a) * math.comb(5, b) * math.comb(6, c) / math.comb(15, 6)
        assert seen[(a, b, c)] / draws == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / draws)), (a, b, c)


def test_each_group_takes_its_hypergeometric_quantile_given_what_is_left() -> None:
    """Ten groups of 400 trials with 1,000 successes: the first group's count is scipy's
    hypergeometric quantile at its uniform, and the second's given what the first left."""
    u = fixed_uniforms(10, 2048)
    got = equal_rates_draws(u, [100] * 10, [400] * 10)
    assert (got.sum(axis=1) == 1000).all()
    first = hypergeom.ppf(u[:, 0], 4000, 1000, 400)
    assert np.array_equal(got[:, 0], first)
    second = hypergeom.ppf(u[:, 1], 3600, 1000 - first, 400)
    assert np.array_equal(got[:, 1], second)


def test_a_group_without_trials_draws_0_and_the_same_uniforms_give_the_same_tables() -> None:
    u = fixed_uniforms(3, 2048)
    got = equal_rates_draws(u, [2, 0, 3], [5, 0, 4])
    assert (got[:, 1] == 0).all() and (got.sum(axis=1) == 5).all()
    assert np.array_equal(got, equal_rates_draws(u, [2, 0, 3], [5, 0, 4]))
    assert (equal_rates_draws(u, [0, 0, 0], [5, 1, 4]) == 0).all()
    assert (equal_rates_draws(u, [5, 1, 4], [5, 1, 4]) == [5, 1, 4]).all()


def test_importing_the_gap_intervals_leaves_scipy_stats_unloaded() -> None:
    """scipy.stats costs about half a second to import; the draws load it when they run."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, modelgate.fairness.gap_intervals; "
                               "print('scipy.stats' in sys.modules)"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False"
