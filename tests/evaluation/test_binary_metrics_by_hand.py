"""Binary metrics (``evaluation/metrics.py``) on tiny cases worked here: the studentized
log-loss interval's inputs, undefined metrics' reasons, refusals, symmetry of the paired
accuracy interval, one calibration bin."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.metrics import calibration_table, compare, evaluate

from modelgate.intervals import bootstrap_indices, interval_holding, studentized_interval


def test_log_loss_interval_is_the_bootstrap_t_of_the_row_losses() -> None:
    """Six rows, one positive scored 1e-20 (its loss clipped at -log(eps) = 36.04): the
    losses' variance (about 180) is far above n - 1. The interval is the bootstrap-t of the
    mean row loss, each resample's standard error ``std(ddof=1) / sqrt(n)`` computed here
    with numpy from the rows. The resamples are those of ``bootstrap_indices`` for the seed,
    so the comparison is exact; the resampler itself is tested in tests/test_intervals.py."""
    y = np.array([1, 0, 0, 1, 0, 1])
    s = np.array([1e-20, 0.2, 0.4, 0.7, 0.1, 0.9])
    eps = np.finfo(np.float64).eps
    loss = -np.log(np.clip(np.where(y == 1, s, 1.0 - s), eps, 1.0 - eps))
    assert loss.var() > len(y) - 1
    got = evaluate(y, s, n_bootstrap=60, seed=5).by_name()["log_loss"]
    idx = np.vstack(list(bootstrap_indices(len(y), n_bootstrap=60, seed=5)))
    rows = loss[idx]
    se = loss.std(ddof=1) / np.sqrt(len(y))
    expected = interval_holding(loss.mean(), *studentized_interval(
        loss.mean(), se, rows.mean(axis=1), rows.std(axis=1, ddof=1) / np.sqrt(len(y)), 0.95,
        lower_limit=0.0))
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


def test_the_paired_accuracy_interval_is_antisymmetric_in_the_two_models() -> None:
    """Swapping candidate and champion negates the accuracy delta and its interval: the
    2 x 2 table of rows each model gets right swaps its off-diagonal, which the interval's
    correlation and Wilson ends do not see. Both models have false negatives and false
    positives here, so a table that miscounts one model's rows breaks the symmetry."""
    rng = np.random.default_rng(8)
    y = (rng.random(60) < 0.5).astype(int)
    a = np.clip(0.5 * y + rng.normal(0.25, 0.25, 60), 0.0, 1.0)
    b = np.clip(0.3 * y + rng.normal(0.35, 0.3, 60), 0.0, 1.0)
    ab = compare(a, b, y, n_bootstrap=200, seed=1).by_name()["accuracy"]
    ba = compare(b, a, y, n_bootstrap=200, seed=1).by_name()["accuracy"]
    assert ab.delta == pytest.approx(-ba.delta, abs=1e-12) and ab.delta != 0
    assert ab.ci_lower == pytest.approx(-ba.ci_upper, abs=1e-12)
    assert ab.ci_upper == pytest.approx(-ba.ci_lower, abs=1e-12)
