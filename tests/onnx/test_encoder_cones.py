"""String imputer nodes folded into codes (modelgate.onnx.encoder_cones) give the string graph's outputs.

The expected scores come from ONNX Runtime running the original graph fed strings, the way
a user's own session is fed; the scorer runs the folded graph fed codes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from onnx import TensorProto, helper
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from modelgate.onnx.artifact import LoadedModel, package, verify
from modelgate.onnx.codes import code_string_inputs
from modelgate.onnx.layouts import unzip_probabilities
from modelgate.onnx.scoring import ModelScorer, SessionSettings, open_session

COLOURS = np.array(["red", "green", "blue", ""], dtype=object)  # "" is missing: imputed
SIZES = np.array(["S", "M", "L"], dtype=object)  # never missing in training


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({"x": rng.normal(size=n).astype(np.float32),
                         "colour": COLOURS[rng.integers(0, 4, size=n)],
                         "size": SIZES[rng.integers(0, 3, size=n)]})


def _imputing_model(tmp: Path, handle_unknown: str = "ignore") -> tuple[bytes, LoadedModel]:
    """skl2onnx's string imputer (missing "" -> "missing") before a one-hot encoder."""
    frame = _frame(np.random.default_rng(3), 400)
    y = ((frame["colour"] == "red") ^ (frame["x"] > 0.2)).astype(int)
    cat = Pipeline([("impute", SimpleImputer(missing_values="", strategy="constant",
                                             fill_value="missing")),
                    ("onehot", OneHotEncoder(handle_unknown=handle_unknown))])
    pipe = Pipeline([("pre", ColumnTransformer([("num", StandardScaler(), ["x"]),
                                                ("cat", cat, ["colour", "size"])])),
                     ("clf", LogisticRegression())]).fit(frame, y)
    types = [("x", FloatTensorType([None, 1])), ("colour", StringTensorType([None, 1])),
             ("size", StringTensorType([None, 1]))]
    onx = convert_sklearn(pipe, initial_types=types,
                          options={id(pipe.named_steps["clf"]): {"zipmap": False}},
                          target_opset={"": 17, "ai.onnx.ml": 3})
    (tmp / "model.onnx").write_bytes(onx.SerializeToString())
    (tmp / "manifest.json").write_text(json.dumps({
        "format_version": 1, "name": "imputed", "version": "1", "opset": 17,
        "features": [{"name": "x", "kind": "numeric"},
                     {"name": "colour", "kind": "categorical", "allow_missing": True},
                     {"name": "size", "kind": "categorical", "allow_missing": True}],
        "label": {"column": "y", "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1},
        "threshold": 0.5, "sensitive_features": [],
    }))
    return onx.SerializeToString(), verify(package(tmp / "model.onnx", tmp / "manifest.json", tmp))


def _string_fed(onnx_bytes: bytes, frame: pd.DataFrame, output: str, positive: int) -> np.ndarray:
    """The original graph fed as a user feeds it: strings, missing values as ``""``."""
    sess = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    feeds: dict[str, Any] = {}
    for i in sess.get_inputs():
        column = frame[i.name]
        feeds[i.name] = (column.astype(object).where(column.notna(), "").astype(str)
                         .to_numpy(dtype=object) if i.type == "tensor(string)"
                         else column.to_numpy(dtype=np.float32)).reshape(-1, 1)
    return np.asarray(sess.run([output], feeds)[0][:, positive], dtype=np.float64)


def _every_value(categories: dict[str, list[str]], numeric: list[str], n: int) -> pd.DataFrame:
    """Rows covering each categorical column's every category, "", "missing", an unknown value
    and a missing value (None), the columns cycled at co-prime strides."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({c: rng.normal(size=n).astype(np.float32) for c in numeric})
    for k, (name, cats) in enumerate(categories.items()):
        values = np.array([*cats, "", "missing", "never seen", None], dtype=object)
        frame[name] = values[(np.arange(n) * (2 * k + 1)) % len(values)]
    return frame


@pytest.fixture(scope="module")
def imputing(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, ModelScorer]:
    onnx_bytes, model = _imputing_model(tmp_path_factory.mktemp("imputing"))
    return onnx_bytes, open_session(model, SessionSettings(provider="cpu"))


def test_imputed_inputs_are_fed_as_codes(imputing: tuple[bytes, ModelScorer]) -> None:
    onnx_bytes, scorer = imputing
    coded = code_string_inputs(onnx_bytes)
    assert dict(coded.categories) == {"colour": ("blue", "green", "missing", "red"),
                                      "size": ("L", "M", "S")}
    # "" is imputed to "missing"; size has no "missing" category: "" gives zeros (code -1)
    assert {k: dict(v) for k, v in coded.aliases.items()} == {"colour": {"": 2}}
    types = {i.name: i.type for i in scorer.session.get_inputs()}
    assert types == {"x": "tensor(float)", "colour": "tensor(int64)", "size": "tensor(int64)"}
    ops = {n.op_type for n in onnx.load_from_string(coded.onnx_bytes).graph.node}
    assert not ops & {"LabelEncoder", "Where", "Gather", "ArrayFeatureExtractor"}


@pytest.mark.parametrize("dtype", ["object", "category", "str"])
def test_folded_graph_scores_every_value_as_the_string_graph(
        imputing: tuple[bytes, ModelScorer], dtype: str) -> None:
    onnx_bytes, scorer = imputing
    frame = _every_value({"colour": ["red", "green", "blue"], "size": ["S", "M", "L"]}, ["x"], 210)
    cast = frame.astype({"colour": dtype, "size": dtype}) if dtype != "str" else frame.fillna(
        {"colour": "", "size": ""}).astype({"colour": "str", "size": "str"})
    np.testing.assert_array_equal(scorer.predict_proba(cast),
                                  _string_fed(onnx_bytes, frame, "probabilities", 1))


def test_an_encoder_that_rejects_unknown_values_is_not_folded(tmp_path: Path) -> None:
    onnx_bytes, _ = _imputing_model(tmp_path, handle_unknown="error")
    coded = code_string_inputs(onnx_bytes)
    assert dict(coded.categories) == {} and coded.onnx_bytes == onnx_bytes


def test_the_demo_models_fold_and_score_as_before(demo_builds: dict[str, Any]) -> None:
    for build in demo_builds.values():
        archive = Path(build.archive_path)
        before = hashlib.sha256(archive.read_bytes()).hexdigest()
        model = verify(archive)
        scorer = open_session(model, SessionSettings(provider="cpu"))
        categorical = [f.name for f in model.manifest.features if f.kind == "categorical"]
        numeric = [f.name for f in model.manifest.features if f.kind == "numeric"]
        assert set(scorer.coded) == set(categorical)
        frame = _every_value({c: list(scorer.coded[c]) for c in categorical}, numeric, 1001)
        string_graph = unzip_probabilities(model.onnx_bytes, model.manifest.output.name)
        expected = _string_fed(string_graph, frame, model.manifest.output.name,
                               model.manifest.output.positive_index or 0)
        np.testing.assert_array_equal(scorer.predict_proba(frame), expected)
        np.testing.assert_array_equal(
            scorer.predict_proba(frame.astype({c: "category" for c in categorical})), expected)
        # an in-memory rewrite: the verified archive and its bytes are untouched
        assert hashlib.sha256(archive.read_bytes()).hexdigest() == before
        assert verify(archive).onnx_bytes == model.onnx_bytes


# --- hand-built graphs that must not fold ----------------------------------------------------

def _cone_graph(case: str) -> bytes:
    """Inputs a and b ([N, 1] strings) reaching a one-hot encoder through string nodes."""
    ml = "ai.onnx.ml"
    merged = helper.make_node("Concat", ["a", "b"], ["ab"], axis=1)
    pick_a = helper.make_node("ArrayFeatureExtractor", ["ab", "i0"], ["col"], domain=ml)
    nodes = [merged, pick_a]
    outputs = [("onehot", TensorProto.FLOAT)]
    if case == "two inputs":  # where a is "", take b: the encoder reads both inputs
        nodes += [helper.make_node("ArrayFeatureExtractor", ["ab", "i1"], ["colb"], domain=ml),
                  helper.make_node("LabelEncoder", ["col"], ["isnull"], domain=ml,
                                   keys_strings=[""], values_int64s=[1], default_int64=0),
                  helper.make_node("Cast", ["isnull"], ["cond"], to=TensorProto.BOOL),
                  helper.make_node("Where", ["cond", "colb", "col"], ["fed"])]
    elif case == "string op":
        nodes.append(helper.make_node("StringNormalizer", ["col"], ["fed"],
                                      case_change_action="LOWER"))
    elif case == "cast of strings":  # parses the strings: "1" and "1.0" would meet
        nodes += [helper.make_node("Cast", ["col"], ["parsed"], to=TensorProto.FLOAT),
                  helper.make_node("Cast", ["parsed"], ["fed"], to=TensorProto.STRING)]
    elif case == "output read elsewhere":
        nodes.append(helper.make_node("Identity", ["col"], ["fed"]))
        outputs.append(("col", TensorProto.STRING))
    else:  # "folds": the control, an Identity between the extractor and the encoder
        nodes.append(helper.make_node("Identity", ["col"], ["fed"]))
    nodes.append(helper.make_node("OneHotEncoder", ["fed"], ["onehot"], domain=ml,
                                  cats_strings=["p", "q"], zeros=1))
    if case not in ("two inputs", "string op", "cast of strings"):
        nodes.append(helper.make_node("OneHotEncoder", ["colb"], ["onehot_b"], domain=ml,
                                      cats_strings=["r"], zeros=1))
        nodes.insert(2, helper.make_node("ArrayFeatureExtractor", ["ab", "i1"], ["colb"],
                                         domain=ml))
        outputs.append(("onehot_b", TensorProto.FLOAT))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.STRING, [None, 1])
                     for n in ("a", "b")],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        initializer=[helper.make_tensor("i0", TensorProto.INT64, [1], [0]),
                     helper.make_tensor("i1", TensorProto.INT64, [1], [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("ai.onnx.ml", 3)]
                             ).SerializeToString()


@pytest.mark.parametrize("case", ["two inputs", "string op", "cast of strings",
                                  "output read elsewhere"])
def test_cones_that_are_left_alone(case: str) -> None:
    data = _cone_graph(case)
    coded = code_string_inputs(data)
    assert dict(coded.categories) == {} and coded.onnx_bytes == data


def test_the_hand_built_control_folds() -> None:
    coded = code_string_inputs(_cone_graph("folds"))
    assert dict(coded.categories) == {"a": ("p", "q"), "b": ("r",)}
    sess = ort.InferenceSession(coded.onnx_bytes, providers=["CPUExecutionProvider"])
    onehot, onehot_b = sess.run(None, {"a": np.array([[1], [0], [-1]], dtype=np.int64),
                                       "b": np.array([[0], [-1], [0]], dtype=np.int64)})
    np.testing.assert_array_equal(onehot.reshape(3, 2), [[0, 1], [1, 0], [0, 0]])
    np.testing.assert_array_equal(onehot_b.reshape(3, 1), [[1], [0], [1]])
