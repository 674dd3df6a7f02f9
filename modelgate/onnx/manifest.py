"""The manifest of a model archive: ``manifest.json``, validated into a frozen :class:`Manifest`.

An archive (:mod:`modelgate.onnx.artifact`) holds ``model.onnx`` and this manifest. The manifest
(JSON, ``format_version: 1``) describes the model's task and how to feed the graph; all
preprocessing lives inside the graph. :mod:`modelgate.onnx.graph_checks` checks it against the graph.

Manifest keys
-------------
``format_version`` (1), ``name``, ``version`` (string; letters, digits, ``.``, ``_``, ``-``),
``sha256`` (hex of ``model.onnx``), ``task`` (``binary_classification``, the default,
``multiclass_classification`` or ``regression``), ``opset`` (optional: the graph's ai.onnx
opset, read from the graph by :func:`modelgate.onnx.artifact.package` and checked when given),
``features`` (ordered list of ``{"name", "kind": "numeric"|"categorical",
"allow_missing": bool = false}``), optional ``input_tensor`` (the name of one graph input
``[N, F]`` whose columns are the features, in order), ``label`` (``{"column", "positive"}``;
``positive`` only for binary classification), ``output`` (``{"name", "positive_index",
"classes"}``: the probability output of a classifier or the value output of a regressor;
``name`` and ``positive_index`` are read from the graph by :func:`~modelgate.onnx.artifact.package`
when absent, ``classes`` is needed only when the graph declares no class labels), ``threshold``
(float in (0, 1), binary classification only), ``sensitive_features`` (data column names; they
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

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from modelgate.display_text import has_hidden_characters
from modelgate.onnx.archive_checks import ArtifactError, check_name_lengths

__all__ = [
    "FORMAT_VERSION",
    "Feature",
    "LabelSpec",
    "Manifest",
    "OutputSpec",
    "TASKS",
    "Task",
]

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
