"""Nothing accepted at ``model package``/``verify``/``register`` fails later (issue #37, point 5):
graphs ONNX Runtime cannot load, archives whose members ``tar -xzf`` would unpack otherwise
than modelgate reads them, names too long for a file name or shown disguised, numeric CLI
arguments past what the code they reach takes, and nested categorical columns.

Every input is made here: tiny graphs with ``onnx.helper``, archives with ``tarfile``, parquet
files with pyarrow. Expected messages name the thing the test itself put in.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path
from typing import Any

import onnx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from onnx import TensorProto, helper
from support.tiny_graphs import archive, binary_graph

from modelgate import cli
from modelgate.config import Settings
from modelgate.onnx.artifact import ArtifactError, package, verify
from modelgate.onnx.scoring import ScoringError, open_session, score_parquet, settings_from_os_environ

MANIFEST: dict[str, Any] = {
    "format_version": 1, "name": "tiny", "version": "1",
    "features": [{"name": "x", "kind": "numeric"}],
    "label": {"column": "y", "positive": 1}, "threshold": 0.5,
    "output": {"name": "probabilities", "positive_index": 1}, "sensitive_features": []}


def _graph(node: onnx.NodeProto, opsets: dict[str, int]) -> bytes:
    """x FLOAT [N, 1] -> one node -> probabilities FLOAT [N, 2]; ``onnx`` itself accepts it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 1])
    out = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])
    model = helper.make_model(helper.make_graph([node], "t", [x], [out]),
                              opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    return model.SerializeToString()


UNLOADABLE = {
    "unknown-domain": (_graph(helper.make_node("Frob", ["x"], ["probabilities"], domain="com.acme"),
                              {"": 17, "com.acme": 1}),
                       "op 'Frob' of domain 'com.acme' is not known to ONNX Runtime"),
    "opset-99": (_graph(helper.make_node("Concat", ["x", "x"], ["probabilities"], axis=1), {"": 99}),
                 "the graph imports domain 'ai.onnx' at opset 99, ONNX Runtime supports it up to"),
    "ml-opset-99": (_graph(helper.make_node("Concat", ["x", "x"], ["probabilities"], axis=1),
                           {"": 17, "ai.onnx.ml": 99}),
                    "imports domain 'ai.onnx.ml' at opset 99"),
    "unknown-op": (_graph(helper.make_node("Frobnicate", ["x"], ["probabilities"]), {"": 17}),
                   "op 'Frobnicate' of domain 'ai.onnx' does not exist at opset 17"),
}


def _tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
                continue
            info = tarfile.TarInfo(member[0])
            info.size = len(member[1])
            tar.addfile(info, io.BytesIO(member[1]))
    return path


def _sources(where: Path, onnx_bytes: bytes, **manifest: Any) -> tuple[Path, Path]:
    where.mkdir(parents=True, exist_ok=True)
    (where / "model.onnx").write_bytes(onnx_bytes)
    (where / "manifest.json").write_text(json.dumps({**MANIFEST, **manifest}))
    return where / "model.onnx", where / "manifest.json"


def _hand_made_archive(path: Path, onnx_bytes: bytes) -> Path:
    """An archive built without ``package`` (its manifest carries the right sha256)."""
    import hashlib

    manifest = {**MANIFEST, "sha256": hashlib.sha256(onnx_bytes).hexdigest()}
    return _tar(path, [("manifest.json", json.dumps(manifest).encode()), ("model.onnx", onnx_bytes)])


# --- graphs ONNX Runtime cannot load ------------------------------------------------------------

@pytest.mark.parametrize(("graph", "named"), UNLOADABLE.values(), ids=UNLOADABLE.keys())
def test_package_refuses_a_graph_onnx_runtime_cannot_load_naming_why(
        tmp_path: Path, graph: bytes, named: str) -> None:
    with pytest.raises(ArtifactError, match="ONNX Runtime .* cannot load model.onnx") as err:
        package(*_sources(tmp_path / "src", graph), tmp_path / "dist")
    assert named in str(err.value)
    assert "onnxruntime_src" not in str(err.value)  # ORT's C++ source location is dropped
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").iterdir())


@pytest.mark.parametrize("command", ["verify", "register"])
def test_verify_and_register_refuse_a_hand_made_archive_of_such_a_graph(
        tmp_path: Path, settings_env: Settings, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    graph, named = UNLOADABLE["unknown-domain"]
    path = _hand_made_archive(tmp_path / "model-x-v1.tar.gz", graph)
    assert cli.main(["model", command, str(path)]) == 1
    err = capsys.readouterr().err
    assert "cannot load model.onnx" in err and named in err
    assert cli.main(["model", "list", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # nothing was registered


def test_a_loadable_graph_still_packages_and_verifies(tmp_path: Path) -> None:
    loaded = archive(tmp_path, binary_graph("FLOAT"))
    assert verify(loaded.path).manifest.sha256 == loaded.manifest.sha256


# --- archive members ------------------------------------------------------------------------------

def _good_members(tmp_path: Path) -> dict[str, bytes]:
    loaded = archive(tmp_path / "good", binary_graph("FLOAT"))
    with tarfile.open(loaded.path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


def _link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def _directory(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


MEMBER_CASES = {
    # tar -xzf unpacks the second manifest over the first one modelgate would have read
    "dot-slash-duplicate": (lambda m: [("manifest.json", m["manifest.json"]),
                                       ("model.onnx", m["model.onnx"]),
                                       ("./manifest.json", b'{"name": "other"}')],
                            "member './manifest.json': it unpacks to the same file as member "
                            "'manifest.json'"),
    "exact-duplicate": (lambda m: [*m.items(), ("model.onnx", b"other bytes")],
                        "member 'model.onnx': it unpacks to the same file"),
    "double-slash-duplicate": (lambda m: [*m.items(), (".//model.onnx", b"x")],
                               "member './/model.onnx': it unpacks to the same file"),
    "dot-slash-only": (lambda m: [("./" + k, v) for k, v in m.items()],
                       "member './manifest.json': unexpected member"),
    "dot-directory": (lambda m: [_directory("./"), *m.items()], "member '.': unexpected member"),
    "directory": (lambda m: [("manifest.json", m["manifest.json"]), _directory("model.onnx")],
                  "member 'model.onnx': member must be a regular file, it is a directory"),
    "symlink": (lambda m: [("manifest.json", m["manifest.json"]),
                           _link("model.onnx", "/etc/passwd", tarfile.SYMTYPE)],
                "member 'model.onnx': member must be a regular file, it is a symbolic link "
                "(to '/etc/passwd')"),
    "hardlink": (lambda m: [("manifest.json", m["manifest.json"]),
                            _link("model.onnx", "manifest.json", tarfile.LNKTYPE)],
                 "member 'model.onnx': member must be a regular file, it is a hard link"),
    "extra-file": (lambda m: [*m.items(), ("notes/README.txt", b"hi")],
                   "member 'notes/README.txt': unexpected member"),
    "absolute": (lambda m: [*m.items(), ("/tmp/evil", b"x")],
                 "member '/tmp/evil': unsafe member name"),
    "dotdot": (lambda m: [*m.items(), ("a/../../evil", b"x")],
               "member 'a/../../evil': unsafe member name"),
    "backslash-dotdot": (lambda m: [*m.items(), ("..\\evil", b"x")],
                         "member '..\\\\evil': unsafe member name"),
}


@pytest.mark.parametrize(("members", "named"), MEMBER_CASES.values(), ids=MEMBER_CASES.keys())
def test_archive_members_other_than_the_two_files_are_refused_naming_the_member(
        tmp_path: Path, members: Any, named: str) -> None:
    path = _tar(tmp_path / "model-x-v1.tar.gz", members(_good_members(tmp_path)))
    with pytest.raises(ArtifactError) as err:
        verify(path)
    assert named in str(err.value)
    assert "model-x-v1.tar.gz" in str(err.value)


# --- names ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("manifest", "key"), [
    ({"name": "é" * 101}, "'name'"),  # 101 characters, 202 bytes of UTF-8
    ({"version": "1" * 201}, "'version'"),
    ({"sensitive_features": ["g" * 201]}, "'sensitive_features[0]'"),
    ({"label": {"column": "y" * 300, "positive": 1}}, "'label.column'"),
], ids=["name-multibyte", "version", "sensitive-feature", "label"])
def test_names_over_200_bytes_are_refused_at_package_naming_the_key(
        tmp_path: Path, manifest: dict[str, Any], key: str) -> None:
    with pytest.raises(ArtifactError,
                       match=re.escape(f"manifest key {key}: expected at most 200 bytes")):
        archive(tmp_path, binary_graph("FLOAT"), **manifest)


def test_a_long_feature_name_is_refused_naming_the_feature(tmp_path: Path) -> None:
    long = "f" * 201
    x = helper.make_tensor_value_info(long, TensorProto.FLOAT, [None, 1])
    out = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])
    node = helper.make_node("Concat", [long, long], ["probabilities"], axis=1)
    graph = helper.make_model(helper.make_graph([node], "t", [x], [out]),
                              opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(ArtifactError, match="manifest key 'features\\[0\\].name': expected at most"):
        package(*_sources(tmp_path, graph, features=[{"name": long, "kind": "numeric"}]),
                tmp_path / "dist")


def test_names_of_200_bytes_package_register_and_list(
        tmp_path: Path, settings_env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    name, version = "n" * 200, "v" * 200
    loaded = archive(tmp_path, binary_graph("FLOAT"), name=name, version=version)
    assert cli.main(["model", "register", str(loaded.path)]) == 0
    capsys.readouterr()
    assert cli.main(["model", "list", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(v["model_name"], v["version"]) for v in listed] == [(name, version)]


@pytest.mark.parametrize("hidden", ["\u202e", "\u200b", "\u2066", "\ufeff", "\u061c"],
                         ids=["rlo", "zwsp", "lri", "bom", "alm"])
def test_bidirectional_or_zero_width_characters_in_a_column_name_are_refused(
        tmp_path: Path, hidden: str) -> None:
    with pytest.raises(ArtifactError, match="manifest key 'label.column': expected a column name "
                                            "without control characters"):
        archive(tmp_path, binary_graph("FLOAT"), label={"column": f"y{hidden}", "positive": 1})


def test_a_disguised_model_name_is_shown_escaped_by_every_command(
        tmp_path: Path, settings_env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    """The model name may hold them (it is stored as given) but is never printed raw."""
    name = "churn\u202egnp.exe\u200b"
    loaded = archive(tmp_path, binary_graph("FLOAT"), name=name)
    shown = "churn\\u202egnp.exe\\u200b"
    for argv in (["model", "verify", str(loaded.path)], ["model", "register", str(loaded.path)],
                 ["model", "list"], ["model", "show", name]):
        assert cli.main(argv) == 0, argv
        out = capsys.readouterr().out
        assert shown in out and "\u202e" not in out and "\u200b" not in out, argv


# --- numeric arguments ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["gc", "--older-than-days", "1e308"], ["gc", "--older-than-days", "nan"],
    ["gc", "--older-than-days", "inf"], ["gc", "--older-than-days", "-1"],
    ["gc", "--older-than-days=-inf"], ["gc", "--older-than-days", "36501"],
    ["model", "show", "m", "--runs", str(2**63)], ["model", "show", "m", "--runs", "0"],
    ["report", "link", str(2**63)], ["report", "link", "0"],
    ["score", "--model", "m", "--data", "d", "--out", "o", "--batch-rows", str(2**31)],
], ids=lambda a: " ".join(a[:1] + a[-2:]))
def test_out_of_range_numbers_exit_2_naming_the_argument(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    flag = next((a.split("=")[0] for a in reversed(argv) if a.startswith("--")), "run_id")
    assert f"argument {flag}: must be" in err


# --- nested categorical columns -------------------------------------------------------------------

def _categorical_model(tmp_path: Path) -> Any:
    c = helper.make_tensor_value_info("c", TensorProto.STRING, [None, 1])
    out = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])
    nodes = [helper.make_node("LabelEncoder", ["c"], ["p"], domain="ai.onnx.ml",
                              keys_strings=["a", "b"], values_floats=[0.2, 0.8], default_float=0.5),
             helper.make_node("Sub", ["one", "p"], ["q"]),
             helper.make_node("Concat", ["q", "p"], ["probabilities"], axis=1)]
    graph = helper.make_graph(nodes, "t", [c], [out], initializer=[
        helper.make_tensor("one", TensorProto.FLOAT, [1, 1], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 3)])
    loaded = archive(tmp_path / "model", model.SerializeToString(),
                     features=[{"name": "c", "kind": "categorical"}])
    return open_session(loaded, settings_from_os_environ())


@pytest.mark.parametrize(("column", "type_text"), [
    (pa.array([{"a": 1}, {"a": 2}]), "struct<a: int64>"),
    (pa.array([["a"], ["b", "a"]]), "list<"),
    (pa.array([[("k", 1)], [("k", 2)]], type=pa.map_(pa.string(), pa.int64())), "map<string"),
], ids=["struct", "list", "map"])
def test_a_nested_categorical_column_is_refused_naming_column_and_type(
        tmp_path: Path, column: pa.Array, type_text: str) -> None:
    scorer = _categorical_model(tmp_path)
    data = tmp_path / "data.parquet"
    pq.write_table(pa.table({"c": column, "row_id": [1, 2]}), data)
    with pytest.raises(ScoringError, match="categorical feature column 'c'") as err:
        score_parquet(scorer, data, tmp_path / "out.parquet")
    assert f"expected a flat column (string, dictionary, integer or boolean), got {type_text}" \
        in str(err.value)


def test_a_flat_categorical_column_still_scores(tmp_path: Path) -> None:
    scorer = _categorical_model(tmp_path)
    data = tmp_path / "data.parquet"
    pq.write_table(pa.table({"c": ["a", "b", "z"], "row_id": [1, 2, 3]}), data)
    score_parquet(scorer, data, tmp_path / "out.parquet")
    scores = pq.read_table(tmp_path / "out.parquet").column("score").to_pylist()
    assert scores == pytest.approx([0.2, 0.8, 0.5])  # the LabelEncoder's values, by hand


@pytest.mark.e2e
def test_names_of_200_bytes_evaluate_end_to_end(settings_env: Settings, tmp_path: Path) -> None:
    """Run keys, scratch folders, object keys and the downloaded archive stay file-name sized
    (about 15 s: a whole evaluation)."""
    import numpy as np
    import pandas as pd

    from modelgate.cli.runs import run_evaluation_locally

    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 2000.0, 200)
    frame = pd.DataFrame({"row_id": np.arange(200), "x": x, "y": (x > 0).astype(np.int64),
                          "group": np.where(np.arange(200) % 2 == 0, "a", "b")})
    frame.to_parquet(tmp_path / "heldout.parquet", index=False)
    model = archive(tmp_path / "m", binary_graph("FLOAT"), name="n" * 200, version="v" * 200,
                    sensitive_features=["group"]).path
    outcome = run_evaluation_locally(model, tmp_path / "heldout.parquet", None)
    assert outcome.payload["rows_scored"] == 200
