"""Tests for modelgate.onnx.artifact, .manifest and .graph_checks: manifest validation, the manifest
against its graph, packaging and verification."""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from modelgate.onnx.artifact import ArtifactError, archive_sha256, package, verify
from modelgate.onnx.graph_checks import check_manifest_against_graph
from modelgate.onnx.manifest import Manifest

OPSET = 17


def _tiny_graph(*, opset: int = OPSET) -> bytes:
    """x (float [N,1]) and c (string [N,1]) -> probabilities [N,2] (c is unused)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 1])
    c = helper.make_tensor_value_info("c", TensorProto.STRING, [None, 1])
    out = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["p"]),
        helper.make_node("Sub", ["one", "p"], ["q"]),
        helper.make_node("Concat", ["q", "p"], ["probabilities"], axis=1),
    ]
    one = helper.make_tensor("one", TensorProto.FLOAT, [1, 1], [1.0])
    graph = helper.make_graph(nodes, "tiny", [x, c], [out], initializer=[one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _manifest_dict(**overrides: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "format_version": 1, "name": "tiny", "version": "1", "opset": OPSET,
        "features": [{"name": "x", "kind": "numeric"}, {"name": "c", "kind": "categorical"}],
        "label": {"column": "y", "positive": 1},
        "output": {"name": "probabilities", "positive_index": 1},
        "threshold": 0.5, "sensitive_features": ["group"], "id_column": "row_id",
    }
    d.update(overrides)
    return d


@pytest.fixture()
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    onnx_path = tmp_path / "src" / "model.onnx"
    onnx_path.parent.mkdir()
    onnx_path.write_bytes(_tiny_graph())
    manifest_path = tmp_path / "src" / "manifest.json"
    manifest_path.write_text(json.dumps(_manifest_dict()))
    return onnx_path, manifest_path


def _write_tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


# --- package / verify round trip -------------------------------------------------------------

def test_round_trip(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    onnx_path, manifest_path = inputs
    archive = package(onnx_path, manifest_path, tmp_path / "out")
    expected_sha = hashlib.sha256(onnx_path.read_bytes()).hexdigest()
    assert archive.name == f"model-{expected_sha[:8]}-v1.tar.gz"
    loaded = verify(archive)
    assert loaded.onnx_bytes == onnx_path.read_bytes()
    assert loaded.manifest.sha256 == expected_sha
    assert loaded.archive_sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert loaded.path == archive
    assert [f.name for f in loaded.manifest.features] == ["x", "c"]
    assert loaded.manifest.id_column == "row_id"
    stored = json.loads(_members(archive)["manifest.json"])
    assert stored["sha256"] == expected_sha and stored["format_version"] == 1


def test_package_replaces_stale_sha(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    onnx_path, manifest_path = inputs
    manifest_path.write_text(json.dumps(_manifest_dict(sha256="f" * 64)))
    loaded = verify(package(onnx_path, manifest_path, tmp_path / "out"))
    assert loaded.manifest.sha256 == hashlib.sha256(onnx_path.read_bytes()).hexdigest()


def test_packaging_the_same_files_again_rewrites_the_same_archive(inputs: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    onnx_path, manifest_path = inputs
    first = package(onnx_path, manifest_path, tmp_path / "out")
    before = first.read_bytes()
    assert package(onnx_path, manifest_path, tmp_path / "out") == first
    assert first.read_bytes() == before


def test_another_manifest_for_the_same_model_and_version_is_refused(inputs: tuple[Path, Path],
                                                                    tmp_path: Path) -> None:
    onnx_path, manifest_path = inputs
    first = package(onnx_path, manifest_path, tmp_path / "out")
    before = first.read_bytes()
    manifest_path.write_text(json.dumps(_manifest_dict(name="another-model")))
    with pytest.raises(ArtifactError, match=r"already holds an archive of this model file at "
                                            r"version '1' with a different manifest"):
        package(onnx_path, manifest_path, tmp_path / "out")
    assert first.read_bytes() == before  # the first archive is kept as it was
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [first.name]


def test_archive_bytes_are_deterministic(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    onnx_path, manifest_path = inputs
    first = package(onnx_path, manifest_path, tmp_path / "a").read_bytes()
    onnx_path.touch()  # a newer file mtime must not leak into the archive
    second = package(onnx_path, manifest_path, tmp_path / "b").read_bytes()
    assert first == second
    assert first[4:8] == b"\x00\x00\x00\x00"  # gzip header MTIME field (RFC 1952)
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:gz") as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == ["manifest.json", "model.onnx"]
    for info in infos:
        assert (info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode) == (
            0, 0, 0, "", "", 0o644)


def test_archive_sha256_matches_hashlib(tmp_path: Path) -> None:
    data = bytes(range(256)) * 9000  # > one 1 MiB read chunk
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert archive_sha256(path) == hashlib.sha256(data).hexdigest()


# --- verify failures -------------------------------------------------------------------------

def test_altered_model_names_both_hashes(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    onnx_path, manifest_path = inputs
    members = _members(package(onnx_path, manifest_path, tmp_path / "out"))
    model = bytearray(members["model.onnx"])
    model[-1] ^= 0x01
    members["model.onnx"] = bytes(model)
    forged = _write_tar(tmp_path / "forged.tar.gz", members)
    expected = hashlib.sha256(onnx_path.read_bytes()).hexdigest()
    actual = hashlib.sha256(bytes(model)).hexdigest()
    with pytest.raises(ArtifactError, match="sha256 mismatch") as err:
        verify(forged)
    assert expected in str(err.value) and actual in str(err.value)


@pytest.mark.parametrize("dropped", ["manifest.json", "model.onnx"],
                         ids=["no-manifest", "no-model"])
def test_missing_member_is_named(inputs: tuple[Path, Path], tmp_path: Path, dropped: str) -> None:
    members = _members(package(*inputs, tmp_path / "out"))
    del members[dropped]
    with pytest.raises(ArtifactError, match=f"no member '{dropped}'"):
        verify(_write_tar(tmp_path / "partial.tar.gz", members))


@pytest.mark.parametrize("evil", ["../evil.txt", "/tmp/evil.txt", "a/../../evil.txt"],
                         ids=["dotdot", "absolute", "nested-dotdot"])
def test_path_traversal_member_is_rejected(inputs: tuple[Path, Path], tmp_path: Path,
                                           evil: str) -> None:
    members = _members(package(*inputs, tmp_path / "out"))
    members[evil] = b"pwned"
    archive = _write_tar(tmp_path / "evil.tar.gz", members)
    with pytest.raises(ArtifactError, match="unsafe member name") as err:
        verify(archive)
    assert repr(evil) in str(err.value)
    assert not (tmp_path / "evil.txt").exists()


def test_unexpected_member_is_refused_naming_it(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    """``tar -xzf`` would unpack it beside the model: an archive holds the two members only."""
    members = _members(package(*inputs, tmp_path / "out"))
    members["README.txt"] = b"notes"
    with pytest.raises(ArtifactError, match="member 'README.txt': unexpected member"):
        verify(_write_tar(tmp_path / "extra.tar.gz", members))


@pytest.mark.parametrize("content", [b"", b"not a tarball at all", b"\x1f\x8b\x08\x00garbage"],
                         ids=["empty", "text", "bad-gzip"])
def test_corrupt_archive_names_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.tar.gz"
    path.write_bytes(content)
    with pytest.raises(ArtifactError, match="broken.tar.gz"):
        verify(path)


def test_truncated_archive_names_file(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    data = package(*inputs, tmp_path / "out").read_bytes()
    path = tmp_path / "cut.tar.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="cut.tar.gz"):
        verify(path)


def test_missing_archive(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist"):
        verify(tmp_path / "nope.tar.gz")


# --- manifest against graph ------------------------------------------------------------------

def _package_with(inputs: tuple[Path, Path], tmp_path: Path, **overrides: Any) -> Path:
    onnx_path, manifest_path = inputs
    manifest_path.write_text(json.dumps(_manifest_dict(**overrides)))
    return package(onnx_path, manifest_path, tmp_path / "out")


def test_feature_not_in_graph_names_feature(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    features = [*_manifest_dict()["features"], {"name": "ghost", "kind": "numeric"}]
    with pytest.raises(ArtifactError, match="'ghost' is not an input of the graph"):
        _package_with(inputs, tmp_path, features=features)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_graph_input_missing_from_manifest(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"graph inputs \['c'\] are not listed"):
        _package_with(inputs, tmp_path, features=[{"name": "x", "kind": "numeric"}])


def test_kind_must_match_element_type(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    features = [{"name": "x", "kind": "categorical"}, {"name": "c", "kind": "categorical"}]
    with pytest.raises(ArtifactError, match="'x' is categorical: expected .*STRING, got FLOAT"):
        _package_with(inputs, tmp_path, features=features)


def test_output_name_must_exist(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="'output_probability' is not a graph output"):
        _package_with(inputs, tmp_path,
                      output={"name": "output_probability", "positive_index": 1})


def test_opset_must_match(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"opset.*17.*got 15"):
        _package_with(inputs, tmp_path, opset=15)


def test_not_onnx_bytes() -> None:
    manifest = Manifest.from_dict(_manifest_dict(sha256="0" * 64))
    with pytest.raises(ArtifactError, match="not a valid ONNX model"):
        check_manifest_against_graph(manifest, b"\xff\xfe not protobuf \x00\x01")


# --- manifest validation ---------------------------------------------------------------------

def _without(key: str) -> dict[str, Any]:
    d = _manifest_dict(sha256="a" * 64)
    del d[key]
    return d


BAD_MANIFESTS = [
    (_without("label"), "<manifest>", "missing.*label"),
    (_without("threshold"), "threshold", "binary_classification.*got None"),
    (_manifest_dict(sha256="a" * 64, task="ranking"), "task", "got 'ranking'"),
    (_manifest_dict(sha256="a" * 64, task="regression", label={"column": "y"}, threshold=None,
                    output={"name": "variable", "positive_index": 0}),
     "output.positive_index", "only binary_classification"),
    (_manifest_dict(sha256="a" * 64, task="regression", threshold=None,
                    output={"name": "variable"}), "label.positive", "only binary_classification"),
    (_manifest_dict(sha256="a" * 64, task="multiclass_classification", label={"column": "y"},
                    output={"name": "p"}), "threshold", "only binary_classification"),
    (_manifest_dict(sha256="a" * 64, output={"name": "p", "classes": ["a", "a"]}),
     "output.classes", "distinct"),
    (_manifest_dict(sha256="a" * 64, output={"name": "p", "classes": [0, 1, 2]}),
     "output.classes", "2 classes.*multiclass"),
    (_manifest_dict(sha256="a" * 64, extra=1), "<manifest>", "unknown.*extra"),
    (_manifest_dict(sha256="a" * 64, format_version=2), "format_version", "got 2"),
    (_manifest_dict(sha256="a" * 64, threshold=1.0), "threshold", r"\(0, 1\), got 1.0"),
    (_manifest_dict(sha256="a" * 64, threshold="0.5"), "threshold", "got '0.5'"),
    (_manifest_dict(sha256="a" * 64, threshold=True), "threshold", "got True"),
    (_manifest_dict(sha256="a" * 64, version=2), "version", "got 2"),
    (_manifest_dict(sha256="a" * 64, version="../x"), "version", "got '../x'"),
    (_manifest_dict(sha256="XYZ"), "sha256", "got 'XYZ'"),
    (_manifest_dict(sha256="a" * 64, opset=0), "opset", "got 0"),
    (_manifest_dict(sha256="a" * 64, features=[]), "features", "got \\[\\]"),
    (_manifest_dict(sha256="a" * 64, features=[{"name": "x", "kind": "text"}]),
     "features[0].kind", "got 'text'"),
    (_manifest_dict(sha256="a" * 64, features=[{"name": "x", "kind": "numeric"}] * 2),
     "features", "duplicates \\['x'\\]"),
    (_manifest_dict(sha256="a" * 64,
                    features=[{"name": "x", "kind": "numeric", "allow_missing": "yes"}]),
     "features[0].allow_missing", "got 'yes'"),
    (_manifest_dict(sha256="a" * 64, label={"column": "y"}), "label.positive", "binary_classification"),
    (_manifest_dict(sha256="a" * 64, label={"column": "y", "positive": 1.5}),
     "label.positive", "got 1.5"),
    (_manifest_dict(sha256="a" * 64, output={"name": "p", "positive_index": -1}),
     "output.positive_index", "got -1"),
    (_manifest_dict(sha256="a" * 64, sensitive_features="gender"),
     "sensitive_features", "got 'gender'"),
    (_manifest_dict(sha256="a" * 64, id_column=""), "id_column", "got ''"),
    ([1, 2], "<manifest>", "JSON object"),
]


@pytest.mark.parametrize(("data", "key", "detail"), BAD_MANIFESTS,
                         ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(BAD_MANIFESTS)])
def test_manifest_errors_name_key_and_value(data: Any, key: str, detail: str) -> None:
    with pytest.raises(ArtifactError, match=detail) as err:
        Manifest.from_dict(copy.deepcopy(data))
    assert f"manifest key {key!r}" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_allow_missing_defaults_false() -> None:
    manifest = Manifest.from_dict(_manifest_dict(sha256="a" * 64))
    assert [f.allow_missing for f in manifest.features] == [False, False]


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
_no_nul = st.characters(exclude_characters="\x00")


@settings(max_examples=50, deadline=None)
@given(
    names=st.lists(_names, min_size=1, max_size=6, unique=True),
    kinds=st.lists(st.sampled_from(["numeric", "categorical"]), min_size=6, max_size=6),
    allow=st.lists(st.booleans(), min_size=6, max_size=6),
    threshold=st.floats(min_value=1e-6, max_value=1 - 1e-6),
    # any text but NUL, which the manifest refuses (PostgreSQL cannot store it)
    positive=st.one_of(st.integers(), st.text(_no_nul, max_size=5), st.booleans()),
    description=st.one_of(st.none(), st.text(_no_nul, max_size=20)),
)
def test_manifest_round_trips(names: list[str], kinds: list[str], allow: list[bool],
                              threshold: float, positive: Any, description: str | None) -> None:
    features = [{"name": n, "kind": k, "allow_missing": a}
                for n, k, a in zip(names, kinds, allow, strict=False)]
    data = _manifest_dict(sha256="b" * 64, features=features, threshold=threshold,
                          label={"column": "y", "positive": positive})
    if description is not None:
        data["description"] = description
    manifest = Manifest.from_dict(data)
    assert manifest.to_dict() == data
    assert Manifest.from_dict(json.loads(manifest.to_json_bytes())) == manifest


def test_gzip_helper_is_real_gzip(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    data = package(*inputs, tmp_path / "out").read_bytes()
    raw = gzip.decompress(data)
    assert raw[257:262] == b"ustar"  # POSIX tar magic of the first header
