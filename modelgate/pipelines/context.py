"""What every pipeline step needs: the database URL, the object store and a scratch dir."""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from modelgate.artifact import LoadedModel, verify
from modelgate.config import Settings
from modelgate.store import models
from modelgate.store.db import resolve_database_url, upgrade
from modelgate.store.objects import ObjectStore, open_object_store

log = logging.getLogger("modelgate.pipeline")


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    db_url: str
    store: ObjectStore

    @classmethod
    def open(cls, settings: Settings | None = None, *, migrate: bool = True) -> Context:
        """Resolve the stores; apply pending migrations so a fresh database just works."""
        settings = settings or Settings.from_env()
        url = resolve_database_url(settings)
        if migrate:
            upgrade(url)
        return cls(settings=settings, db_url=url, store=open_object_store(settings))

    def discard_scratch(self, *parts: str) -> None:
        """Remove a scratch directory once the run that used it has stored its results."""
        shutil.rmtree(self.settings.home.resolve() / "work" / Path(*[safe_key_part(p) for p in parts]),
                      ignore_errors=True)

    def scratch(self, *parts: str) -> Path:
        """A private working directory under ``MODELGATE_HOME/work``, emptied first."""
        path = self.settings.home.resolve() / "work" / Path(*[safe_key_part(p) for p in parts])
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path


def safe_key_part(text: str) -> str:
    """Make a run id usable as one object-key or path segment (deterministically).

    >>> safe_key_part("manual__2024-01-01T00:00:00+00:00")
    'manual__2024-01-01T00-00-00-00-00'
    """
    return re.sub(r"[^A-Za-z0-9._-]", "-", text).strip(".-") or "_"


def model_archive_key(model_name: str, version: str, archive_filename: str) -> str:
    return f"models/{safe_key_part(model_name)}/{safe_key_part(version)}/{archive_filename}"


def register_archive(ctx: Context, archive_path: Path) -> tuple[models.ModelVersionRow, bool]:
    """Verify an archive, store it in the object store and record it as a candidate."""
    model = verify(archive_path)
    manifest = model.manifest
    key = model_archive_key(manifest.name, manifest.version, archive_path.name)
    # Check for a conflicting registration before uploading so a rejected archive never
    # overwrites the stored bytes of the registered version.
    try:
        existing = models.get(ctx.db_url, manifest.name, manifest.version)
    except models.RegistryError:
        existing = None
    if existing is not None and existing.sha256 != manifest.sha256:
        raise models.RegistryError(
            f"model {manifest.name!r} version {manifest.version!r} is already registered with "
            f"model.onnx sha256 {existing.sha256}; this archive has {manifest.sha256}. "
            "Give the new model a new version."
        )
    uri = ctx.store.put_file(key, archive_path, content_type="application/gzip")
    row, created = models.register(
        ctx.db_url, model_name=manifest.name, version=manifest.version, sha256=manifest.sha256,
        archive_sha256=model.archive_sha256, archive_key=key, archive_uri=uri,
        manifest=manifest.to_dict(),
    )
    log.info("%s model %s v%s (sha256 %s) at %s", "registered" if created else "already had",
             manifest.name, manifest.version, manifest.sha256[:12], uri)
    return row, created


def load_registered_model(ctx: Context, row: models.ModelVersionRow, workdir: Path) -> LoadedModel:
    """Fetch a registered archive and verify it against the hash recorded at registration."""
    path = ctx.store.download(row.archive_key, workdir / Path(row.archive_key).name)
    model = verify(path)
    if model.manifest.sha256 != row.sha256:
        raise models.RegistryError(
            f"stored archive {row.archive_key!r} holds model.onnx sha256 {model.manifest.sha256}, "
            f"but {row.model_name!r} v{row.version} was registered with {row.sha256}"
        )
    return model
