"""Attribution drift: hand-worked profiles and distances, and a model whose live inputs lose
their most important feature's signal, explained with the project's SHAP estimator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.attribution import (
    attribution_drift,
    attribution_shares,
    build_attribution_reference,
)
from modelgate.reports.explain import explain

WEIGHTS = {"income": 3.0, "age": 1.0, "tenure": 0.5}


def _predict(frame: pd.DataFrame) -> np.ndarray:
    z = sum(w * frame[name].to_numpy() for name, w in WEIGHTS.items())
    return 1.0 / (1.0 + np.exp(-z))


def _shap(rows: pd.DataFrame, background: pd.DataFrame) -> np.ndarray:
    parts = [explain(_predict, rows.iloc[i:i + 50], background, features=list(WEIGHTS),
                     output="logit").values for i in range(0, len(rows), 50)]
    return np.concatenate(parts)


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({name: rng.normal(size=n) for name in WEIGHTS})


def test_hand_worked_profile_and_distance() -> None:
    # mean |SHAP| = (1, 3) -> shares (0.25, 0.75); current (3, 1) -> (0.75, 0.25); TV = 0.5
    ref = build_attribution_reference([[1.0, -3.0], [-1.0, 3.0]], features=["x", "y"])
    assert ref.shares.tolist() == [0.25, 0.75] and ref.baseline == 0.0
    result = attribution_drift(ref, [[3.0, 1.0]], floor=0.1)
    assert result.distance == pytest.approx(0.5) and result.verdict == "drift"
    assert result.current_shares == (0.75, 0.25)
    assert attribution_shares(np.zeros((2, 4))).tolist() == [0.25] * 4


def test_live_inputs_that_lose_the_top_features_signal_are_caught() -> None:
    rng = np.random.default_rng(0)
    background, reference_rows = _frame(rng, 100), _frame(rng, 200)
    ref = build_attribution_reference(_shap(reference_rows, background), features=list(WEIGHTS))
    # logit output of a linear model: SHAP_i = w_i * (x_i - mean_bg(x_i)), so income leads
    assert ref.features[int(np.argmax(ref.shares))] == "income"
    unshifted = attribution_drift(ref, _shap(_frame(rng, 100), background))
    assert unshifted.verdict == "ok"
    live = _frame(rng, 100)
    live["income"] = float(background["income"].mean())  # the feature no longer varies
    lost = attribution_drift(ref, _shap(live, background))
    assert lost.verdict == "drift"
    assert lost.current_shares[0] == pytest.approx(0.0, abs=1e-9)
    assert lost.distance == pytest.approx(ref.shares[0], rel=1e-9)  # all of income's share moved


def test_no_current_rows_is_no_data_and_bad_input_is_named() -> None:
    ref = build_attribution_reference([[1.0, 2.0], [2.0, 1.0]], features=["x", "y"])
    assert attribution_drift(ref, np.empty((0, 2))).verdict == "no_data"
    with pytest.raises(ValueError, match=r"current must have shape \(n_rows, 2\)"):
        attribution_drift(ref, [[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="features must be 2 unique names"):
        build_attribution_reference([[1.0, 2.0], [2.0, 1.0]], features=["x"])
    with pytest.raises(ValueError, match="finite"):
        attribution_shares([[np.nan, 1.0]])
