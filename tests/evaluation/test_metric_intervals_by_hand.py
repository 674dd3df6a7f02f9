"""Small direct cases of ``evaluation/metric_intervals.py``, expected values by hand or by the
textbook bootstrap-t of ``binary_oracles`` (the module's mutation survivors, tests/MUTATION.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from modelgate.evaluation.metric_intervals import (
    difference_part_moments,
    log_loss_delta_interval,
    paired_delta_interval,
    per_metric_interval,
)
from support.binary_oracles import LOSS_MAX, bootstrap_t, wilson
from support.row_bootstrap import row_resamples

# Accuracy 0.9 vs 0.8 on 100 rows, 75 right by both (the docstring's case): Wilson intervals
# rounded, phi of (75, 15, 5, 5) = (75 * 5 - 15 * 5) / sqrt(90 * 10 * 80 * 20) = 0.25
ENDS = ((0.8256, 0.9448), (0.7112, 0.8666))
CORRECT = (75, 15, 5, 5)
DRAWS = (np.array([0.91, 0.88]), np.array([0.8, 0.81]))  # their correlation is -1


def test_an_accuracy_name_built_at_run_time_gets_the_wilson_interval() -> None:
    name = "".join(["accu", "racy"])  # equal to "accuracy" but not the same object
    draws = {name: np.array([0.75])}
    got = per_metric_interval(name, 0.75, draws, draws, 3, 4, 2, 0.1, 0.95)
    assert got == pytest.approx(wilson(0.75, 4), abs=1e-12)


def test_an_accuracy_name_built_at_run_time_gets_newcombe_s_phi() -> None:
    name = "".join(["accu", "racy"])  # equal to "accuracy" but not the same object
    lo, hi = paired_delta_interval(name, (0.9, 0.8), ENDS, DRAWS, CORRECT)
    # MOVER with r = 0.25: below 0.9 - 0.8256 = 0.0744, above 0.8666 - 0.8 = 0.0666, ...
    assert lo == pytest.approx(0.1 - np.sqrt(0.0744**2 + 0.0666**2 - 2 * 0.25 * 0.0744 * 0.0666),
                               abs=1e-12)
    # ... and above 0.9448 - 0.9 = 0.0448, below 0.8 - 0.7112 = 0.0888
    assert hi == pytest.approx(0.1 + np.sqrt(0.0448**2 + 0.0888**2 - 2 * 0.25 * 0.0448 * 0.0888),
                               abs=1e-12)


def test_paired_delta_takes_the_data_by_position_or_keyword_and_the_log_loss_delta_by_keyword(
) -> None:
    got = paired_delta_interval(name="log_loss", points=(0.9, 0.8), own=ENDS, resampled=DRAWS,
                                correct=CORRECT, log_loss_delta=(0.05, 0.2))
    assert got == (0.05, 0.2)
    with pytest.raises(TypeError):
        paired_delta_interval("log_loss", (0.9, 0.8), ENDS, DRAWS, CORRECT,  # type: ignore[misc]
                              (0.05, 0.2))


def test_auc_delta_with_one_model_s_resamples_constant_takes_r_0_without_a_warning() -> None:
    # the candidate's resampled AUC is the same on every resample: no correlation to read
    # (np.corrcoef would divide by a zero spread), MOVER with r = 0:
    # 0.1 -+ sqrt(0.1**2 + 0.1**2) from symmetric half-widths 0.1 and 0.1 (0.75 is exact
    # in binary, so the spread of the constant draws is exactly 0)
    draws = (np.full(3, 0.75), np.array([0.6, 0.7, 0.65]))
    for new, old in (draws, draws[::-1]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lo, hi = paired_delta_interval("roc_auc", (0.75, 0.65), ((0.65, 0.85), (0.55, 0.75)),
                                           (new, old), CORRECT)
        assert (lo, hi) == pytest.approx((0.1 - np.sqrt(0.02), 0.1 + np.sqrt(0.02)), abs=1e-12)


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["champion-better", "candidate-better"])
@pytest.mark.parametrize(("part", "resamples"), [
    ([0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 0.3, 0.15], 300),
    ([0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 0.3, 0.15], 1),
    # one row apart, skewed: the part's bootstrap-t lower end is below 0, clipped to 0
    ([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0], 300),
], ids=["spread", "one-resample", "one-row-apart"])
def test_a_one_sided_loss_difference_is_its_part_s_bootstrap_t_without_a_warning(
        sign: float, part: list[float], resamples: int) -> None:
    # d >= 0 on every row (or <= 0): the other part is 0 on every row, its interval [0, 0],
    # so MOVER gives the varying part's own interval (negated and reversed for d <= 0)
    d = sign * np.array(part)
    idx = row_resamples(len(d), resamples, seed=11)
    counts = np.stack([np.bincount(i, minlength=len(d)) for i in idx]).astype(float)
    lower, upper = bootstrap_t(np.abs(d), idx, upper=LOSS_MAX)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = log_loss_delta_interval(difference_part_moments(d, np.ones((1, len(d)))),
                                      difference_part_moments(d, counts), len(d), 0.95)
    expected = (lower, upper) if sign > 0 else (-upper, -lower)
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("new", "old"), [
    # the second resample is NaN for the candidate only: left out, the other three have the
    # champion's AUC 0.6, 0.7, 0.5 against 0.75, 0.8, 0.7, a line of slope 2: r = 1
    ([0.75, np.nan, 0.8, 0.7], [0.6, 0.7, 0.7, 0.5]),
    # two resamples: two points lie on a line, r = 1 (here rising)
    ([0.75, 0.8], [0.6, 0.7]),
    # the candidate twice the champion on every resample: the ratio is the same, the
    # difference is not (0.4, 0.3), so MOVER applies; two points, r = 1
    ([0.8, 0.6], [0.4, 0.3]),
], ids=["a-nan-of-one-model-left-out", "two-resamples", "a-constant-ratio"])
def test_auc_delta_reads_the_correlation_on_resamples_finite_for_both_models(
        new: list[float], old: list[float]) -> None:
    # MOVER with r = 1 from half-widths 0.1 and 0.05: 0.1 -+ sqrt(0.1**2 + 0.05**2 - 2 * 0.1 * 0.05)
    lo, hi = paired_delta_interval("roc_auc", (0.75, 0.65), ((0.65, 0.85), (0.6, 0.7)),
                                   (np.array(new), np.array(old)), CORRECT)
    assert (lo, hi) == pytest.approx((0.05, 0.15), abs=1e-12)


@pytest.mark.parametrize("name", ["roc_auc", "accuracy", "log_loss"])
def test_paired_delta_without_resamples_has_nan_ends(name: str) -> None:
    got = paired_delta_interval(name, (0.9, 0.8), ENDS, (np.empty(0), np.empty(0)), CORRECT,
                                log_loss_delta=(0.05, 0.2))
    assert got is not None and np.isnan(got[0]) and np.isnan(got[1])


def test_a_metric_without_a_delta_method_gets_none_for_the_percentile_interval() -> None:
    assert paired_delta_interval("brier", (0.9, 0.8), ENDS, DRAWS, CORRECT) is None
    assert paired_delta_interval("accuracy", (0.9, 0.8), (None, ENDS[1]), DRAWS, CORRECT) is None
    assert paired_delta_interval("accuracy", (0.9, 0.8), (ENDS[0], None), DRAWS, CORRECT) is None


def test_own_intervals_skip_a_non_finite_metric_and_go_on() -> None:
    from modelgate.evaluation.metric_intervals import own_intervals

    none = {"accuracy": np.empty(0), "f1": np.empty(0)}
    got = own_intervals({"f1": float("nan"), "accuracy": 0.5}, none, none, 1, 2, 1, 0.1, 0.95)
    assert list(got) == ["accuracy"] and np.isnan(got["accuracy"]).all()  # type: ignore[arg-type]


def test_a_log_loss_name_built_at_run_time_gets_the_log_loss_delta() -> None:
    name = "".join(["log", "_", "loss"])  # equal to "log_loss" but not the same object
    got = paired_delta_interval(name, (0.9, 0.8), ENDS, DRAWS, CORRECT, log_loss_delta=(0.05, 0.2))
    assert got == (0.05, 0.2)


def test_a_constant_part_has_a_squared_standard_error_of_exactly_0() -> None:
    # 0.1 on three rows, a constant: variance 0; the mean of squares minus the square of
    # the mean rounds to -1.7e-18 here, which must be floored at 0 (its root is taken)
    moments = difference_part_moments([0.1, 0.1, 0.1], np.ones((1, 3)))
    assert moments["up_var"][0] == 0.0
    assert moments["down"][0] == moments["down_var"][0] == 0.0
    assert moments["up"][0] == pytest.approx(0.1, abs=1e-15)
