"""Binary metrics (``evaluation/metrics.py``) on tiny cases worked here: the studentized
log-loss interval's inputs, undefined metrics' reasons, refusals, symmetry of the paired
accuracy interval, one calibration bin."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation import metrics
from modelgate.evaluation.calibration import calibration_table
from modelgate.evaluation.metrics import compare, evaluate
from sklearn import metrics as skm
from support.binary_oracles import LOSS_MAX, bootstrap_t, newcombe_method_10, row_log_losses

from modelgate.intervals import bootstrap_indices

LOSS_CASES = {
    # one positive scored 1e-20 (its loss clipped at -log(eps) = 36.04): the losses'
    # variance (about 180) is far above n - 1
    "extreme-loss": ([1, 0, 0, 1, 0, 1], [1e-20, 0.2, 0.4, 0.7, 0.1, 0.9]),
    # two rows: n - 1 = 1, and half the resamples draw one row twice (standard error 0)
    "two-rows": ([1, 0], [0.3, 0.6]),
    # a resample drawing the first row thrice has 3 x^2 / 3 - (3 x / 3)^2 = -1.8e-15 for its
    # loss x = -log(0.06357): the variance is floored at 0, its standard error 0
    "rounding-below-zero": ([1, 0, 1], [0.0635678391959799, 0.5, 0.8]),
}


@pytest.mark.parametrize("case", LOSS_CASES)
def test_log_loss_interval_is_the_bootstrap_t_of_the_row_losses(case: str) -> None:
    """The log loss's interval is the textbook bootstrap-t of the mean row loss
    (``binary_oracles.bootstrap_t``, each resample's standard error ``std(ddof=1) / sqrt(n)``
    from its rows). The resamples are those of ``bootstrap_indices`` for the seed, so the
    comparison is exact; the resampler itself is tested in tests/intervals/test_intervals.py."""
    y, s = map(np.asarray, LOSS_CASES[case])
    loss = row_log_losses(y, s)
    if case == "extreme-loss":
        assert loss.var() > len(y) - 1
    got = evaluate(y, s, n_bootstrap=60, seed=5).by_name()["log_loss"]
    idx = np.vstack(list(bootstrap_indices(len(y), n_bootstrap=60, seed=5)))
    # no mean of row losses exceeds one row's largest, -log(eps) (the clipped probability)
    expected = bootstrap_t(loss, idx, upper=LOSS_MAX)
    if case == "extreme-loss":  # the bootstrap-t's own end was 888, past any possible loss
        assert expected[1] == pytest.approx(36.04365, abs=1e-5)
    if case == "two-rows":  # half the resamples without spread: the range, 0 to LOSS_MAX
        assert expected == (0.0, LOSS_MAX)
    assert got.value == pytest.approx(loss.mean(), rel=1e-12)
    assert (got.ci_lower, got.ci_upper) == (pytest.approx(expected[0], rel=1e-9),
                                            pytest.approx(expected[1], rel=1e-9))


def test_no_positive_label_and_no_predicted_positive_name_their_reasons() -> None:
    """Labels all 0 and every score below the threshold: AUC, recall, precision and F1 are
    undefined, each with its own reason."""
    m = evaluate([0, 0, 0], [0.1, 0.2, 0.3], n_bootstrap=0).by_name()
    assert m["roc_auc"].undefined_reason == "label has one class only"
    assert m["recall"].undefined_reason == "no positive labels"
    assert m["precision"].undefined_reason == "no predicted positives at this threshold"
    assert m["f1"].undefined_reason == "no positive labels and no predicted positives"
    assert m["accuracy"].value == 1.0 and m["accuracy"].undefined_reason is None


def test_bad_labels_are_listed_in_the_message() -> None:
    with pytest.raises(ValueError, match=r"found array\(\[-1,\s+2\]\)"):
        evaluate([0, 1, -1, 2], [0.1, 0.2, 0.3, 0.4])


def test_a_score_longer_than_the_labels_is_refused() -> None:
    with pytest.raises(ValueError, match=r"score must have the length of y_true \(2\); got 3"):
        evaluate([0, 1], [0.1, 0.2, 0.3])


def test_one_calibration_bin_holds_every_row() -> None:
    table = calibration_table([0, 1, 1], [0.2, 0.9, 0.4], n_bins=1)
    ((b,),) = (table.bins,)
    assert (b.lower, b.upper, b.n) == (0.0, 1.0, 3)
    assert b.mean_predicted == pytest.approx(0.5) and b.observed_rate == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="n_bins"):
        calibration_table([0, 1], [0.2, 0.9], n_bins=0)


def _two_models(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, a candidate and a weaker champion, 60 rows; both have false negatives and
    false positives."""
    rng = np.random.default_rng(seed)
    y = (rng.random(60) < 0.5).astype(int)
    a = np.clip(0.5 * y + rng.normal(0.25, 0.25, 60), 0.0, 1.0)
    b = np.clip(0.3 * y + rng.normal(0.35, 0.3, 60), 0.0, 1.0)
    return y, a, b


def test_the_paired_accuracy_interval_is_antisymmetric_in_the_two_models() -> None:
    """Swapping candidate and champion negates the accuracy delta and its interval: the
    2 x 2 table of rows each model gets right swaps its off-diagonal, which the interval's
    correlation and Wilson ends do not see. Both models have false negatives and false
    positives here, so a table that miscounts one model's rows breaks the symmetry."""
    y, a, b = _two_models(8)
    ab = compare(a, b, y, n_bootstrap=200, seed=1).by_name()["accuracy"]
    ba = compare(b, a, y, n_bootstrap=200, seed=1).by_name()["accuracy"]
    assert ab.delta == pytest.approx(-ba.delta, abs=1e-12) and ab.delta != 0
    assert ab.ci_lower == pytest.approx(-ba.ci_upper, abs=1e-12)
    assert ab.ci_upper == pytest.approx(-ba.ci_lower, abs=1e-12)


def test_compare_accuracy_delta_is_newcombe_s_method_10() -> None:
    """The accuracy delta of ``compare`` (per-metric intervals, the default) against
    Newcombe's method 10 by its formulas (``binary_oracles``): Wilson intervals of each
    model's accuracy, combined with the phi coefficient of the 2 x 2 table of rows each gets
    right."""
    y, a, b = _two_models(10)
    got = compare(a, b, y, n_bootstrap=50, seed=1).by_name()["accuracy"]
    new, old = (a >= 0.5) == y, (b >= 0.5) == y
    assert min(np.sum(new & old), np.sum(new & ~old), np.sum(~new & old), np.sum(~new & ~old)) > 0
    difference, lower, upper = newcombe_method_10(new, old)
    assert got.delta == pytest.approx(difference, abs=1e-12)
    assert (got.ci_lower, got.ci_upper) == pytest.approx((lower, upper), abs=1e-12)


def test_options_spelled_at_run_time_are_read_by_value() -> None:
    """Strings built at run time (as read from a policy file) are not the literals'
    objects: they must be compared by value."""
    y, s = [0, 1, 1, 0, 1, 0], [0.1, 0.8, 0.6, 0.4, 0.9, 0.3]
    per_metric = "".join(["per_", "metric"])
    literal = "per_metric"
    assert per_metric is not literal
    assert evaluate(y, s, n_bootstrap=30, interval=per_metric).metrics == evaluate(
        y, s, n_bootstrap=30, interval="per_metric").metrics
    for strategy in ("uniform", "quantile"):
        spelled = "".join(list(strategy))
        assert spelled is not strategy
        assert calibration_table(y, s, n_bins=2, strategy=spelled) == calibration_table(
            y, s, n_bins=2, strategy=strategy)


def test_a_strategy_sorting_after_uniform_is_refused() -> None:
    with pytest.raises(ValueError, match="strategy must be 'uniform' or 'quantile'; got 'width'"):
        calibration_table([0, 1], [0.2, 0.9], strategy="width")


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(y_true=[0, 1, -1], score=[0.1, 0.2, 0.3]), r"found array\(\[-1\]\)"),
    (dict(y_true=[0, 1], score=[-0.1, 0.5]), r"score must be probabilities in \[0, 1\]"),
    (dict(y_true=[0, 1], score=[0.1, 0.5], seed=-1), "seed must be an integer >= 0"),
    (dict(y_true=1, score=0.5), r"y_true must be one-dimensional; got shape \(\)"),
], ids=["label-minus-one", "negative-score", "negative-seed", "scalars"])
def test_values_just_outside_their_range_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate(**kwargs)


def test_threshold_one_and_precision_without_false_positives() -> None:
    """At threshold 1 only a score of exactly 1 is a predicted positive; with no false
    positive the precision is 1, defined."""
    m = evaluate([0, 1, 1], [0.5, 1.0, 0.9], threshold=1.0, n_bootstrap=0).by_name()
    assert m["precision"].value == 1.0 and m["precision"].undefined_reason is None
    assert m["recall"].value == 0.5


def test_log_loss_of_certain_right_scores_equals_sklearn_exactly() -> None:
    """Scores of exactly 1 and 0 on their own labels: scikit-learn clips them to 1 - eps and
    eps, a loss of 2.2e-16, not 0."""
    y, s = [1, 0, 1], [1.0, 0.0, 1.0]
    got = evaluate(y, s, n_bootstrap=0).by_name()["log_loss"].value
    assert got == skm.log_loss(y, s) and got > 0


def test_defaults_by_value() -> None:
    y, s = [0, 1, 1, 0], [0.2, 0.7, 0.6, 0.1]
    report = evaluate(y, s)
    assert report.n_bootstrap == 1000 and len(report.calibration.bins) == 10
    assert len(calibration_table(y, s).bins) == 10


def test_options_are_keyword_only() -> None:
    y, s = [0, 1, 1, 0], [0.2, 0.7, 0.6, 0.1]
    with pytest.raises(TypeError):
        compare(s, s, y, 0.5)  # type: ignore[misc]
    with pytest.raises(TypeError):
        calibration_table(y, s, 5)  # type: ignore[misc]


def test_a_champion_s_undefined_metric_names_the_champion() -> None:
    """The candidate predicts positives, the champion none: the precision delta is
    undefined because of the champion, and says so."""
    y = [0, 1, 1, 0]
    d = compare([0.2, 0.7, 0.6, 0.1], [0.2, 0.3, 0.4, 0.1], y, n_bootstrap=0).by_name()
    assert d["precision"].undefined_reason == "champion: no predicted positives at this threshold"


def test_each_row_s_log_loss_equals_sklearn_s_of_that_row() -> None:
    """The log-loss delta's parts are built from the row losses: each is scikit-learn's log
    loss of that row alone, a certain right score's 2.2e-16 (clipped at 1 - eps) included."""
    y = np.array([1, 0, 1, 0, 1], dtype=np.int8)
    s = np.array([1.0, 0.0, 0.3, 0.8, 1e-20])
    expected = [skm.log_loss([yi], [si], labels=[0, 1]) for yi, si in zip(y, s, strict=True)]
    assert metrics._row_log_loss(y, s).tolist() == expected
    assert expected[0] > 0 and expected[1] > 0


def test_the_cells_square_each_row_s_log_loss() -> None:
    """The cells sum the row losses and their squares (the log loss's standard error); on
    scores 0 and 1 the cells are (label 0, 0), (0, 1), (1, 0), (1, 1): certain right, certain
    wrong, certain wrong, certain right. A certain right score's square is (2.2e-16)**2, not 0."""
    cells = metrics._cells(np.array([1, 0], dtype=np.int8), np.array([1.0, 0.0]), 0.5)
    right, wrong = (skm.log_loss([1], [p], labels=[0, 1]) for p in (1.0, 0.0))
    assert cells.weights[:, 4].tolist() == [right, wrong, wrong, right]
    assert cells.weights[:, 6].tolist() == [right**2, wrong**2, wrong**2, right**2]
    assert right**2 > 0


@pytest.mark.parametrize(("n_unique", "dtype"), [
    (1, np.int32), (2**30 - 1, np.int32), (2**30 + 1, np.intp), (2**31, np.intp)])
def test_cell_codes_are_int32_only_where_they_fit(n_unique: int, dtype: type) -> None:
    # the largest code is 2 * n_unique - 1
    assert (2 * n_unique - 1 <= np.iinfo(np.int32).max) == (dtype is np.int32)
    assert metrics._cell_dtype(n_unique) is dtype
    assert metrics._cells(np.array([0, 1], dtype=np.int8), np.array([0.2, 0.7]), 0.5).cell.dtype \
        == np.int32


def test_compare_reads_its_interval_option_by_value() -> None:
    y = [0, 1, 1, 0, 1, 0]
    new, old = [0.1, 0.8, 0.6, 0.4, 0.9, 0.3], [0.3, 0.6, 0.4, 0.5, 0.7, 0.2]
    per_metric = "".join(["per_", "metric"])
    literal = "per_metric"
    assert per_metric is not literal
    assert compare(new, old, y, n_bootstrap=30, interval=per_metric).deltas == compare(
        new, old, y, n_bootstrap=30, interval="per_metric").deltas


def test_the_default_seed_is_0() -> None:
    y, s = [0, 1, 1, 0, 1, 0, 1, 0], [0.1, 0.8, 0.6, 0.4, 0.9, 0.3, 0.45, 0.55]
    old = [0.3, 0.6, 0.4, 0.5, 0.7, 0.2, 0.6, 0.4]
    # the intervals (NaN-free here) depend on the resamples, so on the seed
    default, zero, one = (evaluate(y, s, n_bootstrap=30, **kw).metrics
                          for kw in ({}, {"seed": 0}, {"seed": 1}))
    assert default == zero and default != one
    default, zero, one = (compare(s, old, y, n_bootstrap=30, **kw).deltas
                          for kw in ({}, {"seed": 0}, {"seed": 1}))
    assert default == zero and default != one


def test_the_first_three_bad_labels_are_named() -> None:
    with pytest.raises(ValueError) as caught:
        evaluate([0, 5, 2, 4, 3, 1], [0.5] * 6)
    assert str(caught.value) == "y_true must contain only 0 and 1; found array([2, 3, 4])"


@pytest.mark.parametrize("threshold", [True, False, np.True_, "0.5", None])
def test_a_threshold_that_is_not_a_real_number_is_refused(threshold: object) -> None:
    # a bool is a numbers.Real to Python, but not a threshold
    with pytest.raises(ValueError) as caught:
        evaluate([0, 1], [0.2, 0.8], threshold=threshold)  # type: ignore[arg-type]
    assert str(caught.value) == f"threshold must be a number in [0, 1]; got {threshold!r}"


def test_compare_counts_scores_at_either_threshold_as_positive() -> None:
    """Newcombe's interval of the accuracy delta, with scores exactly at the candidate's
    threshold (0.5) and at the champion's own (0.3): a score at its threshold is a positive."""
    y = [1, 0, 1, 0, 1, 0, 1, 0]
    new = [0.5, 0.5, 0.7, 0.2, 0.4, 0.6, 0.9, 0.1]     # predicted 1 1 1 0 0 1 1 0
    old = [0.3, 0.3, 0.2, 0.1, 0.3, 0.5, 0.25, 0.35]   # predicted 1 1 0 0 1 1 0 1
    new_right = np.array([1, 0, 1, 1, 0, 0, 1, 1], dtype=bool)
    old_right = np.array([1, 0, 0, 1, 1, 0, 0, 0], dtype=bool)
    got = compare(new, old, y, threshold=0.5, champion_threshold=0.3,
                  n_bootstrap=20).by_name()["accuracy"]
    difference, lower, upper = newcombe_method_10(new_right, old_right)
    assert difference == pytest.approx(5 / 8 - 3 / 8)
    assert got.delta == pytest.approx(difference, abs=1e-12)
    assert (got.ci_lower, got.ci_upper) == pytest.approx((lower, upper), abs=1e-12)


def test_compare_draws_1000_resamples_by_default() -> None:
    assert compare([0.2, 0.8], [0.3, 0.6], [0, 1]).n_bootstrap == 1000


def test_paired_deltas_takes_its_sizes_by_keyword() -> None:
    point = (np.array([1.0]), np.array([1.5]))
    resampled = (np.array([[1.1], [0.9]]), np.array([[1.4], [1.6]]))
    with pytest.raises(TypeError):
        metrics.paired_deltas(("mae",), point, resampled, 4, 0.9)  # type: ignore[misc]
    (d,) = metrics.paired_deltas(("mae",), point, resampled, n=4, confidence_level=0.9)
    assert d.delta == -0.5
