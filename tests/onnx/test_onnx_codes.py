"""Categorical inputs fed as int64 codes (modelgate.onnx.codes) give the string graph's outputs.

Every comparison runs two real ONNX Runtime sessions: the original graph fed strings, the
way a user's own session is fed, and modelgate's scorer on the rewritten graph.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from onnx import TensorProto, helper
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from modelgate.onnx.artifact import LoadedModel, package, verify
from modelgate.onnx.codes import code_string_inputs
from modelgate.onnx.scoring import ModelScorer, ScoringError, SessionSettings, open_session

COLOURS = np.array(["red", "green", "blue"], dtype=object)
SIZES = np.array(["S", "M", "L", "1"], dtype=object)


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "x": rng.normal(size=n),
        "colour": COLOURS[rng.integers(0, 3, size=n)],
        "size": SIZES[rng.integers(0, 4, size=n)],
    })


def _model(tmp: Path, encoder: object, *, allow_missing: bool = False) -> tuple[bytes, LoadedModel]:
    """A fitted pipeline (numeric x, categorical colour and size) as ONNX bytes and artifact."""
    rng = np.random.default_rng(11)
    frame = _frame(rng, 600)
    y = ((frame["colour"] == "red") ^ (frame["x"] > 0.3)).astype(int)
    pipe = Pipeline([
        ("pre", ColumnTransformer([("num", StandardScaler(), ["x"]),
                                   ("cat", encoder, ["colour", "size"])])),
        ("clf", LogisticRegression()),
    ]).fit(frame.astype({"x": np.float32}), y)
    types = [("x", FloatTensorType([None, 1])), ("colour", StringTensorType([None, 1])),
             ("size", StringTensorType([None, 1]))]
    onx = convert_sklearn(pipe, initial_types=types,
                          options={id(pipe.named_steps["clf"]): {"zipmap": False}},
                          target_opset={"": 17, "ai.onnx.ml": 3})
    opset = next(o.version for o in onx.opset_import if o.domain == "")
    (tmp / "model.onnx").write_bytes(onx.SerializeToString())
    (tmp / "manifest.json").write_text(json.dumps({
        "format_version": 1, "name": "coded", "version": "1", "opset": opset,
        "features": [{"name": "x", "kind": "numeric"},
                     {"name": "colour", "kind": "categorical", "allow_missing": allow_missing},
                     {"name": "size", "kind": "categorical", "allow_missing": allow_missing}],
        "label": {"column": "y", "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1},
        "threshold": 0.5, "sensitive_features": [],
    }))
    return onx.SerializeToString(), verify(package(tmp / "model.onnx", tmp / "manifest.json", tmp))


def _string_fed(onnx_bytes: bytes, frame: pd.DataFrame) -> np.ndarray:
    """The original graph fed the way a user feeds it: strings as an object array."""
    sess = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    feeds = {
        "x": frame["x"].to_numpy(dtype=np.float32).reshape(-1, 1),
        "colour": frame["colour"].to_numpy(dtype=object).reshape(-1, 1),
        "size": frame["size"].to_numpy(dtype=object).reshape(-1, 1),
    }
    return sess.run(["probabilities"], feeds)[0][:, 1].astype(np.float64)


def _scores_alike_in_each_dtype(scorer: ModelScorer, frame: pd.DataFrame, expected: np.ndarray,
                                dtypes: tuple[str, ...]) -> None:
    """The scorer's scores equal ``expected`` with the categorical columns in each dtype."""
    for dtype in dtypes:
        cast = frame.astype({"colour": dtype, "size": dtype})
        np.testing.assert_array_equal(scorer.predict_proba(cast), expected, err_msg=dtype)


@pytest.fixture(scope="module")
def ignoring(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, ModelScorer]:
    """One-hot encoder with handle_unknown='ignore' (unknown -> all zeros); missing allowed."""
    onnx_bytes, model = _model(tmp_path_factory.mktemp("ignore"),
                               OneHotEncoder(handle_unknown="ignore"), allow_missing=True)
    return onnx_bytes, open_session(model, SessionSettings(provider="cpu"))


def test_rewrite_turns_encoder_inputs_into_int64_codes(ignoring: tuple[bytes, ModelScorer]) -> None:
    onnx_bytes, scorer = ignoring
    coded = code_string_inputs(onnx_bytes)
    assert dict(coded.categories) == {"colour": ("blue", "green", "red"),
                                      "size": ("1", "L", "M", "S")}
    assert coded.unknown_is_error == frozenset()
    types = {i.name: i.type for i in scorer.session.get_inputs()}
    assert types == {"x": "tensor(float)", "colour": "tensor(int64)", "size": "tensor(int64)"}
    graph = onnx.load_from_string(coded.onnx_bytes).graph
    encoders = [n for n in graph.node if n.op_type == "OneHotEncoder"]
    assert len(encoders) == 2
    for node in encoders:
        names = {a.name for a in node.attribute}
        assert "cats_strings" not in names and "cats_int64s" in names


def test_codes_give_the_string_graphs_outputs_bit_for_bit(
        ignoring: tuple[bytes, ModelScorer]) -> None:
    onnx_bytes, scorer = ignoring
    for seed in range(4):
        frame = _frame(np.random.default_rng(seed), 3000)
        # values the encoder never saw and empty strings: all-zero one-hot rows
        frame.loc[frame.index[::7], "colour"] = "purple"
        frame.loc[frame.index[::11], "size"] = ""
        _scores_alike_in_each_dtype(scorer, frame, _string_fed(onnx_bytes, frame),
                                    ("object", "category", "str"))


def test_missing_values_are_fed_as_empty_strings(ignoring: tuple[bytes, ModelScorer]) -> None:
    onnx_bytes, scorer = ignoring
    frame = _frame(np.random.default_rng(5), 500)
    holes = frame.copy()
    holes.loc[holes.index[::5], "colour"] = None
    holes.loc[holes.index[::6], "size"] = np.nan
    expected = _string_fed(onnx_bytes, holes.fillna({"colour": "", "size": ""}))
    _scores_alike_in_each_dtype(scorer, holes, expected, ("object", "category"))


def test_non_string_values_are_stringified_as_before(ignoring: tuple[bytes, ModelScorer]) -> None:
    onnx_bytes, scorer = ignoring
    frame = _frame(np.random.default_rng(6), 40)
    mixed = frame.astype({"size": object})
    mixed.loc[mixed.index[::3], "size"] = 1  # str(1) == "1": a known category
    mixed.loc[mixed.index[1::3], "size"] = 1.0  # "1.0": unknown, although 1.0 == 1
    expected = _string_fed(onnx_bytes, mixed.astype({"size": str}))
    np.testing.assert_array_equal(scorer.predict_proba(mixed), expected)


def test_categories_changing_between_calls_are_not_served_from_the_cache(
        ignoring: tuple[bytes, ModelScorer]) -> None:
    onnx_bytes, scorer = ignoring
    frame = _frame(np.random.default_rng(8), 300)
    for order in (["red", "green", "blue"], ["blue", "red", "green"]):
        as_category = frame.astype({"colour": pd.CategoricalDtype(order), "size": "category"})
        np.testing.assert_array_equal(scorer.predict_proba(as_category),
                                      _string_fed(onnx_bytes, frame))


def test_an_encoder_that_rejects_unknown_values_still_rejects_them(tmp_path: Path) -> None:
    onnx_bytes, model = _model(tmp_path, OneHotEncoder(handle_unknown="error"))
    assert code_string_inputs(onnx_bytes).unknown_is_error == frozenset({"colour", "size"})
    scorer = open_session(model, SessionSettings(provider="cpu"))
    frame = _frame(np.random.default_rng(9), 200)
    np.testing.assert_array_equal(scorer.predict_proba(frame), _string_fed(onnx_bytes, frame))
    frame.loc[frame.index[:3], "colour"] = "purple"
    with pytest.raises(ScoringError, match=r"column 'colour': 3 rows hold values that are not"):
        scorer.predict_proba(frame)
    with pytest.raises(ScoringError, match=r"column 'colour': 3 rows"):
        scorer.predict_proba(frame.astype({"colour": "category"}))
    with pytest.raises(Exception):  # noqa: B017 - the string graph refuses them too (ORT's error)
        _string_fed(onnx_bytes, frame)


def test_inputs_with_other_consumers_stay_strings(tmp_path: Path) -> None:
    """An ordinal encoder (a LabelEncoder node in ONNX) is left alone."""
    onnx_bytes, model = _model(tmp_path, OrdinalEncoder(handle_unknown="use_encoded_value",
                                                       unknown_value=-1))
    assert dict(code_string_inputs(onnx_bytes).categories) == {}
    assert code_string_inputs(onnx_bytes).onnx_bytes == onnx_bytes
    scorer = open_session(model, SessionSettings(provider="cpu"))
    assert {i.type for i in scorer.session.get_inputs() if i.name != "x"} == {"tensor(string)"}
    frame = _frame(np.random.default_rng(10), 300)
    np.testing.assert_array_equal(scorer.predict_proba(frame), _string_fed(onnx_bytes, frame))


# --- hand-built graphs: what may and may not be rewritten ------------------------------------

def _graph(nodes: list[onnx.NodeProto], inputs: list[str], outputs: list[tuple[str, int]]) -> bytes:
    ins = [helper.make_tensor_value_info(n, TensorProto.STRING, [None, 1]) for n in inputs]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    model = helper.make_model(helper.make_graph(nodes, "g", ins, outs), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    return model.SerializeToString()


def _encoder(src: str, dst: str, cats: list[str], **attrs: int) -> onnx.NodeProto:
    return helper.make_node("OneHotEncoder", [src], [dst], domain="ai.onnx.ml",
                            cats_strings=cats, **attrs)


def test_two_encoders_with_the_same_categories_share_the_codes() -> None:
    data = _graph([_encoder("c", "a", ["p", "q"]), _encoder("c", "b", ["p", "q"])], ["c"],
                  [("a", TensorProto.FLOAT), ("b", TensorProto.FLOAT)])
    coded = code_string_inputs(data)
    assert dict(coded.categories) == {"c": ("p", "q")}
    sess = ort.InferenceSession(coded.onnx_bytes, providers=["CPUExecutionProvider"])
    a, b = sess.run(None, {"c": np.array([[1], [0], [-1]], dtype=np.int64)})
    expected = np.array([[[0, 1]], [[1, 0]], [[0, 0]]], dtype=np.float32)
    np.testing.assert_array_equal(a, expected)
    np.testing.assert_array_equal(b, expected)


@pytest.mark.parametrize("case", ["different categories", "different zeros", "graph output",
                                  "string op", "subgraph"])
def test_graphs_that_are_left_alone(case: str) -> None:
    enc = _encoder("c", "a", ["p", "q"])
    if case == "different categories":
        data = _graph([enc, _encoder("c", "b", ["q", "p"])], ["c"],
                      [("a", TensorProto.FLOAT), ("b", TensorProto.FLOAT)])
    elif case == "different zeros":
        data = _graph([enc, _encoder("c", "b", ["p", "q"], zeros=0)], ["c"],
                      [("a", TensorProto.FLOAT), ("b", TensorProto.FLOAT)])
    elif case == "graph output":
        data = _graph([enc, helper.make_node("Identity", ["c"], ["c_out"])], ["c"],
                      [("a", TensorProto.FLOAT), ("c_out", TensorProto.STRING)])
    elif case == "string op":
        norm = helper.make_node("StringNormalizer", ["c"], ["n"], case_change_action="LOWER")
        data = _graph([enc, norm], ["c"], [("a", TensorProto.FLOAT), ("n", TensorProto.STRING)])
    else:
        body_out = helper.make_tensor_value_info("o", TensorProto.STRING, None)
        body = helper.make_graph([helper.make_node("Identity", ["c"], ["o"])], "b", [], [body_out])
        cond = helper.make_node("Constant", [], ["t"], value=helper.make_tensor(
            "t", TensorProto.BOOL, [], [True]))
        branch = helper.make_node("If", ["t"], ["s"], then_branch=body, else_branch=body)
        data = _graph([enc, cond, branch], ["c"],
                      [("a", TensorProto.FLOAT), ("s", TensorProto.STRING)])
    coded = code_string_inputs(data)
    assert dict(coded.categories) == {} and coded.onnx_bytes == data
