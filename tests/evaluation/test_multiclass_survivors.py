"""Multiclass metrics (``evaluation/multiclass.py``): cases written for the survivors of its
first mutation session, each checked against scikit-learn or a number worked by hand."""

from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np
import pytest
from modelgate.evaluation.multiclass import (
    MulticlassReport,
    class_indices,
    evaluate_multiclass,
    multiclass_memory_bytes,
)
from modelgate.evaluation.multiclass_compare import compare_multiclass
from sklearn import metrics as skm

# ``12 N C + 25 N + 16 B (5 + 2 C)`` bytes per model plus one chunk, ``64 * 2**22`` bytes,
# worked by hand: (N, C, models, B) -> bytes.
CHUNK_BYTES = 64 * 4_194_304  # 268_435_456
MEMORY_CASES = {
    # 2 * (360 + 250 + 16 * 7 * 11 = 1232) = 3684
    "10x3-two-models-b7": ((10, 3, 2, 7), 3_684 + CHUNK_BYTES),
    # 3 * (12 * 40 * 2 = 960 + 1000 + 16 * 0) = 5880
    "40x2-three-models-b0": ((40, 2, 3, 0), 5_880 + CHUNK_BYTES),
}


@pytest.mark.parametrize("case", MEMORY_CASES)
def test_the_memory_bound_is_the_documented_formula(case: str) -> None:
    """Oracle: the docstring's formula, evaluated by hand in ``MEMORY_CASES``."""
    (n_rows, n_classes, n_models, n_bootstrap), expected = MEMORY_CASES[case]
    assert multiclass_memory_bytes(n_rows, n_classes, n_models=n_models,
                                   n_bootstrap=n_bootstrap) == expected


def test_the_memory_bound_defaults_to_one_model_and_1000_resamples() -> None:
    """360 + 250 + 16 * 1000 * 11 = 176_610 bytes for 10 rows of 3 classes (by hand)."""
    assert multiclass_memory_bytes(10, 3) == 176_610 + CHUNK_BYTES
    assert multiclass_memory_bytes(n_rows=10, n_classes=3) == 176_610 + CHUNK_BYTES
    with pytest.raises(TypeError):  # the options are keyword-only
        multiclass_memory_bytes(10, 3, 2)  # type: ignore[misc]


PROBA_4x2 = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]]


@pytest.mark.parametrize("y", [[0, 1, 0], [0, 1], [0], [0, 1, 0, 1, 1]],
                         ids=["3-of-4", "2-of-4", "1-of-4", "5-of-4"])
def test_labels_of_another_length_are_refused(y: list[int]) -> None:
    """``y_true`` must hold one index per probability row, shorter or longer."""
    with pytest.raises(ValueError, match=rf"y_true must be 4 integer class indices; got shape "
                                         rf"\({len(y)},\)"):
        evaluate_multiclass(y, PROBA_4x2, n_bootstrap=0)


@pytest.mark.parametrize(("y", "found"), [
    ([7, 0, 1, 5], "[5, 7]"),
    ([3, -1, 2, 0], "[-1, 2, 3]"),  # 2 and 3: beyond the columns, not the rows
    ([2, -1, 3, -1], "[-1, 2, 3]"),  # each value once
    ([0, 2, 1, 1], "[2]"),  # the first index past the last column
    ([0, -1, 1, 1], "[-1]"),  # the first index before the first column
], ids=["above-the-rows", "below-and-above-the-columns", "repeated", "just-past-the-columns",
        "just-before-the-columns"])
def test_the_message_lists_only_the_indices_out_of_range(y: list[int], found: str) -> None:
    """0 and 1 are the valid indices of two columns; the others are listed sorted, once."""
    with pytest.raises(ValueError, match=rf"class indices 0\.\.1; found {re.escape(found)}$"):
        evaluate_multiclass(y, PROBA_4x2, n_bootstrap=0)


def test_the_message_lists_at_most_three_indices() -> None:
    proba = np.full((5, 2), 0.5)
    with pytest.raises(ValueError, match=r"class indices 0\.\.1; found \[-1, 2, 3\]$"):
        evaluate_multiclass([4, 3, 2, -1, 0], proba, n_bootstrap=0)


def test_compare_takes_its_data_by_keyword_and_its_options_only_by_keyword() -> None:
    """The signature ``(y_true, candidate_proba, champion_proba, *, classes, ...)``; the
    accuracy delta by hand: 3/4 - 1/4."""
    y = [0, 1, 1, 1]  # the candidate misses row 3
    old = [[0.2, 0.8], [0.3, 0.7], [0.6, 0.4], [0.9, 0.1]]  # right on row 2 only
    d = compare_multiclass(y_true=y, candidate_proba=PROBA_4x2, champion_proba=old,
                           n_bootstrap=0).by_name()["accuracy"]
    assert (d.candidate, d.champion, d.delta) == (0.75, 0.25, 0.5)
    with pytest.raises(TypeError):
        compare_multiclass(y, PROBA_4x2, old, ["a", "b"])  # type: ignore[misc]


def test_evaluate_takes_its_data_by_keyword_and_its_options_only_by_keyword() -> None:
    m = evaluate_multiclass(y_true=[0, 1, 1, 1], proba=PROBA_4x2, n_bootstrap=0).by_name()
    assert m["accuracy"].value == 0.75  # row 3 wrong, by hand
    with pytest.raises(TypeError):
        evaluate_multiclass([0, 1, 0, 1], PROBA_4x2, ["a", "b"])  # type: ignore[misc]


@pytest.mark.parametrize("proba", [
    np.full((4, 2, 2), 0.5),
    np.full((4, 1), 1.0),
    np.empty((0, 2)),
], ids=["3-d", "one-column", "no-rows"])
def test_probabilities_not_a_non_empty_n_by_c_array_are_refused(proba: np.ndarray) -> None:
    y = np.zeros(len(proba), dtype=int)
    with pytest.raises(ValueError, match=r"proba must be a non-empty \[N, C\] array with C >= 2"):
        evaluate_multiclass(y, proba, n_bootstrap=0)


def test_a_single_row_is_evaluated() -> None:
    """One row of class 1 predicted 1 (by hand): accuracy 1, log loss -log 0.8, recall[0] and
    precision[0] undefined, and ROC AUC undefined (class 0 absent)."""
    m = evaluate_multiclass([1], [[0.2, 0.8]], n_bootstrap=5, seed=3).by_name()
    assert m["accuracy"].value == 1.0
    assert m["log_loss"].value == pytest.approx(-np.log(0.8), rel=1e-15)
    assert np.isnan(m["recall[0]"].value) and np.isnan(m["precision[0]"].value)
    assert m["recall[1]"].value == m["precision[1]"].value == 1.0
    assert np.isnan(m["roc_auc_ovr_macro"].value)


@pytest.mark.parametrize("classes", [["a"], ["a", "b", "c"]], ids=["too-few", "too-many"])
def test_class_names_must_match_the_columns(classes: list[str]) -> None:
    message = rf"classes must name the 2 probability columns; got {len(classes)}"
    with pytest.raises(ValueError, match=message):
        evaluate_multiclass([0, 1, 1, 1], PROBA_4x2, classes=classes, n_bootstrap=0)
    with pytest.raises(ValueError, match=message):
        compare_multiclass([0, 1, 1, 1], PROBA_4x2, PROBA_4x2, classes=classes, n_bootstrap=0)


def test_300_class_names_for_300_columns_are_accepted() -> None:
    """Counts above 256 are distinct int objects in CPython: the check compares values."""
    c = 300
    proba = np.full((3, c), 1.0 / c)
    proba[np.arange(3), [0, 1, 299]] = 0.5
    names = [f"k{i}" for i in range(c)]
    d = compare_multiclass([0, 1, 299], proba, proba, classes=names, n_bootstrap=0).by_name()
    assert (d["accuracy"].candidate, d["accuracy"].delta) == (1.0, 0.0)
    assert d["recall[k299]"].candidate == 1.0
    m = evaluate_multiclass([0, 1, 299], proba, classes=names, n_bootstrap=0).by_name()
    assert m["precision[k1]"].value == 1.0


def test_the_defaults_are_1000_resamples_95_percent_and_seed_0() -> None:
    """The documented defaults, as recorded by the report and the comparison."""
    y, proba = [0, 1, 1, 1], PROBA_4x2
    report = evaluate_multiclass(y, proba)
    assert (report.n_bootstrap, report.confidence_level, report.seed) == (1000, 0.95, 0)
    comparison = compare_multiclass(y, proba, proba)
    assert (comparison.n_bootstrap, comparison.confidence_level, comparison.seed) == (1000, 0.95,
                                                                                      0)


def test_the_report_is_frozen_and_slotted() -> None:
    report = evaluate_multiclass([0, 1, 1, 1], PROBA_4x2, classes=["a", "b"], n_bootstrap=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.n = 5  # type: ignore[misc]
    assert not hasattr(report, "__dict__") and "__slots__" in MulticlassReport.__dict__
    assert (report.classes, report.n) == (("a", "b"), 4)
    with pytest.raises(TypeError):  # the gate's input is read-only
        report.by_name()["accuracy"] = report.metrics[1]  # type: ignore[index]


def test_class_indices_takes_the_column_only_by_keyword() -> None:
    """Positions among the classes, by hand; a numpy array and a list give the same."""
    got = class_indices(labels=np.array(["c", "a", "c"]), classes=["a", "b", "c"], column="y")
    assert got.tolist() == [2, 0, 2]
    assert class_indices(["c", "a", "c"], ("a", "b", "c"), column="y").tolist() == [2, 0, 2]
    with pytest.raises(TypeError):
        class_indices(["a"], ["a", "b"], "y")  # type: ignore[misc]


def test_a_masked_label_is_missing_not_its_hidden_value() -> None:
    """A numpy masked array is taken as it reads (``tolist``: masked -> None), so the masked
    row is a missing label and is refused, whatever value lies under the mask."""
    labels = np.ma.masked_array(["a", "b", "a"], mask=[False, True, False])
    with pytest.raises(ValueError, match=r"found other values: None \(1 row\)"):
        class_indices(labels, ["a", "b"], column="y")
    unmasked = np.ma.masked_array(["a", "b", "a"], mask=[False, False, False])
    assert class_indices(unmasked, ["a", "b"], column="y").tolist() == [0, 1, 0]


def test_certain_predictions_are_clipped_as_sklearn_clips_them() -> None:
    """Oracle: scikit-learn's ``log_loss``, which clips to ``[eps, 1 - eps]``: a certain right
    answer costs ``-log(1 - eps)`` (about 2.2e-16, not 0), a certain wrong one ``-log eps``."""
    eps = np.finfo(np.float64).eps
    right = np.array([[1.0, 0.0], [0.0, 1.0]])
    m = evaluate_multiclass([0, 1], right, n_bootstrap=0).by_name()["log_loss"]
    assert m.value == pytest.approx(skm.log_loss([0, 1], right, labels=[0, 1]), rel=1e-12)
    assert m.value == pytest.approx(-np.log1p(-eps), rel=1e-12) and m.value > 0.0
    wrong = right[::-1]
    m = evaluate_multiclass([0, 1], wrong, n_bootstrap=0).by_name()["log_loss"]
    assert m.value == pytest.approx(skm.log_loss([0, 1], wrong, labels=[0, 1]), rel=1e-12)
    assert m.value == pytest.approx(-np.log(eps), rel=1e-12)


def test_ovr_auc_of_a_class_with_one_negative_row() -> None:
    """Three rows of class 0, one of class 1: class 0 has a single negative. Oracle: the mean
    of scikit-learn's binary ``roc_auc_score`` per class; by hand both are 2/3 (the class-1
    row at 0.6 is above 0.1 and 0.4, below 0.7)."""
    y = np.array([0, 0, 0, 1])
    p1 = np.array([0.1, 0.4, 0.7, 0.6])
    proba = np.column_stack([1.0 - p1, p1])
    expected = np.mean([skm.roc_auc_score(y == k, proba[:, k]) for k in (0, 1)])
    got = evaluate_multiclass(y, proba, n_bootstrap=0).by_name()["roc_auc_ovr_macro"]
    assert got.undefined_reason is None
    assert got.value == pytest.approx(expected, abs=1e-12) and expected == pytest.approx(2 / 3)


def test_undefined_metrics_give_their_own_reasons() -> None:
    """Class ``c`` has no row and no prediction: its recall and precision are undefined, and
    so is the one-vs-rest AUC (scikit-learn refuses it); each says why."""
    proba = [[0.7, 0.2, 0.1], [0.2, 0.7, 0.1], [0.6, 0.3, 0.1]]
    m = evaluate_multiclass([0, 1, 1], proba, classes=["a", "b", "c"], n_bootstrap=20,
                            seed=2).by_name()
    assert m["recall[c]"].undefined_reason == "no row has this label"
    assert m["precision[c]"].undefined_reason == "no row is predicted as this class"
    assert (m["roc_auc_ovr_macro"].undefined_reason
            == "some class is absent from the labels or is every label")
    for name in ("recall[c]", "precision[c]", "roc_auc_ovr_macro"):
        assert np.isnan([m[name].value, m[name].ci_lower, m[name].ci_upper]).all(), name
    for name in ("accuracy", "macro_f1", "weighted_f1", "log_loss", "recall[a]", "precision[b]"):
        assert m[name].undefined_reason is None, name


def test_without_resamples_every_interval_is_nan() -> None:
    y = [0, 1, 1, 1]
    for m in evaluate_multiclass(y, PROBA_4x2, n_bootstrap=0).metrics:
        assert np.isnan(m.ci_lower) and np.isnan(m.ci_upper), m
    for d in compare_multiclass(y, PROBA_4x2, PROBA_4x2[::-1], n_bootstrap=0).deltas:
        assert np.isnan(d.ci_lower) and np.isnan(d.ci_upper), d


@pytest.mark.parametrize("bad", [1.5, -0.25, np.nan], ids=["above-one", "negative", "nan"])
def test_probabilities_outside_zero_one_are_refused_without_a_runtime_warning(bad: float) -> None:
    proba = np.array([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]])
    proba[1, 0] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match=r"proba must be probabilities in \[0, 1\]"):
            evaluate_multiclass([0, 1, 0], proba, n_bootstrap=0)


def test_probabilities_of_exactly_zero_and_one_are_accepted() -> None:
    """Rows certain of their class (by hand: everything right, AUC 1)."""
    proba = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        m = evaluate_multiclass([0, 1, 2, 1], proba, n_bootstrap=30, seed=1).by_name()
    assert m["accuracy"].value == m["macro_f1"].value == m["roc_auc_ovr_macro"].value == 1.0


@pytest.mark.parametrize("columns", [2, 4], ids=["fewer-columns", "more-columns"])
def test_a_champion_of_another_shape_is_refused(columns: int) -> None:
    new = np.full((3, 3), 1.0 / 3.0)
    old = np.full((3, columns), 1.0 / columns)
    with pytest.raises(ValueError, match=rf"champion_proba must have the candidate's shape "
                                         rf"\(3, 3\); got \(3, {columns}\)"):
        compare_multiclass([0, 1, 1], new, old, n_bootstrap=0)


def test_classes_labelled_or_predicted_once_against_sklearn() -> None:
    """Class 1 has one row and class 2 one prediction; class 3 is predicted once, never
    labelled. Oracle: scikit-learn's per-class and averaged scores (``zero_division=nan``)."""
    y = np.array([0, 0, 1, 2, 2, 0])
    pred = np.array([0, 1, 1, 2, 0, 3])
    proba = np.full((6, 4), 0.1)
    proba[np.arange(6), pred] = 0.7
    labels = [0, 1, 2, 3]
    m = evaluate_multiclass(y, proba, n_bootstrap=0).by_name()
    recall = skm.recall_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    precision = skm.precision_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    for k in labels:
        assert m[f"recall[{k}]"].value == pytest.approx(recall[k], nan_ok=True), k
        assert m[f"precision[{k}]"].value == pytest.approx(precision[k], nan_ok=True), k
    for average in ("macro", "weighted"):
        expected = skm.f1_score(y, pred, labels=labels, average=average, zero_division=np.nan)
        assert m[f"{average}_f1"].value == pytest.approx(expected, abs=1e-12), average
    assert m["accuracy"].value == skm.accuracy_score(y, pred) == 0.5


def test_the_memory_bound_holds_with_a_full_chunk_of_resamples() -> None:
    """The peak traced while evaluating (plus the probabilities given) stays under the bound
    stated up front when the resamples fill a whole chunk (5,000 rows x 1,000 resamples, more
    than 2**22 counts): about 213 MiB measured, where the bound of 32 bytes a count (128 MiB)
    was exceeded."""
    import tracemalloc

    rng = np.random.default_rng(0)
    y, proba = rng.integers(0, 2, 5000), rng.dirichlet(np.ones(2), 5000)
    tracemalloc.start()
    try:
        evaluate_multiclass(y, proba, n_bootstrap=1000, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak + proba.nbytes <= multiclass_memory_bytes(5000, 2, n_bootstrap=1000)
