"""What a model archive must be so that nothing accepted at ``package``/``verify``/``register``
fails later: its tar members, its graph's loadability in ONNX Runtime, and its names.

Members
    An archive holds exactly two regular files, ``model.onnx`` and ``manifest.json``, named
    so (no ``./`` prefix, no directory entries). Anything else is refused naming the member:
    a second member whose name normalises to one already read (``./manifest.json`` after
    ``manifest.json``: ``tar -xzf`` would unpack the later one over the one modelgate read),
    any other member, links, directories, absolute paths and ``..``.
Graph
    ``model.onnx`` must open in an ONNX Runtime ``InferenceSession`` on the CPU provider
    (graph optimisations off, nothing run): an op of an unknown domain, an opset ONNX Runtime
    does not support or an op without a CPU kernel is refused here, with the op, domain or
    opset named, instead of at scoring. A graph that loaded once is remembered by its sha256
    for the rest of the process.
Names
    The model name, version and every column name are at most :data:`MAX_NAME_BYTES` bytes of
    UTF-8: they become file names and object-key segments (an archive's file name holds the
    version; drift sketches are stored per feature), and file systems stop at 255 bytes.
    Column names may not hold control, bidirectional or zero-width characters (see
    :mod:`modelgate.display_text`); the model name may, and is shown escaped everywhere.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import posixpath
import re
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["ArtifactError", "MAX_NAME_BYTES", "MEMBERS", "check_loadable", "check_name_lengths",
           "read_members", "tar_bytes"]

MODEL_MEMBER = "model.onnx"
MANIFEST_MEMBER = "manifest.json"
#: The members an archive holds, and the only ones.
MEMBERS = (MODEL_MEMBER, MANIFEST_MEMBER)
#: Longest model name, version or column name, in bytes of UTF-8.
MAX_NAME_BYTES = 200


class ArtifactError(ValueError):
    """A model archive or manifest is malformed or does not match its graph."""


# --- members --------------------------------------------------------------------------

def tar_bytes(members: Mapping[str, bytes]) -> bytes:
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


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symbolic link (to {member.linkname!r})"
    if member.islnk():
        return f"a hard link (to {member.linkname!r})"
    return "a directory" if member.isdir() else "not a regular file"


def _member_problem(member: tarfile.TarInfo, seen: Mapping[str, str]) -> str | None:
    """Why ``member`` may not be in an archive, given the normalised names ``seen`` so far."""
    name = member.name
    if name.startswith(("/", "\\")) or ".." in re.split(r"[/\\]", name):
        return "unsafe member name (absolute path or '..')"
    normal = posixpath.normpath(name.replace("\\", "/")).lstrip("/")
    if normal in seen:
        return (f"it unpacks to the same file as member {seen[normal]!r} (tar -xzf would keep "
                "the later one): each member may appear once")
    if name not in MEMBERS:
        return f"unexpected member: an archive holds only {list(MEMBERS)}, named exactly so"
    if not member.isfile():
        return f"member must be a regular file, it is {_kind(member)}"
    return None


def read_members(path: Path) -> dict[str, bytes]:
    """The bytes of ``model.onnx`` and ``manifest.json``; any other member is refused.

    Raises
    ------
    ArtifactError
        Naming the archive and the member: unreadable archive, a member other than the two
        (a duplicate once normalised, a link, a directory, an absolute or ``..`` path), or
        a missing one.
    """
    found: dict[str, bytes] = {}
    seen: dict[str, str] = {}
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for member in tar:
                problem = _member_problem(member, seen)
                if problem is not None:
                    raise ArtifactError(f"archive {str(path)!r}: member {member.name!r}: {problem}")
                seen[member.name] = member.name
                fh = tar.extractfile(member)
                assert fh is not None  # a regular file, checked above
                found[member.name] = fh.read()
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArtifactError(
            f"archive {str(path)!r} is not a readable tar.gz file ({exc})") from exc
    for name in (MANIFEST_MEMBER, MODEL_MEMBER):
        if name not in found:
            raise ArtifactError(f"archive {str(path)!r} has no member {name!r}")
    return found


# --- graph ----------------------------------------------------------------------------

_loadable: set[str] = set()  # sha256 of graphs that opened: verify() runs before every scoring

_NOT_REGISTERED = re.compile(r"([\w.]*):(\w+)\((-?\d+)\) is not a registered function/op")
_NO_OP = re.compile(r'In Node, \("[^"]*", (\w+), "([^"]*)", -?\d+\).*No Op registered for \w+ '
                    r"with domain_version of (\d+)", re.S)
_OPSET = re.compile(r"Opset (\d+) is under development.*support for domain ([\w.]+) is till "
                    r"opset (\d+)", re.S)
_NO_KERNEL = re.compile(r"Could not find an implementation for (\w+)\((\d+)\) node with name "
                        r"'([^']*)'")
_IR = re.compile(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)")


def _domain(domain: str) -> str:
    return repr(domain or "ai.onnx")


def _what_fails(message: str) -> str:
    """ONNX Runtime's load error as one sentence naming the op, domain, opset or IR version."""
    if m := _NOT_REGISTERED.search(message):
        return f"op {m[2]!r} of domain {_domain(m[1])} is not known to ONNX Runtime"
    if m := _NO_OP.search(message):
        return (f"op {m[1]!r} of domain {_domain(m[2])} does not exist at opset {m[3]} in "
                "ONNX Runtime")
    if m := _OPSET.search(message):
        return (f"the graph imports domain {m[2]!r} at opset {m[1]}, ONNX Runtime supports it up "
                f"to opset {m[3]}")
    if m := _NO_KERNEL.search(message):
        return (f"op {m[1]!r} (opset {m[2]}, node {m[3]!r}) has no CPU implementation for the "
                "types it is given")
    if m := _IR.search(message):
        return f"the graph's IR version {m[1]} is above what ONNX Runtime reads ({m[2]})"
    first = message.strip().splitlines()[0] if message.strip() else "no message"
    return re.sub(r"\S*onnxruntime_src\S* .*?\) ", "", first)  # drop the C++ source location


def check_loadable(onnx_bytes: bytes, where: str) -> None:
    """Open the graph in an ONNX Runtime CPU session (optimisations off, nothing run).

    Parameters
    ----------
    onnx_bytes
        Serialised ONNX model (already parsed by ``onnx``).
    where
        What the graph is, for the message (``"model 'churn'"``).

    Raises
    ------
    ArtifactError
        ``<where>: ONNX Runtime <version> cannot load model.onnx: <op/domain/opset named>``.
    """
    digest = hashlib.sha256(onnx_bytes).hexdigest()
    if digest in _loadable:
        return
    import onnxruntime as ort  # ~0.2 s to import; only archives need it

    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors come back as the exception, not as log lines
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    try:
        ort.InferenceSession(onnx_bytes, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # ORT raises its own Fail, InvalidGraph, NotImplemented...
        raise ArtifactError(
            f"{where}: ONNX Runtime {ort.__version__} (CPU) cannot load model.onnx: "
            f"{_what_fails(str(exc))}") from exc
    _loadable.add(digest)


# --- names ----------------------------------------------------------------------------

def check_name_lengths(names: Iterable[tuple[str, str]]) -> None:
    """Refuse a (manifest key, name) whose UTF-8 form is over :data:`MAX_NAME_BYTES` bytes.

    >>> try:
    ...     check_name_lengths([("name", "churn"), ("version", "1" * 201)])
    ... except ArtifactError as exc:
    ...     print(str(exc)[:70])
    manifest key 'version': expected at most 200 bytes of UTF-8 (names bec
    """
    for key, name in names:
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > MAX_NAME_BYTES:
            raise ArtifactError(
                f"manifest key {key!r}: expected at most {MAX_NAME_BYTES} bytes of UTF-8 (names "
                f"become file names and object keys), got {size} bytes ({name[:40] + '...'!r})")
