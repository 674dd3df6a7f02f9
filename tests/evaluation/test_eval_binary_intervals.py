"""Binary intervals from merged statistics: inside the metric's range, holding the point,
and within resampling noise of a row bootstrap the test draws itself."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.metrics import compare, evaluate
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect, merge
from scipy.special import expit
from scipy.stats import rankdata

RANGE = {"roc_auc": (0, 1), "accuracy": (0, 1), "precision": (0, 1), "recall": (0, 1),
         "f1": (0, 1), "brier": (0, 1), "log_loss": (0, np.inf)}


def _breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """Held-out labels and scores of a logistic model on 8 breast-cancer features (n = 228)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x[:, :8], y, test_size=0.4, stratify=y,
                                                        random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x_train, y_train)
    return y_test, model.predict_proba(x_test)[:, 1]


def _confident(seed: int, n: int = 228) -> tuple[np.ndarray, np.ndarray]:
    """A confident model: most scores within 1e-3 of 0 or 1 (fixed-width bins put the
    interval of this seed above 1, at 1.0112)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.37).astype(int)
    return y, expit(8.0 * rng.normal(3.0 * y, 1.0) - 12.0)


def _narrow(seed: int, n: int, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """Scores crowded into [low, high), positives higher on average."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    u = np.clip(rng.beta(2 + 3 * y, 5 - 3 * y), 0.0, np.nextafter(1.0, 0.0))
    return y, low + (high - low) * u


def _near_separable(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    s = np.where(y == 1, rng.uniform(0.999, 1.0, n), rng.uniform(0.0, 0.001, n))
    s[np.flatnonzero(y == 0)[0]] = 0.9995  # one negative among the positives
    return y, s


def _row_bootstrap_auc(y: np.ndarray, s: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """AUC of row resamples (Mann-Whitney on mid-ranks), drawn here with this test's own rng."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(y), size=(resamples, len(y)))
    yy, ss = y[idx], s[idx]
    ranks = rankdata(ss, axis=1)
    n_pos = yy.sum(axis=1)
    n_neg = len(y) - n_pos
    return ((ranks * yy).sum(axis=1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _quantile_noise(values: np.ndarray, q: float) -> float:
    """About one Monte-Carlo standard error of the ``q`` quantile of ``values``: half the
    spread between the order statistics one binomial standard deviation either side."""
    b = len(values)
    spread = np.sqrt(b * q * (1 - q))
    ordered = np.sort(values)
    lo, hi = int(np.floor(b * q - spread)), int(np.ceil(b * q + spread))
    return float(ordered[min(hi, b - 1)] - ordered[max(lo, 0)]) / 2


CASES = {
    "breast-cancer-logistic-n228": (_breast_cancer, 1 << 15),
    "confident-n228": (lambda: _confident(4), 1 << 15),
    "confident-n3000-coarse-cells": (lambda: _confident(7, 1500), 128),
    "scores-in-0.9-1-coarse-cells": (lambda: _narrow(1, 1500, 0.9, 1.0), 128),
    "scores-in-0.30-0.31-coarse-cells": (lambda: _narrow(2, 1500, 0.30, 0.31), 128),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_auc_interval_ends_are_within_resampling_noise_of_a_row_bootstrap(case: str) -> None:
    """The cell table's replicates are those of a row bootstrap: its percentile interval
    (``interval="percentile"``; the default AUC interval is a logit-scale Wald one, tested
    against its own oracle in test_per_metric_intervals.py) matches the row bootstrap's."""
    data, max_cells = CASES[case]
    y, s = data()
    resamples = 1000
    summary = performance_from_statistics(collect(y, s, threshold=0.5, max_cells=max_cells),
                                          n_bootstrap=resamples, seed=5, interval="percentile")
    auc = summary.candidate.by_name()["roc_auc"]
    rows = _row_bootstrap_auc(y, s, resamples, seed=11)
    for end, q in ((auc.ci_lower, 0.025), (auc.ci_upper, 0.975)):
        noise = _quantile_noise(rows, q)
        # both ends carry Monte-Carlo noise of about `noise`; 4 standard errors of the difference
        assert abs(end - np.quantile(rows, q)) <= 4 * np.sqrt(2) * noise + 1e-12, (end, q)
    assert 0.0 <= auc.ci_lower <= auc.value <= auc.ci_upper <= 1.0
    assert auc.ci_upper > auc.ci_lower


def test_the_issue_s_confident_model_has_an_auc_interval_inside_zero_one() -> None:
    y, s = _breast_cancer()
    assert len(y) == 228
    auc = performance_from_statistics(collect(y, s, threshold=0.5)).candidate.by_name()["roc_auc"]
    assert auc.value > 0.98
    assert auc.ci_upper <= 1.0 and auc.ci_lower <= auc.value <= auc.ci_upper


def _cases_in_range() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(3)
    out = {}
    for name, (y, s) in {
        "scores-in-0.9-1": _narrow(4, 2000, 0.9, 1.0),
        "scores-in-one-64th": _narrow(5, 2000, 0.50, 0.51),
        "near-separable": _near_separable(6, 1500),
        "confident": _confident(4),
        "breast-cancer": _breast_cancer(),
        "twelve-rows": (np.array([0, 1] * 6), np.round(rng.random(12), 1)),
    }.items():
        champion = np.clip(s + rng.normal(0.0, 0.02, len(s)), 0.0, 1.0)
        out[name] = (y, s, champion)
    return out


IN_RANGE = _cases_in_range()


@pytest.mark.parametrize("interval", ["per_metric", "percentile", "bca"])
@pytest.mark.parametrize("max_cells", [16, 1 << 15], ids=["coarsest-cells", "default-cells"])
@pytest.mark.parametrize("case", list(IN_RANGE), ids=list(IN_RANGE))
def test_every_binary_interval_is_in_range_and_holds_its_point(case: str, max_cells: int,
                                                               interval: str) -> None:
    y, s, h = IN_RANGE[case]
    parts = [collect(y[i::3], s[i::3], threshold=0.95 if "0.9" in case else 0.5,
                     champion_score=h[i::3], champion_threshold=0.5, max_cells=max_cells)
             for i in range(3)]
    summary = performance_from_statistics(merge(parts, max_cells=max_cells), n_bootstrap=300, seed=2,
                                          interval=interval)  # type: ignore[arg-type]
    assert summary.champion is not None and summary.comparison is not None
    for m in summary.candidate.metrics + summary.champion.metrics:
        if m.undefined_reason is None:
            low, high = RANGE[m.name]
            assert low <= m.ci_lower <= m.value <= m.ci_upper <= high, (m.name, m)
    for d in summary.comparison.deltas:
        if d.undefined_reason is None:
            assert d.ci_lower <= d.delta <= d.ci_upper, (d.name, d)
            if RANGE[d.name][1] == 1:
                assert d.ci_lower >= -1.0 and d.ci_upper <= 1.0, (d.name, d)


@pytest.mark.parametrize("case", list(IN_RANGE), ids=list(IN_RANGE))
def test_row_bootstrap_intervals_are_in_range_and_hold_their_point(case: str) -> None:
    y, s, h = IN_RANGE[case]
    for m in evaluate(y, s, n_bootstrap=200, seed=1).metrics:
        if m.undefined_reason is None:
            low, high = RANGE[m.name]
            assert low <= m.ci_lower <= m.value <= m.ci_upper <= high, (m.name, m)
    for d in compare(s, h, y, n_bootstrap=200, seed=1).deltas:
        if d.undefined_reason is None:
            assert d.ci_lower <= d.delta <= d.ci_upper, (d.name, d)
