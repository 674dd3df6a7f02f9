"""Edge cases of the interval methods in modelgate/intervals.py (BCa, bootstrap-t, logit-scale
Wald), each against a value worked out by hand from the method's formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from modelgate.intervals import bca_interval, logit_wald_interval, percentile_interval, studentized_interval

REPLICATES = np.arange(1.0, 101.0)  # 100 replicates, median 50.5: no bias correction at 50.5


def test_bca_with_a_constant_jackknife_has_no_acceleration() -> None:
    # every leave-one-out value equal: acceleration 0, so with z0 = 0 BCa is the percentile interval
    got = bca_interval(REPLICATES, 50.5, np.full(4, 3.0), np.ones(4), 0.9)
    assert got == pytest.approx(percentile_interval(REPLICATES, 0.9), abs=1e-12)


def test_bca_end_goes_to_the_extreme_replicate_when_one_minus_a_z_is_not_positive() -> None:
    # jackknife (0, 0, 100) with weights 1e-4: a = sum w u^3 / (6 (sum w u^2)^1.5), by hand
    w, t = np.full(3, 1e-4), np.array([0.0, 0.0, 100.0])
    u = (w * t).sum() / w.sum() - t
    a = (w * u**3).sum() / (6.0 * (w * u**2).sum() ** 1.5)
    assert a < -1.0 / 1.96  # so 1 - a z < 0 at the lower end (z = -1.645 at 90 %)
    lower, upper = bca_interval(REPLICATES, 50.5, t, w, 0.9)
    assert lower == REPLICATES.min()  # 1 - a z <= 0 with z < 0: level 0
    z = ndtri(0.95)
    assert upper == pytest.approx(np.quantile(REPLICATES, ndtr(z / (1.0 - a * z))), abs=1e-9)


def test_bootstrap_t_counts_a_zero_se_resample_at_the_point_as_t_zero() -> None:
    # resample 0 equals the point with se 0: t = 0 (not 0/0); the others give t = -2..2 by 0.5
    theta = np.r_[10.0, 10.0 + 0.5 * np.arange(-4, 5)]
    se = np.r_[0.0, np.ones(9)]
    t = np.r_[0.0, 0.5 * np.arange(-4, 5)]
    t_low, t_high = np.quantile(t, [0.25, 0.75])
    got = studentized_interval(10.0, 2.0, theta, se, 0.5)
    assert got == pytest.approx((10.0 - 2.0 * t_high, 10.0 - 2.0 * t_low), abs=1e-12)


@pytest.mark.parametrize("auc", [0.7, 0.9, 0.1, 0.123])
def test_logit_wald_with_zero_variance_is_the_point_itself(auc: float) -> None:
    # all scores tied within each class: nothing can move the AUC; exactly the point, no round trip
    assert logit_wald_interval(auc, 0.0, 10, 10, 0.95) == (auc, auc)
