"""Does a manifest describe the graph it ships with: inputs, output, classes, opset.

The checks read the graph's layout (:func:`modelgate.onnx.layouts.describe_graph`) and name
what disagrees and how to fix it; :func:`check_manifest_against_graph` runs them all, then opens
the graph in ONNX Runtime (:func:`modelgate.onnx.archive_checks.check_loadable`).
"""

from __future__ import annotations

import onnx

from modelgate.onnx.archive_checks import ArtifactError, check_loadable
from modelgate.onnx.layouts import GraphLayout, describe_graph
from modelgate.onnx.manifest import Manifest, Task

__all__ = [
    "check_manifest_against_graph",
    "class_index",
    "class_labels",
    "parse_graph",
]

_NUMERIC_TYPES = ("FLOAT", "DOUBLE", "INT64", "INT32")


def parse_graph(onnx_bytes: bytes, where: str) -> onnx.ModelProto:
    """The ONNX graph of ``onnx_bytes``; :class:`ArtifactError` naming ``where`` if it is not one."""
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


def class_index(positive: str | int | bool, classes: tuple[str, ...] | tuple[int, ...]) -> int | None:
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
    found = class_index(positive, classes)
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
    layout = describe_graph(parse_graph(onnx_bytes, f"model {manifest.name!r}"))
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
    graph = describe_graph(parse_graph(onnx_bytes, f"model {manifest.name!r}")).class_labels
    return graph if graph is not None else manifest.output.classes

