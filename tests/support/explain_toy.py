"""The SHAP tests' toy model: a logistic model of four normal features with an interaction
(``q r``) and a sine, and a categorical feature ``k``; and ``Predict``, the type of a model."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

Predict = Callable[[pd.DataFrame], np.ndarray]

TOY = ["p", "q", "r", "s", "k"]


def toy_predict(df: pd.DataFrame) -> np.ndarray:
    x = df[["p", "q", "r", "s"]].to_numpy(dtype=np.float64)
    z = x[:, 0] - 2 * x[:, 1] * x[:, 2] + np.sin(x[:, 3]) + (df["k"] == "u").to_numpy()
    return 1 / (1 + np.exp(-z))


def toy_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    frame = pd.DataFrame(rng.normal(size=(n, 4)), columns=["p", "q", "r", "s"])
    frame["k"] = rng.choice(np.array(["u", "v", "w"], dtype=object), size=n)
    return frame
