"""Model artifacts: a deterministic ``tar.gz`` holding ``model.onnx`` and ``manifest.json``.

An archive is named ``model-<first 8 hex of sha256(model.onnx)>-v<version>.tar.gz`` and holds
those two members and nothing else; names are at most 200 bytes and the graph must open in
ONNX Runtime (:mod:`modelgate.onnx.archive_checks`). The manifest's keys are described in
:mod:`modelgate.onnx.manifest`; :func:`package` fills in what the graph says and
:mod:`modelgate.onnx.graph_checks` checks that the manifest describes the graph.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelgate.files import atomic_write
from modelgate.onnx.archive_checks import (
    MANIFEST_MEMBER,
    MODEL_MEMBER,
    ArtifactError,
    read_members,
    tar_bytes,
)
from modelgate.onnx.graph_checks import check_manifest_against_graph, class_index, parse_graph
from modelgate.onnx.layouts import GraphLayout, describe_graph
from modelgate.onnx.manifest import Manifest

__all__ = [
    "ArtifactError",
    "LoadedModel",
    "archive_name",
    "archive_sha256",
    "package",
    "verify",
]

logger = logging.getLogger("modelgate.onnx.artifact")

_CHUNK = 1 << 20


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
            names = [o.name for o in layout.outputs]
            raise ArtifactError(
                f"manifest key 'output': expected {{\"name\": <one of {names}>}} "
                f"(could not choose one {' or '.join(kinds)} output), got None")
        output = {"name": found[0]}
    label = out.get("label")
    positive = label.get("positive") if isinstance(label, Mapping) else None
    if (isinstance(output, dict) and task == "binary_classification" and layout.class_labels
            and "positive_index" not in output and isinstance(positive, str | int | bool)):
        index = class_index(positive, layout.class_labels)
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
        ``out_dir / model-<sha256[:8]>-v<version>.tar.gz``. Packaging the same files again
        rewrites the same bytes; a different manifest for the same model file and version
        is refused (:class:`ArtifactError`) instead of replacing the archive.

    Raises
    ------
    ArtifactError
        If the manifest is invalid or does not match the graph, or ``out_dir`` already holds
        an archive of this model file and version with another manifest.
    """
    onnx_bytes = Path(onnx_path).read_bytes()
    draft = _read_manifest_file(Path(manifest_path))
    sha = _sha256_bytes(onnx_bytes)
    if draft.get("sha256") not in (None, sha):
        logger.info("replacing manifest sha256 %r with the model's %s", draft["sha256"], sha)
    layout = describe_graph(parse_graph(onnx_bytes, f"model file {str(onnx_path)!r}"))
    manifest = Manifest.from_dict(_completed_draft({**draft, "sha256": sha}, layout))
    check_manifest_against_graph(manifest, onnx_bytes)
    archive = tar_bytes({MODEL_MEMBER: onnx_bytes, MANIFEST_MEMBER: manifest.to_json_bytes()})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / archive_name(sha, manifest.version)
    # The name covers the model file and the version only: a different manifest for them
    # would silently take the place of an archive that may already be registered or shipped.
    if path.exists() and path.read_bytes() != archive:
        raise ArtifactError(
            f"{str(path)!r} already holds an archive of this model file at version "
            f"{manifest.version!r} with a different manifest; give the new one another version, "
            f"package it into another folder, or remove the old file first")
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
