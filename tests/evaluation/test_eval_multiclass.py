"""Multiclass metrics: point estimates and bootstrap intervals against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.evaluation.multiclass import (
    evaluate_multiclass,
    multiclass_metric_names,
)
from modelgate.evaluation.multiclass_compare import compare_multiclass
from scipy import stats
from sklearn import metrics as skm
from support.row_bootstrap import agrees, interval_agrees, row_resamples


def _data(seed: int, n: int = 400, c: int = 3, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    logits = rng.normal(size=(n, c)) + 1.5 * np.eye(c)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if ties:  # shared probability values exercise the half-counted ties of ROC AUC
        proba = np.round(proba, 1)
        proba /= proba.sum(axis=1, keepdims=True)
    return y, proba


def _sklearn(y: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    labels = list(range(proba.shape[1]))
    pred = proba.argmax(axis=1)
    out = {
        "accuracy": skm.accuracy_score(y, pred),
        "macro_f1": skm.f1_score(y, pred, labels=labels, average="macro", zero_division=np.nan),
        "weighted_f1": skm.f1_score(y, pred, labels=labels, average="weighted",
                                    zero_division=np.nan),
        "roc_auc_ovr_macro": skm.roc_auc_score(y, proba, multi_class="ovr", average="macro",
                                               labels=labels),
        "log_loss": skm.log_loss(y, proba, labels=labels),
    }
    recall = skm.recall_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    precision = skm.precision_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    out |= {f"recall[{k}]": recall[k] for k in labels}
    out |= {f"precision[{k}]": precision[k] for k in labels}
    return out


CASES = [(0, 3, False), (1, 4, False), (2, 3, True), (3, 5, True)]


@pytest.mark.parametrize(("seed", "c", "ties"), CASES,
                         ids=[f"seed{s}-{c}class{'-ties' if t else ''}" for s, c, t in CASES])
def test_point_estimates_equal_sklearn(seed: int, c: int, ties: bool) -> None:
    y, proba = _data(seed, c=c, ties=ties)
    got = evaluate_multiclass(y, proba, n_bootstrap=0).by_name()
    expected = _sklearn(y, proba)
    assert list(got) == list(multiclass_metric_names(range(c)))
    for name, value in expected.items():
        assert got[name].value == pytest.approx(value, abs=1e-9), name


def _by_hand(y: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """Every metric of one resample, written here: confusion counts, and each class's
    one-vs-rest AUC by the Mann-Whitney rank sum (the core sums below-counts per tie group)."""
    n, c = proba.shape
    confusion = np.bincount(y * c + proba.argmax(axis=1), minlength=c * c).reshape(c, c)
    tp, support, predicted = np.diag(confusion), confusion.sum(axis=1), confusion.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall, precision, f1 = tp / support, tp / predicted, 2 * tp / (support + predicted)
    aucs = []
    for k in range(c):
        pos = y == k
        n_pos = int(pos.sum())
        ranks = stats.rankdata(proba[:, k])
        aucs.append((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (n - n_pos))
                    if 0 < n_pos < n else np.nan)
    eps = np.finfo(np.float64).eps
    out = {"accuracy": tp.sum() / n,
           "macro_f1": np.nanmean(f1) if np.isfinite(f1).any() else np.nan,
           "weighted_f1": np.nansum(f1 * support) / n,
           "roc_auc_ovr_macro": float(np.mean(aucs)),
           "log_loss": -np.mean(np.log(np.clip(proba[np.arange(n), y], eps, 1 - eps)))}
    out |= {f"recall[{k}]": recall[k] for k in range(c)}
    return out | {f"precision[{k}]": precision[k] for k in range(c)}


def _in_range(name: str, lower: float, value: float, upper: float) -> bool:
    top = np.inf if name == "log_loss" else 1.0
    return 0.0 <= lower <= value <= upper <= top


def _wilson(successes: int, trials: int, level: float) -> tuple[float, float]:
    """Textbook Wilson score interval (Wilson 1927; Brown, Cai and DasGupta 2001, eq. 4)."""
    z = stats.norm.ppf(0.5 + level / 2)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return centre - half, centre + half


def _counts(y: np.ndarray, proba: np.ndarray) -> dict[str, tuple[int, int]]:
    """(successes, trials) of the accuracy and of each class's recall and precision."""
    pred = proba.argmax(axis=1)
    out = {"accuracy": (int((pred == y).sum()), len(y))}
    for k in range(proba.shape[1]):
        hits = int(((pred == k) & (y == k)).sum())
        out[f"recall[{k}]"] = (hits, int((y == k).sum()))
        out[f"precision[{k}]"] = (hits, int((pred == k).sum()))
    return out


def test_accuracy_and_per_class_intervals_are_wilson_s() -> None:
    y, proba = _data(5, n=150, ties=True)
    report = evaluate_multiclass(y, proba, n_bootstrap=200, seed=7, confidence_level=0.9)
    for name, (successes, trials) in _counts(y, proba).items():
        m = report.by_name()[name]
        want = _wilson(successes, trials, 0.9)
        assert (m.ci_lower, m.ci_upper) == pytest.approx(want, abs=1e-12), name
        ci = stats.binomtest(successes, trials).proportion_ci(0.9, method="wilson")
        assert (m.ci_lower, m.ci_upper) == pytest.approx((ci.low, ci.high), abs=1e-12), name


def test_a_class_with_24_rows_all_found_is_not_a_point() -> None:
    """The issue's case: 24 rows of a class, every one predicted right; a percentile
    interval read recall 1 [1, 1]."""
    rng = np.random.default_rng(38)
    y = np.r_[np.zeros(24, int), rng.integers(1, 3, size=176)]
    proba = np.full((200, 3), 0.1)
    proba[np.arange(200), y] = 0.8
    proba[24:60, 0] = 0.85  # some other rows predicted as class 0 too
    m = evaluate_multiclass(y, proba, n_bootstrap=200, seed=1).by_name()["recall[0]"]
    z = stats.norm.ppf(0.975)
    assert m.value == 1.0 and m.ci_upper == 1.0
    assert m.ci_lower == pytest.approx(24 / (24 + z * z), abs=1e-12)  # Wilson at p = 1
    assert round(m.ci_lower, 4) == 0.862


def test_intervals_agree_with_a_row_bootstrap_written_here() -> None:
    y, proba = _data(5, n=150, ties=True)
    report = evaluate_multiclass(y, proba, n_bootstrap=2000, seed=7, confidence_level=0.9)
    resamples = row_resamples(len(y), 1000, seed=20240)
    per_resample = [_by_hand(y[i], proba[i]) for i in resamples]
    for i, values in zip(resamples[:3], per_resample[:3], strict=False):  # the oracle itself
        assert values == pytest.approx(_sklearn(y[i], proba[i]), abs=1e-12, nan_ok=True)
    wilson = _counts(y, proba)
    for m in report.metrics:
        if m.name in wilson:  # Wilson's: test_accuracy_and_per_class_intervals_are_wilson_s
            continue
        oracle = np.array([r[m.name] for r in per_resample])
        assert m.ci_upper - m.ci_lower > 0.01, m.name
        assert interval_agrees(m.ci_lower, m.ci_upper, oracle, 0.9, n_core=2000), (
            m.name, m.ci_lower, m.ci_upper, np.nanquantile(oracle, [0.05, 0.95]))
        assert _in_range(m.name, m.ci_lower, m.value, m.ci_upper), m


def test_the_last_row_takes_part_in_the_resamples() -> None:
    """Class 2 is the last row only: its recall is defined in a resample that draws it
    (about 63 % of them, 1 - (1 - 1/n)^n) and undefined otherwise."""
    y, proba = _data(8, n=60, c=2)
    y = np.r_[y, 2]
    proba = np.vstack([np.column_stack([proba * 0.9, np.full(60, 0.1)]), [[0.1, 0.1, 0.8]]])
    report = evaluate_multiclass(y, proba, n_bootstrap=400, seed=1).by_name()
    assert report["recall[2]"].value == 1.0
    # one row of class 2, found: Wilson's interval of 1 in 1, not the point [1, 1]
    assert (report["recall[2]"].ci_lower, report["recall[2]"].ci_upper) == pytest.approx(
        _wilson(1, 1, 0.95), abs=1e-12)
    resamples = row_resamples(len(y), 400, seed=99)
    aucs = np.array([_by_hand(y[i], proba[i])["roc_auc_ovr_macro"] for i in resamples])
    assert 0.5 < np.isfinite(aucs).mean() < 0.75
    auc = report["roc_auc_ovr_macro"]
    assert interval_agrees(auc.ci_lower, auc.ci_upper, aucs, 0.95, n_core=400)


def test_paired_delta_intervals_agree_with_a_row_bootstrap_written_here() -> None:
    y, new = _data(6, n=150)
    old = np.roll(new, 1, axis=1) * 0.3 + new * 0.7  # a worse model on the same rows
    report = compare_multiclass(y, new, old, n_bootstrap=2000, seed=4,
                                confidence_level=0.8).by_name()
    resamples = row_resamples(len(y), 400, seed=4242)
    pairs = [(_by_hand(y[i], new[i]), _by_hand(y[i], old[i])) for i in resamples]
    point_new, point_old = _sklearn(y, new), _sklearn(y, old)
    # (the per-class rates' and the log loss's deltas: test_multiclass_delta_intervals.py)
    for name in ("accuracy", "macro_f1", "roc_auc_ovr_macro"):
        d = report[name]
        assert d.delta == pytest.approx(point_new[name] - point_old[name], abs=1e-9)
        oracle = np.array([a[name] - b[name] for a, b in pairs])
        assert interval_agrees(d.ci_lower, d.ci_upper, oracle, 0.8, n_core=2000), name


def test_a_class_never_predicted_has_undefined_precision_not_zero() -> None:
    y = np.array([0, 1, 2, 2])
    proba = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    m = evaluate_multiclass(y, proba, classes=["a", "b", "c"], n_bootstrap=10).by_name()
    assert np.isnan(m["precision[c]"].value)
    assert m["precision[c]"].undefined_reason == "no row is predicted as this class"
    assert m["recall[c]"].value == 0.0  # two rows labelled c, none found


def test_an_absent_class_makes_ovr_auc_undefined() -> None:
    y = np.array([0, 1, 0, 1])
    proba = np.array([[0.6, 0.3, 0.1]] * 4)
    m = evaluate_multiclass(y, proba, n_bootstrap=0).by_name()
    assert np.isnan(m["roc_auc_ovr_macro"].value)
    assert m["roc_auc_ovr_macro"].undefined_reason is not None


@pytest.mark.parametrize(("y", "proba", "message"), [
    ([0, 3], [[0.5, 0.5], [0.5, 0.5]], "class indices 0..1"),
    ([0, 1], [[0.5, 1.5], [0.5, 0.5]], "probabilities in \\[0, 1\\]"),
    ([0.0, 1.0], [[0.5, 0.5], [0.5, 0.5]], "integer class indices"),
    ([0], [0.5, 0.5], "\\[N, C\\]"),
], ids=["index-out-of-range", "not-probabilities", "float-labels", "1-d-proba"])
def test_bad_input_names_the_argument(y: list, proba: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate_multiclass(y, proba, n_bootstrap=0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 40), st.integers(2, 4))
def test_every_interval_is_in_range_and_holds_its_estimate(seed: int, n: int, c: int) -> None:
    y, proba = _data(seed, n=n, c=c, ties=seed % 2 == 0)
    for m in evaluate_multiclass(y, proba, n_bootstrap=40, seed=seed % 1000).metrics:
        if m.undefined_reason is None and np.isfinite(m.ci_lower):
            assert _in_range(m.name, m.ci_lower, m.value, m.ci_upper), m


def test_log_loss_interval_is_a_bootstrap_t_of_the_row_losses_written_here() -> None:
    """Skewed losses (a few confidently wrong rows): the interval is the studentized
    bootstrap of the mean row loss (Efron and Tibshirani 1993, ch. 12), its ends' t
    quantiles within the noise of 4,000 row resamples' ones; a percentile interval's upper
    end lies well below it."""
    rng = np.random.default_rng(11)
    n = 400
    y = rng.integers(0, 3, size=n)
    proba = np.full((n, 3), 0.01)
    proba[np.arange(n), y] = 0.98
    wrong = rng.choice(n, size=12, replace=False)
    proba[wrong] = np.roll(np.eye(3)[y[wrong]] * 0.998 + 0.001, 1, axis=1)  # loss -log 0.001
    proba /= proba.sum(axis=1, keepdims=True)
    report = evaluate_multiclass(y, proba, n_bootstrap=2000, seed=3).by_name()["log_loss"]
    loss = -np.log(np.clip(proba[np.arange(n), y], 1e-15, 1))
    mean, se = loss.mean(), loss.std() / np.sqrt(n)
    assert report.value == pytest.approx(skm.log_loss(y, proba), rel=1e-12)
    drawn = loss[rng.integers(0, n, size=(4000, n))]
    t = (drawn.mean(axis=1) - mean) / (drawn.std(axis=1) / np.sqrt(n))
    # the code's ends read as t quantiles: lower = mean - t_0.975 se, upper = mean - t_0.025 se
    assert agrees((mean - report.ci_lower) / se, t, 0.975, n_core=2000)
    assert agrees((mean - report.ci_upper) / se, t, 0.025, n_core=2000)
    percentile_upper = np.quantile(drawn.mean(axis=1), 0.975)
    assert report.ci_upper > percentile_upper + 0.25 * se
