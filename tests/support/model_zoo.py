"""Small models from real converters, in every layout a data scientist brings (tests only).

Each builder trains on a seeded frame and returns a :class:`Zoo` entry: the ONNX bytes as
the converter wrote them, a manifest draft (no sha256; the task's keys only), the frame the
model was trained on, and the native model's own predictions on it (probability matrix or
values) for comparison with ONNX Runtime.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

FEATURES = ("x1", "x2", "x3")


@dataclass(frozen=True)
class Zoo:
    onnx_bytes: bytes
    draft: dict[str, Any]
    frame: pd.DataFrame
    native: np.ndarray  # [N, C] probabilities or [N] values from the native model
    classes: tuple[Any, ...] | None
    # the native model's raw scores (margin: before sigmoid/softmax), where a test needs them
    raw: np.ndarray | None = None

    def write(self, folder: Path, **changes: Any) -> tuple[Path, Path]:
        """model.onnx and manifest.json in ``folder``; ``changes`` override draft keys."""
        folder.mkdir(parents=True, exist_ok=True)
        draft = {**self.draft, **changes}
        draft = {k: v for k, v in draft.items() if v is not None}
        (folder / "model.onnx").write_bytes(self.onnx_bytes)
        (folder / "manifest.json").write_text(json.dumps(draft))
        return folder / "model.onnx", folder / "manifest.json"


def frame(n: int = 600, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    df = pd.DataFrame(x, columns=list(FEATURES))
    df["group"] = rng.choice(["a", "b", "c"], size=n)
    signal = x[:, 0] - 0.5 * x[:, 1] + rng.normal(scale=0.7, size=n)
    df["y_binary"] = np.where(signal > 0, "good", "bad")
    df["y_int"] = (signal > 0).astype(np.int64)
    df["y_3"] = np.digitize(signal, [-0.6, 0.6]).astype(np.int64)  # classes 0, 1, 2
    df["y_value"] = 2.0 * x[:, 0] - x[:, 1] + 0.3 * x[:, 2] + rng.normal(scale=0.2, size=n)
    return df


def _draft(task: str, label: dict[str, Any], **rest: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "format_version": 1, "name": f"zoo-{task}", "version": "1",
        "features": [{"name": n, "kind": "numeric"} for n in FEATURES],
        "label": label, "sensitive_features": ["group"], **rest,
    }
    if task != "binary_classification":
        out["task"] = task
    else:
        out["threshold"] = 0.5
    return out


def _x(df: pd.DataFrame, dtype: Any = np.float32) -> np.ndarray:
    return df[list(FEATURES)].to_numpy(dtype=dtype)


def sklearn_binary(*, zipmap: bool, double: bool = False) -> Zoo:
    """LogisticRegression on string classes ['bad', 'good'], one [N, 3] input named X."""
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    df = frame()
    dtype = np.float64 if double else np.float32
    model = LogisticRegression().fit(_x(df, dtype), df["y_binary"])
    onx = to_onnx(model, _x(df, dtype)[:1], options={"zipmap": zipmap})
    draft = _draft("binary_classification", {"column": "y_binary", "positive": "good"},
                   input_tensor="X")
    return Zoo(onx.SerializeToString(), draft, df, model.predict_proba(_x(df, dtype)),
               tuple(model.classes_))


def sklearn_columns() -> Zoo:
    """A skl2onnx pipeline with one input per column: DOUBLE, INT64 and FLOAT."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, Int64TensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    df = frame()
    df["x2"] = np.round(df["x2"] * 10).astype(np.int64)
    pipe = Pipeline([("pre", ColumnTransformer([("s", StandardScaler(), list(FEATURES))])),
                     ("clf", LogisticRegression())])
    pipe.fit(df[list(FEATURES)], df["y_int"])
    types = [("x1", DoubleTensorType([None, 1])), ("x2", Int64TensorType([None, 1])),
             ("x3", FloatTensorType([None, 1]))]
    onx = convert_sklearn(pipe, initial_types=types, options={id(pipe): {"zipmap": False}})
    draft = _draft("binary_classification", {"column": "y_int", "positive": 1})
    # skl2onnx casts every column to float32 inside the graph: the reference does the same
    ref = df[list(FEATURES)].astype(np.float32).astype(np.float64)
    return Zoo(onx.SerializeToString(), draft, df, pipe.predict_proba(ref), (0, 1))


def lightgbm_binary(*, zipmap: bool = True) -> Zoo:
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    df = frame()
    model = lightgbm.LGBMClassifier(n_estimators=20, num_leaves=8, verbose=-1)
    model.fit(_x(df), df["y_int"])
    onx = convert_lightgbm(model, initial_types=[("input", FloatTensorType([None, 3]))],
                           zipmap=zipmap)
    draft = _draft("binary_classification", {"column": "y_int", "positive": 1},
                   input_tensor="input")
    return Zoo(onx.SerializeToString(), draft, df, model.predict_proba(_x(df)), (0, 1))


def xgboost_binary() -> Zoo:
    import xgboost
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    df = frame()
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1)
    model.fit(_x(df), df["y_int"])
    onx = convert_xgboost(model, initial_types=[("input", FloatTensorType([None, 3]))])
    draft = _draft("binary_classification", {"column": "y_int", "positive": 1},
                   input_tensor="input")
    return Zoo(onx.SerializeToString(), draft, df, model.predict_proba(_x(df)), (0, 1))


def lightgbm_multiclass() -> Zoo:
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    df = frame()
    model = lightgbm.LGBMClassifier(n_estimators=20, num_leaves=8, verbose=-1)
    model.fit(_x(df), df["y_3"])
    onx = convert_lightgbm(model, initial_types=[("input", FloatTensorType([None, 3]))])
    draft = _draft("multiclass_classification", {"column": "y_3"}, input_tensor="input")
    return Zoo(onx.SerializeToString(), draft, df, model.predict_proba(_x(df)), (0, 1, 2),
               raw=model.predict(_x(df), raw_score=True))


def sklearn_multiclass() -> Zoo:
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    df = frame()
    model = LogisticRegression().fit(_x(df), df["y_3"])
    onx = to_onnx(model, _x(df)[:1], options={"zipmap": False})
    draft = _draft("multiclass_classification", {"column": "y_3"}, input_tensor="X")
    return Zoo(onx.SerializeToString(), draft, df, model.predict_proba(_x(df)), (0, 1, 2))


def sklearn_regression() -> Zoo:
    from skl2onnx import to_onnx
    from sklearn.linear_model import LinearRegression

    df = frame()
    model = LinearRegression().fit(_x(df), df["y_value"])
    onx = to_onnx(model, _x(df)[:1])
    draft = _draft("regression", {"column": "y_value"}, input_tensor="X")
    return Zoo(onx.SerializeToString(), draft, df, model.predict(_x(df)), None)


def xgboost_regression() -> Zoo:
    import xgboost
    from onnxmltools import convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    df = frame()
    model = xgboost.XGBRegressor(n_estimators=20, max_depth=3, n_jobs=1)
    model.fit(_x(df), df["y_value"])
    onx = convert_xgboost(model, initial_types=[("input", FloatTensorType([None, 3]))])
    draft = _draft("regression", {"column": "y_value"}, input_tensor="input")
    return Zoo(onx.SerializeToString(), draft, df, model.predict(_x(df)), None)


BUILDERS: dict[str, Callable[[], Zoo]] = {
    "sklearn-zipmap": lambda: sklearn_binary(zipmap=True),
    "sklearn-no-zipmap": lambda: sklearn_binary(zipmap=False),
    "sklearn-double": lambda: sklearn_binary(zipmap=False, double=True),
    "sklearn-columns": sklearn_columns,
    "lightgbm-zipmap": lightgbm_binary,
    "xgboost": xgboost_binary,
    "lightgbm-3-class": lightgbm_multiclass,
    "sklearn-3-class": sklearn_multiclass,
    "sklearn-regression": sklearn_regression,
    "xgboost-regression": xgboost_regression,
}

_CACHE: dict[str, Zoo] = {}


def build(name: str) -> Zoo:
    """One zoo entry, built once per test session."""
    if name not in _CACHE:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _CACHE[name] = BUILDERS[name]()
    return _CACHE[name]
