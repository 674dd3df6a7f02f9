"""Model artifacts: a deterministic ``tar.gz`` holding ``model.onnx`` and ``manifest.json``.

An archive is named ``model-<first 8 hex of sha256(model.onnx)>-v<version>.tar.gz``.
The manifest (JSON, ``format_version: 1``) describes how to feed the graph: one ONNX
input per raw feature column (numeric -> float tensor ``[N, 1]``, categorical -> string
tensor ``[N, 1]``); all preprocessing lives inside the graph.

Manifest keys
-------------
``format_version`` (1), ``name``, ``version`` (string; letters, digits, ``.``, ``_``, ``-``),
``sha256`` (hex of ``model.onnx``), ``opset`` (the ai.onnx opset of the graph),
``features`` (ordered list of ``{"name", "kind": "numeric"|"categorical",
"allow_missing": bool = false}``), ``label`` (``{"column", "positive"}``),
``output`` (``{"name": <probability output>, "positive_index": int}``),
``threshold`` (float in (0, 1)), ``sensitive_features`` (data column names; they need
not be model inputs), optional ``description`` and ``id_column``.

``allow_missing`` says the graph itself copes with missing values in that column (e.g.
a skl2onnx ``SimpleImputer`` in front): missing numerics are fed as NaN and missing
categoricals as the empty string ``""``. When false, the scorer refuses such rows.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import math
import os
import re
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import onnx

from modelgate.files import atomic_write

__all__ = [
    "ArtifactError",
    "Feature",
    "LabelSpec",
    "LoadedModel",
    "Manifest",
    "OutputSpec",
    "archive_name",
    "archive_sha256",
    "check_manifest_against_graph",
    "package",
    "verify",
]

logger = logging.getLogger("modelgate.artifact")

FORMAT_VERSION = 1
MODEL_MEMBER = "model.onnx"
MANIFEST_MEMBER = "manifest.json"
_KINDS = ("numeric", "categorical")
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
_REQUIRED = (
    "format_version", "name", "version", "sha256", "opset", "features",
    "label", "output", "threshold", "sensitive_features",
)
_OPTIONAL = ("description", "id_column")
_CHUNK = 1 << 20


class ArtifactError(ValueError):
    """A model archive or manifest is malformed or does not match its graph."""


def _fail(key: str, expected: str, got: object) -> ArtifactError:
    return ArtifactError(f"manifest key {key!r}: expected {expected}, got {got!r}")


def _str(d: Mapping[str, Any], key: str, where: str) -> str:
    value = d.get(key)
    if not isinstance(value, str) or not value:
        raise _fail(f"{where}{key}", "a non-empty string", value)
    return value


def _int(value: object, key: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(key, f"an integer >= {minimum}", value)
    return value


def _exact_keys(d: object, key: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
                ) -> Mapping[str, Any]:
    if not isinstance(d, Mapping):
        raise _fail(key, "a JSON object", d)
    missing = [k for k in required if k not in d]
    if missing:
        raise _fail(key, f"keys {list(required)}", f"missing {missing}")
    extra = sorted(set(d) - set(required) - set(optional))
    if extra:
        raise _fail(key, f"only keys {list(required + optional)}", f"unknown {extra}")
    return d


@dataclass(frozen=True, slots=True)
class Feature:
    """One raw feature column, fed to the graph input of the same name."""

    name: str
    kind: Literal["numeric", "categorical"]
    allow_missing: bool = False

    @classmethod
    def from_dict(cls, d: object, index: int) -> Feature:
        """Validate one ``features[index]`` entry."""
        where = f"features[{index}]"
        d = _exact_keys(d, where, ("name", "kind"), ("allow_missing",))
        name = _str(d, "name", f"{where}.")
        kind = d["kind"]
        if kind not in _KINDS:
            raise _fail(f"{where}.kind", f"one of {list(_KINDS)}", kind)
        allow = d.get("allow_missing", False)
        if not isinstance(allow, bool):
            raise _fail(f"{where}.allow_missing", "true or false", allow)
        return cls(name=name, kind=kind, allow_missing=allow)

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the feature."""
        return {"name": self.name, "kind": self.kind, "allow_missing": self.allow_missing}


@dataclass(frozen=True, slots=True)
class LabelSpec:
    """The label column of the evaluation data and its positive value."""

    column: str
    positive: str | int | bool

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the label spec."""
        return {"column": self.column, "positive": self.positive}


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """The graph output holding class probabilities and the positive class's column."""

    name: str
    positive_index: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the output spec."""
        return {"name": self.name, "positive_index": self.positive_index}


def _parse_label(d: object) -> LabelSpec:
    d = _exact_keys(d, "label", ("column", "positive"))
    positive = d["positive"]
    if not isinstance(positive, str | int | bool):
        raise _fail("label.positive", "a string, integer or boolean", positive)
    return LabelSpec(column=_str(d, "column", "label."), positive=positive)


def _parse_output(d: object) -> OutputSpec:
    d = _exact_keys(d, "output", ("name", "positive_index"))
    index = _int(d["positive_index"], "output.positive_index", minimum=0)
    return OutputSpec(name=_str(d, "name", "output."), positive_index=index)


def _parse_features(value: object) -> tuple[Feature, ...]:
    if not isinstance(value, list) or not value:
        raise _fail("features", "a non-empty list", value)
    features = tuple(Feature.from_dict(f, i) for i, f in enumerate(value))
    names = [f.name for f in features]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise _fail("features", "unique feature names", f"duplicates {dupes}")
    return features


def _parse_names(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(key, "a list of non-empty strings", value)
    return tuple(value)


def _parse_threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail("threshold", "a number in (0, 1)", value)
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise _fail("threshold", "a number in (0, 1)", value)
    return float(value)


@dataclass(frozen=True, slots=True)
class Manifest:
    """Validated contents of ``manifest.json``.

    Examples
    --------
    >>> m = Manifest.from_dict({
    ...     "format_version": 1, "name": "toy", "version": "1", "sha256": "0" * 64,
    ...     "opset": 17, "features": [{"name": "x", "kind": "numeric"}],
    ...     "label": {"column": "y", "positive": 1},
    ...     "output": {"name": "probabilities", "positive_index": 1},
    ...     "threshold": 0.5, "sensitive_features": ["group"]})
    >>> m.features[0].kind, m.threshold
    ('numeric', 0.5)
    >>> Manifest.from_dict(m.to_dict()) == m
    True
    """

    name: str
    version: str
    sha256: str
    opset: int
    features: tuple[Feature, ...]
    label: LabelSpec
    output: OutputSpec
    threshold: float
    sensitive_features: tuple[str, ...]
    description: str | None = None
    id_column: str | None = None

    @classmethod
    def from_dict(cls, d: object) -> Manifest:
        """Validate a parsed manifest; every problem raises :class:`ArtifactError`."""
        d = _exact_keys(d, "<manifest>", _REQUIRED, _OPTIONAL)
        if d["format_version"] != FORMAT_VERSION or isinstance(d["format_version"], bool):
            raise _fail("format_version", str(FORMAT_VERSION), d["format_version"])
        version = d["version"]
        if not isinstance(version, str) or not _VERSION_RE.match(version):
            raise _fail("version", "a string of letters, digits, '.', '_', '-'", version)
        sha = d["sha256"]
        if not isinstance(sha, str) or not _HEX64_RE.match(sha):
            raise _fail("sha256", "64 lowercase hex digits", sha)
        description = d.get("description")
        if description is not None and not isinstance(description, str):
            raise _fail("description", "a string", description)
        id_column = d.get("id_column")
        if id_column is not None:
            id_column = _str(d, "id_column", "")
        return cls(
            name=_str(d, "name", ""), version=version, sha256=sha,
            opset=_int(d["opset"], "opset", minimum=1),
            features=_parse_features(d["features"]), label=_parse_label(d["label"]),
            output=_parse_output(d["output"]), threshold=_parse_threshold(d["threshold"]),
            sensitive_features=_parse_names(d["sensitive_features"], "sensitive_features"),
            description=description, id_column=id_column,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``format_version`` included; optional keys only when set)."""
        out: dict[str, Any] = {
            "format_version": FORMAT_VERSION, "name": self.name, "version": self.version,
            "sha256": self.sha256, "opset": self.opset,
            "features": [f.to_dict() for f in self.features],
            "label": self.label.to_dict(), "output": self.output.to_dict(),
            "threshold": self.threshold, "sensitive_features": list(self.sensitive_features),
        }
        if self.description is not None:
            out["description"] = self.description
        if self.id_column is not None:
            out["id_column"] = self.id_column
        return out

    def to_json_bytes(self) -> bytes:
        """Canonical JSON bytes (sorted keys, 2-space indent, trailing newline)."""
        return (json.dumps(self.to_dict(), sort_keys=True, indent=2) + "\n").encode("utf-8")


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A verified archive: its manifest, the ONNX bytes and the archive's own sha256."""

    manifest: Manifest
    onnx_bytes: bytes
    archive_sha256: str
    path: Path


def _sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def archive_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks.

    Parameters
    ----------
    path
        Any file, normally a model archive.

    Returns
    -------
    str
        64 lowercase hex digits.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"
    >>> _ = p.write_bytes(b"abc")
    >>> archive_sha256(p)[:16]
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def archive_name(sha256: str, version: str) -> str:
    """File name of an archive: ``model-<sha256[:8]>-v<version>.tar.gz``.

    Examples
    --------
    >>> archive_name("ab" * 32, "3")
    'model-abababab-v3.tar.gz'
    """
    return f"model-{sha256[:8]}-v{version}.tar.gz"


def _parse_graph(onnx_bytes: bytes, where: str) -> onnx.ModelProto:
    try:
        return onnx.load_model_from_string(onnx_bytes)
    except Exception as exc:  # protobuf raises DecodeError and others
        raise ArtifactError(f"{where}: model.onnx is not a valid ONNX model ({exc})") from exc


def _graph_inputs(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    initializers = {i.name for i in model.graph.initializer}
    return {i.name: i.type for i in model.graph.input if i.name not in initializers}


def _check_feature(feature: Feature, type_: onnx.TypeProto) -> None:
    want = onnx.TensorProto.FLOAT if feature.kind == "numeric" else onnx.TensorProto.STRING
    got = type_.tensor_type.elem_type
    if got != want:
        raise ArtifactError(
            f"feature {feature.name!r} is {feature.kind}: expected graph input of element type "
            f"{onnx.TensorProto.DataType.Name(want)}, "
            f"got {onnx.TensorProto.DataType.Name(got)}")
    dims = type_.tensor_type.shape.dim
    if len(dims) != 2 or (dims[1].HasField("dim_value") and dims[1].dim_value != 1):
        shape = [d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in dims]
        raise ArtifactError(
            f"feature {feature.name!r}: expected graph input shape [N, 1], got {shape}")


def check_manifest_against_graph(manifest: Manifest, onnx_bytes: bytes) -> None:
    """Check that a manifest describes the graph it ships with.

    Every manifest feature must be a graph input of the right element type and shape
    ``[N, 1]``, every graph input must be a manifest feature, the output name must
    exist and the recorded opset must equal the graph's ai.onnx opset.

    Parameters
    ----------
    manifest
        The validated manifest.
    onnx_bytes
        Serialised ONNX model.

    Raises
    ------
    ArtifactError
        Naming the feature, output or opset that disagrees.
    """
    model = _parse_graph(onnx_bytes, f"model {manifest.name!r}")
    inputs = _graph_inputs(model)
    for feature in manifest.features:
        if feature.name not in inputs:
            raise ArtifactError(
                f"manifest feature {feature.name!r} is not an input of the graph; "
                f"graph inputs are {sorted(inputs)}")
        _check_feature(feature, inputs[feature.name])
    extra = sorted(set(inputs) - {f.name for f in manifest.features})
    if extra:
        raise ArtifactError(f"graph inputs {extra} are not listed in the manifest features")
    outputs = [o.name for o in model.graph.output]
    if manifest.output.name not in outputs:
        raise ArtifactError(
            f"manifest output {manifest.output.name!r} is not a graph output; "
            f"graph outputs are {outputs}")
    opsets = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if opsets != [manifest.opset]:
        raise ArtifactError(
            f"manifest key 'opset': expected the graph's ai.onnx opset {opsets}, "
            f"got {manifest.opset!r}")


def _tar_bytes(members: Mapping[str, bytes]) -> bytes:
    """Deterministic gzip'd tar: sorted members, zeroed times/owners, mode 0644."""
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(members[name]), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(members[name]))
    return raw.getvalue()


def _read_manifest_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"cannot read manifest {str(path)!r}: {exc}") from exc
    if not isinstance(data, dict):
        raise ArtifactError(f"manifest {str(path)!r}: expected a JSON object, got {data!r}")
    return data


def package(onnx_path: str | os.PathLike[str], manifest_path: str | os.PathLike[str],
            out_dir: str | os.PathLike[str]) -> Path:
    """Build a deterministic model archive from an ONNX file and a manifest draft.

    The sha256 of ``model.onnx`` is computed and written into the manifest (any
    ``sha256`` already in the draft is replaced), the manifest is checked against
    the graph, and the archive is written atomically. Same inputs -> same bytes.

    Parameters
    ----------
    onnx_path
        The ONNX model file.
    manifest_path
        A manifest JSON file; ``sha256`` may be absent.
    out_dir
        Directory for the archive (created if needed).

    Returns
    -------
    Path
        ``out_dir / model-<sha256[:8]>-v<version>.tar.gz``.

    Raises
    ------
    ArtifactError
        If the manifest is invalid or does not match the graph.
    """
    onnx_bytes = Path(onnx_path).read_bytes()
    draft = _read_manifest_file(Path(manifest_path))
    sha = _sha256_bytes(onnx_bytes)
    if draft.get("sha256") not in (None, sha):
        logger.info("replacing manifest sha256 %r with the model's %s", draft["sha256"], sha)
    manifest = Manifest.from_dict({**draft, "sha256": sha})
    check_manifest_against_graph(manifest, onnx_bytes)
    archive = _tar_bytes({MODEL_MEMBER: onnx_bytes, MANIFEST_MEMBER: manifest.to_json_bytes()})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / archive_name(sha, manifest.version)
    atomic_write(path, archive)
    logger.info("packaged model %s v%s (%d bytes) into %s",
                manifest.name, manifest.version, len(archive), path)
    return path


def _unsafe(name: str) -> bool:
    p = PurePosixPath(name)
    return p.is_absolute() or ".." in p.parts or name.startswith("\\")


def _read_members(path: Path) -> dict[str, bytes]:
    """Read only ``model.onnx`` and ``manifest.json``; reject unsafe member names."""
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for member in tar:
                if _unsafe(member.name):
                    raise ArtifactError(
                        f"archive {str(path)!r}: unsafe member name {member.name!r} "
                        "(absolute path or '..')")
                if member.name not in (MODEL_MEMBER, MANIFEST_MEMBER):
                    continue
                if member.name in found or not member.isfile():
                    raise ArtifactError(
                        f"archive {str(path)!r}: member {member.name!r} must be one regular file")
                fh = tar.extractfile(member)
                assert fh is not None  # isfile() above
                found[member.name] = fh.read()
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArtifactError(
            f"archive {str(path)!r} is not a readable tar.gz file ({exc})") from exc
    for name in (MANIFEST_MEMBER, MODEL_MEMBER):
        if name not in found:
            raise ArtifactError(f"archive {str(path)!r} has no member {name!r}")
    return found


def verify(archive_path: str | os.PathLike[str]) -> LoadedModel:
    """Open a model archive and check its integrity.

    Parameters
    ----------
    archive_path
        A ``model-*.tar.gz`` written by :func:`package`.

    Returns
    -------
    LoadedModel
        Manifest, ONNX bytes, archive sha256 and path.

    Raises
    ------
    ArtifactError
        Corrupt or non-tar archive, unsafe member names, missing members, invalid
        manifest, ``model.onnx`` hash differing from the manifest (both hashes named),
        or a manifest that does not match the graph.
    """
    path = Path(archive_path)
    if not path.is_file():
        raise ArtifactError(f"archive {str(path)!r} does not exist or is not a file")
    members = _read_members(path)
    try:
        draft = json.loads(members[MANIFEST_MEMBER].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"archive {str(path)!r}: manifest.json is not JSON ({exc})") from exc
    manifest = Manifest.from_dict(draft)
    actual = _sha256_bytes(members[MODEL_MEMBER])
    if actual != manifest.sha256:
        raise ArtifactError(
            f"archive {str(path)!r}: model.onnx sha256 mismatch: manifest expects "
            f"{manifest.sha256}, actual {actual}")
    check_manifest_against_graph(manifest, members[MODEL_MEMBER])
    return LoadedModel(manifest=manifest, onnx_bytes=members[MODEL_MEMBER],
                       archive_sha256=archive_sha256(path), path=path)
