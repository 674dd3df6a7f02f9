"""What every pipeline step needs: the database URL, the object store and a scratch dir."""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from modelgate.config import Settings
from modelgate.logsafe import escape_for_log
from modelgate.pipelines.dataset_files import s3_parquet, walk_parquet
from modelgate.store import models
from modelgate.store.db import resolve_database_url, upgrade
from modelgate.store.objects import ObjectStore, open_object_store, put_once, validate_key

if TYPE_CHECKING:
    from modelgate.onnx.artifact import LoadedModel

log = logging.getLogger("modelgate.pipeline")


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    db_url: str
    store: ObjectStore

    @classmethod
    def open(cls, settings: Settings | None = None, *, migrate: bool = True) -> Context:
        """Resolve the stores; apply pending migrations so a fresh database just works (an
        up-to-date database is only read: no lock, see ``store.db.upgrade``)."""
        settings = settings or Settings.from_env()
        url = resolve_database_url(settings)
        if migrate:
            upgrade(url, lock_timeout_s=settings.migration_lock_timeout_s)
        return cls(settings=settings, db_url=url, store=open_object_store(settings))

    def discard_scratch(self, *parts: str) -> None:
        """Remove a scratch directory once the run that used it has stored its results."""
        shutil.rmtree(self.settings.home.resolve() / "work" / Path(*[safe_key_part(p) for p in parts]),
                      ignore_errors=True)

    @contextmanager
    def attempt_scratch(self, *parts: str) -> Iterator[Path]:
        """A working directory of this attempt's own under ``MODELGATE_HOME/work/<parts[0]>``,
        removed when the block ends, success or failure.

        Unique per call (``mkdtemp``), not per run key: two attempts of one run at once (the
        same ``modelgate evaluate`` twice, a task retried while its first attempt still
        runs) never share, empty or remove each other's files.
        """
        base = self.settings.home.resolve() / "work" / safe_key_part(parts[0])
        base.mkdir(parents=True, exist_ok=True)
        label = "-".join(safe_key_part(p) for p in parts[1:])[:120] or "attempt"
        path = Path(tempfile.mkdtemp(prefix=f"{label}.", dir=base))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def scratch(self, *parts: str) -> Path:
        """A private working directory under ``MODELGATE_HOME/work``, emptied first."""
        path = self.settings.home.resolve() / "work" / Path(*[safe_key_part(p) for p in parts])
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path


_SAFE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_MAX_PART = 200


def safe_key_part(text: str) -> str:
    """Make a name or run id usable as one object-key or path segment, injectively.

    A text that is already a safe segment is kept as it is. Any other text is sanitised and
    given ``~`` and the first 16 hex digits of its sha256; a safe segment never contains
    ``~``, so two different texts never share a segment (``toy`` and ``toy/`` stay apart,
    and so do the policy files ``toy.yaml`` and ``toy~....yaml``).

    >>> safe_key_part("gss-high-income")
    'gss-high-income'
    >>> safe_key_part("toy/")
    'toy~ecb4dd29ab4611dd'
    >>> safe_key_part("manual__2024-01-01T00:00:00+00:00")
    'manual__2024-01-01T00-00-00-00-00~c87eaaa68ce71ef4'

    A segment is at most 200 characters (file systems stop at 255 bytes a name; a run key
    holds a model name and a version of up to 200 bytes each), so a longer safe text is
    shortened the same way:

    >>> len(safe_key_part("a" * 201))
    81
    """
    if _SAFE_PART.fullmatch(text) and not text.endswith(".") and len(text) <= _MAX_PART:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{re.sub(r'[^A-Za-z0-9._-]', '-', text).strip('.-')[:64] or '_'}~{digest}"


def fetch_dataset(ctx: Context, dataset_uri: str, workdir: Path) -> Path:
    """A local parquet file for a dataset given as evaluation takes it: a file, a directory
    of parquet files (searched recursively) or an ``s3://bucket/`` key or prefix, as a path
    or ``file://`` URI.

    Several files are written into one (``workdir/dataset.parquet``, in sorted order) for
    the callers that read one file (the reference sketch). One ``s3://`` object is downloaded
    to ``workdir/<key>``.
    """
    if dataset_uri.startswith("s3://"):
        bucket, _, key = dataset_uri[5:].partition("/")
        if bucket != getattr(ctx.store, "bucket", None):
            raise ValueError(f"dataset {dataset_uri!r} is not in the configured bucket")
        if key.endswith(".parquet") and ctx.store.exists(key):
            # the key's whole path: objects of two folders with one file name (``dt=1/part-0``,
            # ``dt=2/part-0``, members of one batch) get two files (keys have no ``..``)
            return ctx.store.download(key, workdir / validate_key(key))
        files = [ctx.store.download(k, workdir / "parts" / f"{i:06d}.parquet")
                 for i, (k, _) in enumerate(s3_parquet(ctx.store, key))]
    else:
        path = Path(dataset_uri[7:] if dataset_uri.startswith("file://") else dataset_uri)
        if path.is_file():
            return path
        if not path.is_dir():
            raise FileNotFoundError(f"held-out dataset {str(path)!r} does not exist")
        files = [Path(p) for p in walk_parquet(path)]  # the files every command lists
    if not files:
        raise FileNotFoundError(f"held-out dataset {dataset_uri!r} holds no .parquet file")
    return files[0] if len(files) == 1 else _concatenated(files, workdir / "dataset.parquet")


def _concatenated(files: list[Path], out: Path) -> Path:
    """``files`` written one after the other into ``out``, a batch at a time (same schema)."""
    # imported here: every task's wrapper loads this module (tests/pipelines/test_task_imports.py)
    import pyarrow.parquet as pq

    out.parent.mkdir(parents=True, exist_ok=True)
    schema = pq.read_schema(files[0])
    with pq.ParquetWriter(out, schema) as writer:
        for file in files:
            for batch in pq.ParquetFile(file).iter_batches(batch_size=65_536):
                writer.write_batch(batch.cast(schema) if batch.schema != schema else batch)
    return out


def model_archive_key(model_name: str, version: str, archive_sha256: str, archive_filename: str) -> str:
    """Where an archive is stored: its sha256 is part of the key, so two different archives
    offered for one (name, version) at the same moment land on two keys and neither can
    replace the other's bytes; the registry row decides which one the version is.

    Examples
    --------
    >>> model_archive_key("credit", "1.0", "ab" * 32, "model-credit-1.0.tar.gz")
    'models/credit/1.0/abababababababababababababababababababababababababababababababab/model-credit-1.0.tar.gz'
    """
    return (f"models/{safe_key_part(model_name)}/{safe_key_part(version)}/"
            f"{safe_key_part(archive_sha256)}/{archive_filename}")


def _conflict(existing: models.ModelVersionRow, model: LoadedModel) -> str | None:
    """Why ``model`` may not be registered under ``existing``'s (name, version), or None."""
    if existing.sha256 != model.manifest.sha256:
        return f"a different model.onnx (sha256 {model.manifest.sha256}, registered {existing.sha256})"
    if existing.manifest != model.manifest:
        old, new = existing.manifest.to_dict(), model.manifest.to_dict()
        changed = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
        return f"a different manifest (changed: {', '.join(changed)})"
    return None


def register_archive(ctx: Context, archive_path: Path) -> tuple[models.ModelVersionRow, bool]:
    """Verify an archive, store it write-once and record it as a candidate (append-only).

    A (name, version) is bound to one archive forever. Registering the same model.onnx and
    manifest again is a no-op that changes nothing stored; anything else under a registered
    (name, version) raises :class:`~modelgate.store.models.RegistryError` naming both
    archive sha256s, before any byte is written.
    """
    from modelgate.onnx.artifact import verify  # onnx: seconds to import, see load_registered_model

    model = verify(archive_path)
    manifest = model.manifest
    existing = models.find(ctx.db_url, manifest.name, manifest.version)
    if existing is not None:
        conflict = _conflict(existing, model)
        if conflict is not None:
            raise models.RegistryError(
                f"model {manifest.name!r} version {manifest.version!r} is already registered with "
                f"archive sha256 {existing.archive_sha256}; {str(archive_path)!r} has archive sha256 "
                f"{model.archive_sha256} with {conflict}. Registered versions never change: "
                "give this archive a new version."
            )
        if model.archive_sha256 == existing.archive_sha256 and not ctx.store.exists(existing.archive_key):
            # The same bytes restore a lost object; different bytes never replace it.
            put_once(ctx.store, existing.archive_key, archive_path.read_bytes(),
                     content_type="application/gzip")
        log.info("already had model %s v%s (archive sha256 %s)", escape_for_log(manifest.name),
                 escape_for_log(manifest.version), existing.archive_sha256[:12])
        return existing, False
    key = model_archive_key(manifest.name, manifest.version, model.archive_sha256, archive_path.name)
    if safe_key_part(manifest.name) != manifest.name:
        log.warning("model name %s is not a plain key segment: its objects and policy file use %r",
                    escape_for_log(repr(manifest.name)), safe_key_part(manifest.name))
    uri = put_once(ctx.store, key, archive_path.read_bytes(), content_type="application/gzip")
    row, created = models.register(
        ctx.db_url, model_name=manifest.name, version=manifest.version, sha256=manifest.sha256,
        archive_sha256=model.archive_sha256, archive_key=key, archive_uri=uri,
        manifest=manifest,
    )
    log.info("%s model %s v%s (archive sha256 %s) at %s", "registered" if created else "already had",
             escape_for_log(manifest.name), escape_for_log(manifest.version),
             model.archive_sha256[:12], uri)
    return row, created


def load_registered_model(ctx: Context, row: models.ModelVersionRow, workdir: Path) -> LoadedModel:
    """Fetch a registered archive and verify its bytes against the sha256 recorded at registration.

    Every read is checked, so an archive object replaced behind the registry's back (another
    manifest, another graph) is refused instead of scored.
    """
    # The archive reader (onnx, pandas) is imported here, not at the top: every pipeline task
    # opens a Context, and most never read a model; onnx alone takes seconds to import.
    from modelgate.onnx.artifact import archive_sha256, verify

    # Named by its sha256, not the archive's own name: a 200-byte version there plus the
    # object store's temporary suffixes would pass the 255-byte limit on file names.
    path = ctx.store.download(row.archive_key, workdir / f"model-{row.archive_sha256[:16]}.tar.gz")
    actual = archive_sha256(path)
    if actual != row.archive_sha256:
        raise models.RegistryError(
            f"stored archive {row.archive_key!r} has sha256 {actual}, but {row.model_name!r} "
            f"v{row.version} was registered with archive sha256 {row.archive_sha256}; "
            "the stored object was replaced and is not used"
        )
    model = verify(path)
    if model.manifest.sha256 != row.sha256:
        raise models.RegistryError(
            f"stored archive {row.archive_key!r} holds model.onnx sha256 {model.manifest.sha256}, "
            f"but {row.model_name!r} v{row.version} was registered with {row.sha256}"
        )
    return model
