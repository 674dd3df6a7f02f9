"""Model artifacts: a deterministic ``tar.gz`` holding ``model.onnx`` and ``manifest.json``.

An archive is named ``model-<first 8 hex of sha256(model.onnx)>-v<version>.tar.gz`` and holds
those two members and nothing else; names are at most 200 bytes and the graph must open in
ONNX Runtime (:mod:`modelgate.onnx.archive_checks`).
The manifest (JSON, ``format_version: 1``) describes the model's task and how to feed
the graph; all preprocessing lives inside the graph.

Manifest keys
-------------
``format_version`` (1), ``name``, ``version`` (string; letters, digits, ``.``, ``_``, ``-``),
``sha256`` (hex of ``model.onnx``), ``task`` (``binary_classification``, the default,
``multiclass_classification`` or ``regression``), ``opset`` (optional: the graph's ai.onnx
opset, read from the graph by :func:`package` and checked when given),
``features`` (ordered list of ``{"name", "kind": "numeric"|"categorical",
"allow_missing": bool = false}``), optional ``input_tensor`` (the name of one graph input
``[N, F]`` whose columns are the features, in order), ``label`` (``{"column", "positive"}``;
``positive`` only for binary classification), ``output`` (``{"name", "positive_index",
"classes"}``: the probability output of a classifier or the value output of a regressor;
``name`` and ``positive_index`` are read from the graph by :func:`package` when absent,
``classes`` is needed only when the graph declares no class labels), ``threshold`` (float
in (0, 1), binary classification only), ``sensitive_features`` (data column names; they
need not be model inputs), optional ``description`` and ``id_column``.

Inputs are either one graph input per feature (numeric: FLOAT, DOUBLE, INT64 or INT32 ``[N, 1]``;
categorical: STRING ``[N, 1]``) or, with ``input_tensor``, one numeric ``[N, F]`` tensor.
Numeric values are fed in the graph's own element type.

``allow_missing`` says the graph itself copes with missing values in that column (e.g.
a skl2onnx ``SimpleImputer`` in front): missing numerics are fed as NaN and missing
categoricals as the empty string ``""`` (the missing-category rule: the graph sees ``""``,
which its encoder treats as any other unknown category). When false, the scorer refuses
such rows. INT64 inputs cannot hold NaN, so they never take missing values.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import onnx

from modelgate.display_text import has_hidden_characters
from modelgate.files import atomic_write
from modelgate.onnx.archive_checks import (
    MANIFEST_MEMBER,
    MODEL_MEMBER,
    ArtifactError,
    check_loadable,
    check_name_lengths,
    read_members,
    tar_bytes,
)
from modelgate.onnx.layouts import GraphLayout, describe_graph

__all__ = [
    "ArtifactError",
    "Feature",
    "LabelSpec",
    "LoadedModel",
    "Manifest",
    "OutputSpec",
    "TASKS",
    "Task",
    "archive_name",
    "archive_sha256",
    "check_manifest_against_graph",
    "class_labels",
    "package",
    "verify",
]

logger = logging.getLogger("modelgate.onnx.artifact")

FORMAT_VERSION = 1
_KINDS = ("numeric", "categorical")
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
_REQUIRED = (
    "format_version", "name", "version", "sha256", "features", "label", "output",
    "sensitive_features",
)
_OPTIONAL = ("description", "id_column", "task", "opset", "input_tensor", "threshold")
Task = Literal["binary_classification", "multiclass_classification", "regression"]
TASKS: tuple[Task, ...] = ("binary_classification", "multiclass_classification", "regression")
_NUMERIC_TYPES = ("FLOAT", "DOUBLE", "INT64", "INT32")
_CHUNK = 1 << 20


def _check_names(m: Manifest) -> None:
    """Column names show in reports, logs, the CLI's text and gate summaries, one line per
    check: a newline or escape sequence in one would forge lines there, a bidirectional
    override reorder them, so they are refused. Names become file names: at most 200 bytes."""
    names = [*((f"features[{i}].name", f.name) for i, f in enumerate(m.features)),
             *((f"sensitive_features[{i}]", s) for i, s in enumerate(m.sensitive_features)),
             ("label.column", m.label.column), ("id_column", m.id_column or "")]
    for key, name in names:
        if has_hidden_characters(name):
            raise _fail(key, "a column name without control characters (nor bidirectional or "
                        "zero-width ones)", name)
    check_name_lengths([("name", m.name), ("version", m.version), *names])


def _fail(key: str, expected: str, got: object) -> ArtifactError:
    return ArtifactError(f"manifest key {key!r}: expected {expected}, got {got!r}")


def _str(d: Mapping[str, Any], key: str, where: str) -> str:
    value = d.get(key)
    if not isinstance(value, str) or not value:
        raise _fail(f"{where}{key}", "a non-empty string", value)
    return value


def _nul_at(value: object, path: str) -> str | None:
    """The key path of the first string (key or value) holding NUL, or None.

    >>> _nul_at({"features": [{"name": "a\\x00"}]}, "")
    'features[0].name'
    """
    if isinstance(value, str):
        return path if "\x00" in value else None
    items = (value.items() if isinstance(value, Mapping)
             else enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        here = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)
        if isinstance(key, str) and "\x00" in key:
            return here
        found = _nul_at(item, here)
        if found is not None:
            return found
    return None


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
    """The label column of the evaluation data, its positive value and, optionally, the one
    negative value it may hold (binary classification)."""

    column: str
    #: The positive class (binary classification only; None otherwise).
    positive: str | int | bool | None = None
    #: The negative class, when declared: then every other label must be exactly this value.
    negative: str | int | bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the label spec."""
        out: dict[str, Any] = {"column": self.column}
        if self.positive is not None:
            out["positive"] = self.positive
        if self.negative is not None:
            out["negative"] = self.negative
        return out


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """The graph output to read: class probabilities (classifiers) or values (regression).

    ``positive_index`` is the positive class's column (binary classification);
    ``classes`` names the probability columns when the graph declares no class labels.
    """

    name: str
    positive_index: int | None = None
    classes: tuple[str, ...] | tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the output spec (optional keys only when set)."""
        out: dict[str, Any] = {"name": self.name}
        if self.positive_index is not None:
            out["positive_index"] = self.positive_index
        if self.classes is not None:
            out["classes"] = list(self.classes)
        return out


def _parse_label(d: object) -> LabelSpec:
    d = _exact_keys(d, "label", ("column",), ("positive", "negative"))
    positive, negative = d.get("positive"), d.get("negative")
    for key, value in (("label.positive", positive), ("label.negative", negative)):
        if value is not None and not isinstance(value, str | int | bool):
            raise _fail(key, "a string, integer or boolean", value)
    if negative is not None and (positive is None or negative == positive):
        raise _fail("label.negative", "a value other than label.positive, given with it", negative)
    return LabelSpec(column=_str(d, "column", "label."), positive=positive, negative=negative)


def _parse_classes(value: object) -> tuple[str, ...] | tuple[int, ...] | None:
    if value is None:
        return None
    ok = isinstance(value, list) and len(value) >= 2 and len(set(value)) == len(value) and (
        all(isinstance(v, str) for v in value)
        or all(isinstance(v, int) and not isinstance(v, bool) for v in value))
    if not ok:
        raise _fail("output.classes", "a list of at least 2 distinct strings or integers", value)
    assert isinstance(value, list)
    return tuple(value)


def _parse_output(d: object) -> OutputSpec:
    d = _exact_keys(d, "output", ("name",), ("positive_index", "classes"))
    index = d.get("positive_index")
    if index is not None:
        index = _int(index, "output.positive_index", minimum=0)
    return OutputSpec(name=_str(d, "name", "output."), positive_index=index,
                      classes=_parse_classes(d.get("classes")))


def _parse_task(value: object) -> Task:
    if value not in TASKS:
        raise _fail("task", f"one of {list(TASKS)}", value)
    return cast(Task, value)  # checked against TASKS above


def _check_task_keys(task: Task, label: LabelSpec, output: OutputSpec,
                     threshold: float | None) -> None:
    """Keys that only one task uses are required there and refused elsewhere."""
    binary = task == "binary_classification"
    if binary and label.positive is None:
        raise _fail("label.positive", "the positive class (task binary_classification)", None)
    if binary and threshold is None:
        raise _fail("threshold", "a number in (0, 1) (task binary_classification)", None)
    if not binary:
        for key, value in (("label.positive", label.positive), ("label.negative", label.negative),
                           ("threshold", threshold),
                           ("output.positive_index", output.positive_index)):
            if value is not None:
                raise _fail(key, f"no value for task {task!r} (only binary_classification uses it)",
                            value)
    if task == "regression" and output.classes is not None:
        raise _fail("output.classes", "no value for task 'regression'", list(output.classes))
    if binary and output.classes is not None and len(output.classes) != 2:
        raise _fail("output.classes", "2 classes for task binary_classification "
                    "(use task multiclass_classification for more)", list(output.classes))


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
    >>> m.task, m.features[0].kind, m.threshold
    ('binary_classification', 'numeric', 0.5)
    >>> Manifest.from_dict(m.to_dict()) == m
    True
    >>> r = Manifest.from_dict({**m.to_dict(), "task": "regression", "label": {"column": "y"},
    ...                         "output": {"name": "variable"}, "threshold": None})
    >>> r.task, r.threshold, r.label.positive
    ('regression', None, None)
    """

    name: str
    version: str
    sha256: str
    opset: int | None
    features: tuple[Feature, ...]
    label: LabelSpec
    output: OutputSpec
    threshold: float | None
    sensitive_features: tuple[str, ...]
    description: str | None = None
    id_column: str | None = None
    task: Task = "binary_classification"
    input_tensor: str | None = None

    @classmethod
    def from_dict(cls, d: object) -> Manifest:
        """Validate a parsed manifest; every problem raises :class:`ArtifactError`."""
        d = _exact_keys(d, "<manifest>", _REQUIRED, _OPTIONAL)
        nul = _nul_at(d, "")
        if nul is not None:  # PostgreSQL cannot store it: refused here, by key, not at the database
            raise _fail(nul or "<manifest>", "text without NUL characters", "...\x00...")
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
        input_tensor = d.get("input_tensor")
        if input_tensor is not None:
            input_tensor = _str(d, "input_tensor", "")
        task = _parse_task(d.get("task", "binary_classification"))
        opset = d.get("opset")
        threshold = d.get("threshold")
        label, output = _parse_label(d["label"]), _parse_output(d["output"])
        threshold = None if threshold is None else _parse_threshold(threshold)
        _check_task_keys(task, label, output, threshold)
        manifest = cls(
            name=_str(d, "name", ""), version=version, sha256=sha,
            opset=None if opset is None else _int(opset, "opset", minimum=1),
            features=_parse_features(d["features"]), label=label, output=output,
            threshold=threshold,
            sensitive_features=_parse_names(d["sensitive_features"], "sensitive_features"),
            description=description, id_column=id_column, task=task, input_tensor=input_tensor,
        )
        _check_names(manifest)
        return manifest

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``format_version`` included; optional keys only when set, ``task``
        only when not the default, so binary manifests read as they always have)."""
        out: dict[str, Any] = {
            "format_version": FORMAT_VERSION, "name": self.name, "version": self.version,
            "sha256": self.sha256, "features": [f.to_dict() for f in self.features],
            "label": self.label.to_dict(), "output": self.output.to_dict(),
            "sensitive_features": list(self.sensitive_features),
        }
        if self.task != "binary_classification":
            out["task"] = self.task
        if self.opset is not None:
            out["opset"] = self.opset
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.input_tensor is not None:
            out["input_tensor"] = self.input_tensor
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


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return "[" + ", ".join("N" if i == 0 and d is None else "?" if d is None else str(d)
                           for i, d in enumerate(shape)) + "]"


def _check_column_inputs(manifest: Manifest, layout: GraphLayout) -> None:
    """One graph input ``[N, 1]`` per feature: numeric FLOAT/DOUBLE/INT64, categorical STRING."""
    inputs = layout.inputs
    if len(inputs) == 1 and any(f.name not in inputs for f in manifest.features):
        (only,) = inputs.values()
        if len(only.shape) == 2 and only.shape[1] != 1:
            raise ArtifactError(
                f"the graph takes one tensor {only.name!r} of shape {_shape_text(only.shape)}: set "
                f"\"input_tensor\": {only.name!r} in the manifest and list its columns, in order, "
                "as the features")
    for feature in manifest.features:
        if feature.name not in inputs:
            raise ArtifactError(
                f"manifest feature {feature.name!r} is not an input of the graph; "
                f"graph inputs are {sorted(inputs)}")
        graph_input = inputs[feature.name]
        allowed = _NUMERIC_TYPES if feature.kind == "numeric" else ("STRING",)
        if graph_input.elem_type not in allowed:
            raise ArtifactError(
                f"feature {feature.name!r} is {feature.kind}: expected graph input of element type "
                f"{' or '.join(allowed)}, got {graph_input.elem_type}")
        if len(graph_input.shape) != 2 or graph_input.shape[1] not in (None, 1):
            raise ArtifactError(
                f"feature {feature.name!r}: expected graph input shape [N, 1], "
                f"got {_shape_text(graph_input.shape)}")
    extra = sorted(set(inputs) - {f.name for f in manifest.features})
    if extra:
        raise ArtifactError(f"graph inputs {extra} are not listed in the manifest features")


def _check_tensor_input(manifest: Manifest, layout: GraphLayout, name: str) -> None:
    """One numeric graph input ``[N, F]`` whose F columns are the manifest features, in order."""
    if name not in layout.inputs or len(layout.inputs) != 1:
        raise ArtifactError(
            f"manifest key 'input_tensor': expected the graph's only input, got {name!r}; "
            f"graph inputs are {sorted(layout.inputs)} (with several inputs, drop input_tensor "
            "and list one feature per input)")
    tensor = layout.inputs[name]
    if tensor.elem_type not in _NUMERIC_TYPES:
        raise ArtifactError(
            f"input tensor {name!r}: expected element type {' or '.join(_NUMERIC_TYPES)}, "
            f"got {tensor.elem_type}")
    categorical = [f.name for f in manifest.features if f.kind != "numeric"]
    if categorical:
        raise ArtifactError(
            f"input tensor {name!r} is {tensor.elem_type}: every feature must be numeric, "
            f"but {categorical} are categorical")
    n = len(manifest.features)
    if len(tensor.shape) != 2 or tensor.shape[1] not in (None, n):
        raise ArtifactError(
            f"input tensor {name!r} has shape {_shape_text(tensor.shape)} but the manifest lists "
            f"{n} features: list one feature per column, in the graph's column order")


def _class_count_fix(task: Task, n_classes: int, where: str) -> None:
    if task == "binary_classification" and n_classes != 2:
        raise ArtifactError(
            f"{where} has {n_classes} classes but the manifest task is binary_classification: set "
            "\"task\": \"multiclass_classification\" in the manifest")
    if task == "multiclass_classification" and n_classes < 3:
        raise ArtifactError(
            f"{where} has {n_classes} classes but the manifest task is multiclass_classification: "
            "set \"task\": \"binary_classification\" (with label.positive and threshold)")


def _check_output(manifest: Manifest, layout: GraphLayout) -> None:
    """The named output exists and holds what the task reads from it."""
    out = layout.output(manifest.output.name)
    if out is None:
        raise ArtifactError(
            f"manifest output {manifest.output.name!r} is not a graph output; "
            f"graph outputs are {[o.name for o in layout.outputs]}")
    if manifest.task == "regression":
        if out.kind in ("probabilities", "zipmap") or layout.class_labels is not None:
            raise ArtifactError(
                f"output {out.name!r} of a classifier (classes {_classes_text(layout)}) cannot be "
                "read for task regression: set \"task\" to \"binary_classification\" or "
                "\"multiclass_classification\"")
        if out.kind != "values":
            raise ArtifactError(
                f"output {out.name!r}: task regression needs a float output of shape [N] or [N, 1] "
                f"(skl2onnx and onnxmltools call it 'variable'), got a {out.kind} output")
        return
    if out.kind == "values" and layout.class_labels is None:
        raise ArtifactError(
            f"output {out.name!r} holds one value per row, not class probabilities: for a "
            "regression model set \"task\": \"regression\"")
    if out.kind not in ("probabilities", "zipmap"):
        wanted = [o.name for o in layout.outputs if o.kind in ("probabilities", "zipmap")]
        hint = f"set output.name to {wanted[0]!r}" if wanted else "export the probabilities"
        raise ArtifactError(
            f"output {out.name!r} holds {'predicted labels' if out.kind == 'label' else out.kind}"
            f", not class probabilities: {hint}")
    if out.width is not None:
        _class_count_fix(manifest.task, out.width, f"output {out.name!r}")


def _classes_text(layout: GraphLayout) -> str:
    return "unknown" if layout.class_labels is None else repr(list(layout.class_labels))


def _index_of(positive: str | int | bool, classes: tuple[str, ...] | tuple[int, ...]) -> int | None:
    """Position of ``positive`` among ``classes`` (string to string, integer to integer)."""
    for i, c in enumerate(classes):
        if isinstance(c, str) == isinstance(positive, str) and c == positive:
            return i
    return None


def _check_classes(manifest: Manifest, layout: GraphLayout) -> None:
    """Class labels: the graph's (or the manifest's) agree with the task and positive class."""
    graph, declared = layout.class_labels, manifest.output.classes
    if graph is not None and declared is not None and graph != declared:
        raise ArtifactError(
            f"manifest key 'output.classes': the graph declares classes {list(graph)}, the "
            f"manifest {list(declared)}: drop output.classes or make it equal")
    classes = graph if graph is not None else declared
    if classes is not None:
        _class_count_fix(manifest.task, len(classes), "the model")
    if manifest.task == "multiclass_classification" and classes is None:
        raise ArtifactError(
            "the graph declares no class labels: list them, in probability-column order, as "
            "output.classes in the manifest")
    if manifest.task != "binary_classification":
        return
    positive, index = manifest.label.positive, manifest.output.positive_index
    assert positive is not None  # Manifest.from_dict requires it for binary models
    if classes is None:
        if index is None:
            raise ArtifactError(
                "the graph declares no class labels: give output.positive_index (the column of "
                f"class {positive!r} in the probabilities) or output.classes")
        return
    found = _index_of(positive, classes)
    if found is None:
        raise ArtifactError(
            f"label.positive {positive!r} is not one of the model's classes {list(classes)}: "
            "set label.positive to one of them (same type: string or integer)")
    if index is not None and index != found:
        raise ArtifactError(
            f"output.positive_index is {index} but the model's classes are {list(classes)}, so "
            f"label.positive {positive!r} is column {found}: set positive_index to {found} "
            "(or leave it out)")


def check_manifest_against_graph(manifest: Manifest, onnx_bytes: bytes) -> None:
    """Check that a manifest describes the graph it ships with.

    Inputs: one ``[N, 1]`` graph input per feature (numeric FLOAT/DOUBLE/INT64, categorical
    STRING) and no other, or with ``input_tensor`` one numeric ``[N, F]`` input with a
    column per feature. Output: a probability tensor or ``ZipMap`` for classifiers (with
    2 classes for a binary and 3 or more for a multiclass model), a float ``[N]``/``[N, 1]``
    for regression. Classes: the graph's labels, if it declares them, equal
    ``output.classes`` when given and hold ``label.positive`` at ``output.positive_index``.
    Opset: when the manifest gives one, it equals the graph's ai.onnx opset. Last, the graph
    opens in an ONNX Runtime CPU session (:func:`modelgate.onnx.archive_checks.check_loadable`).

    Parameters
    ----------
    manifest
        The validated manifest.
    onnx_bytes
        Serialised ONNX model.

    Raises
    ------
    ArtifactError
        Naming the feature, input, output, class or opset that disagrees and how to fix it,
        or the op, domain or opset ONNX Runtime cannot load.
    """
    layout = describe_graph(_parse_graph(onnx_bytes, f"model {manifest.name!r}"))
    if manifest.input_tensor is None:
        _check_column_inputs(manifest, layout)
    else:
        _check_tensor_input(manifest, layout, manifest.input_tensor)
    _check_output(manifest, layout)
    _check_classes(manifest, layout)
    if manifest.opset is not None and manifest.opset != layout.opset:
        raise ArtifactError(
            f"manifest key 'opset': expected the graph's ai.onnx opset {layout.opset}, "
            f"got {manifest.opset!r} (leave opset out to read it from the graph)")
    check_loadable(onnx_bytes, f"model {manifest.name!r}")


def class_labels(manifest: Manifest, onnx_bytes: bytes) -> tuple[str, ...] | tuple[int, ...] | None:
    """The model's classes in probability-column order: the graph's, else ``output.classes``.

    None for regression, and for a binary model whose graph declares no labels (then
    ``output.positive_index`` says which column is the positive class).
    """
    if manifest.task == "regression":
        return None
    graph = describe_graph(_parse_graph(onnx_bytes, f"model {manifest.name!r}")).class_labels
    return graph if graph is not None else manifest.output.classes


def _completed_draft(draft: dict[str, Any], layout: GraphLayout) -> dict[str, Any]:
    """Fill what the graph says and the draft left out: opset, output name, positive index."""
    out = dict(draft)
    if "opset" not in out and layout.opset is not None:
        out["opset"] = layout.opset
    task = out.get("task", "binary_classification")
    output = dict(out["output"]) if isinstance(out.get("output"), Mapping) else out.get("output")
    if output is None:
        kinds = ("values",) if task == "regression" else ("probabilities", "zipmap")
        found = [o.name for o in layout.outputs if o.kind in kinds]
        if not found and len(layout.outputs) == 1:  # the output check says what it holds
            found = [layout.outputs[0].name]
        if len(found) != 1:
            raise _fail("output", f"{{\"name\": <one of {[o.name for o in layout.outputs]}>}} "
                        f"(could not choose one {' or '.join(kinds)} output)", None)
        output = {"name": found[0]}
    label = out.get("label")
    positive = label.get("positive") if isinstance(label, Mapping) else None
    if (isinstance(output, dict) and task == "binary_classification" and layout.class_labels
            and "positive_index" not in output and isinstance(positive, str | int | bool)):
        index = _index_of(positive, layout.class_labels)
        if index is not None:  # else the check below names the classes
            output["positive_index"] = index
    if (isinstance(output, dict) and task == "multiclass_classification" and layout.class_labels
            and "classes" not in output):  # stored with the model: pipelines map labels by it
        output["classes"] = list(layout.class_labels)
    out["output"] = output
    return out


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
    ``sha256`` already in the draft is replaced); what the draft leaves out and the graph
    says is filled in (``opset``, ``output.name`` when the graph has one probability or
    value output, ``output.positive_index`` from the graph's class labels, and for a
    multiclass model ``output.classes``); the manifest
    is checked against the graph, and the archive is written atomically. Same inputs ->
    same bytes.

    Parameters
    ----------
    onnx_path
        The ONNX model file.
    manifest_path
        A manifest JSON file; ``sha256``, ``opset``, ``output`` and
        ``output.positive_index`` may be absent.
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
    layout = describe_graph(_parse_graph(onnx_bytes, f"model file {str(onnx_path)!r}"))
    manifest = Manifest.from_dict(_completed_draft({**draft, "sha256": sha}, layout))
    check_manifest_against_graph(manifest, onnx_bytes)
    archive = tar_bytes({MODEL_MEMBER: onnx_bytes, MANIFEST_MEMBER: manifest.to_json_bytes()})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / archive_name(sha, manifest.version)
    atomic_write(path, archive)
    logger.info("packaged model %s v%s (%d bytes) into %s",
                manifest.name, manifest.version, len(archive), path)
    return path


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
    members = read_members(path)
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
