"""Model versions in the results store: registration, lookup and promotion."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from modelgate.store.db import transaction


class RegistryError(ValueError):
    """A model version is unknown, or a registration conflicts with a stored one."""


@dataclass(frozen=True, slots=True)
class ModelVersionRow:
    model_version_id: int
    model_name: str
    version: str
    sha256: str
    archive_sha256: str
    archive_key: str
    archive_uri: str
    manifest: dict[str, Any]
    stage: str
    is_drifting: bool


_COLUMNS = (
    "model_version_id, model_name, version, sha256, archive_sha256, archive_key, archive_uri, "
    "manifest, stage, is_drifting"
)


def _row(record: tuple[Any, ...]) -> ModelVersionRow:
    return ModelVersionRow(*record)


def register(
    url: str,
    *,
    model_name: str,
    version: str,
    sha256: str,
    archive_sha256: str,
    archive_key: str,
    archive_uri: str,
    manifest: dict[str, Any],
) -> tuple[ModelVersionRow, bool]:
    """Record a model version as ``candidate``; returns (row, created).

    Registering the same version again with the same model hash and manifest is a no-op;
    anything else is an error (a version never changes its bytes or its manifest; the
    table's ``model_version_append_only_trigger`` refuses updates of either).
    """
    with transaction(url) as cur:
        cur.execute(
            f"""INSERT INTO model_version
                   (model_name, version, sha256, archive_sha256, archive_key, archive_uri, manifest)
                VALUES (%s, %s, %s, %s, %s, %s, %s)
                ON CONFLICT ON CONSTRAINT model_version_model_name_version_key DO NOTHING
                RETURNING {_COLUMNS}""",
            (model_name, version, sha256, archive_sha256, archive_key, archive_uri,
             json.dumps(manifest, sort_keys=True)),
        )
        inserted = cur.fetchone()
        if inserted is not None:
            return _row(inserted), True
        cur.execute(
            f"SELECT {_COLUMNS} FROM model_version WHERE model_name = %s AND version = %s",
            (model_name, version),
        )
        existing = _row(cur.fetchone())
    if existing.sha256 != sha256 or existing.manifest != manifest:
        what = "model.onnx" if existing.sha256 != sha256 else "manifest"
        raise RegistryError(
            f"model {model_name!r} version {version!r} is already registered with archive sha256 "
            f"{existing.archive_sha256} (model.onnx sha256 {existing.sha256}); this archive has "
            f"{archive_sha256} (model.onnx sha256 {sha256}) with a different {what}. "
            "Give the new model a new version."
        )
    return existing, False


def find(url: str, model_name: str, version: str) -> ModelVersionRow | None:
    """The registered (name, version), or None."""
    try:
        return get(url, model_name, version)
    except RegistryError:
        return None


def get(url: str, model_name: str, version: str) -> ModelVersionRow:
    with transaction(url) as cur:
        cur.execute(
            f"SELECT {_COLUMNS} FROM model_version WHERE model_name = %s AND version = %s",
            (model_name, version),
        )
        record = cur.fetchone()
    if record is None:
        raise RegistryError(f"model {model_name!r} version {version!r} is not registered")
    return _row(record)


def get_by_id(url: str, model_version_id: int) -> ModelVersionRow:
    with transaction(url) as cur:
        cur.execute(f"SELECT {_COLUMNS} FROM model_version WHERE model_version_id = %s",
                    (model_version_id,))
        record = cur.fetchone()
    if record is None:
        raise RegistryError(f"model version id {model_version_id} does not exist")
    return _row(record)


def get_production(url: str, model_name: str) -> ModelVersionRow | None:
    with transaction(url) as cur:
        cur.execute(
            f"SELECT {_COLUMNS} FROM model_version WHERE model_name = %s AND stage = 'production'",
            (model_name,),
        )
        record = cur.fetchone()
    return None if record is None else _row(record)


def promote(url: str, model_version_id: int, *, expected_champion_id: int | None,
            evaluation_run_id: int | None = None) -> int | None:
    """Make a candidate the production model and archive the previous one, atomically.

    ``expected_champion_id`` is the production version the candidate was compared with
    (None when there was none). If another version was promoted since, the comparison is
    stale and the promotion is refused, so two candidates evaluated at the same time
    cannot both be promoted. All versions of the model name are locked for the duration;
    the partial unique index ``model_version_model_name_production_key`` is the last line
    of defence. Returns the id of the archived version (None if there was none).

    ``evaluation_run_id``, the passed run of this version the promotion rests on, is marked
    promoted (``evaluation_run.promoted_at``) in the same transaction; from then on the
    database refuses any change to that run and its results (migration 0020).
    """
    with transaction(url) as cur:
        cur.execute(
            "SELECT model_name, stage FROM model_version WHERE model_version_id = %s",
            (model_version_id,),
        )
        record = cur.fetchone()
        if record is None:
            raise RegistryError(f"model version id {model_version_id} does not exist")
        model_name = record[0]
        cur.execute(
            """SELECT model_version_id, stage FROM model_version WHERE model_name = %s
               ORDER BY model_version_id FOR UPDATE""",
            (model_name,),
        )
        stages = dict(cur.fetchall())
        current = next((mv for mv, st in stages.items() if st == "production"), None)
        if stages[model_version_id] != "candidate":
            raise RegistryError(
                f"only a candidate can be promoted; {model_name!r} version id "
                f"{model_version_id} is {stages[model_version_id]!r}"
            )
        if current != expected_champion_id:
            raise RegistryError(
                f"{model_name!r}: production changed since this candidate was evaluated "
                f"(compared with version id {expected_champion_id}, now {current}); re-run the evaluation"
            )
        if current is not None:
            cur.execute(
                """UPDATE model_version SET stage = 'archived', stage_changed_at = now()
                   WHERE model_version_id = %s""",
                (current,),
            )
        cur.execute(
            """UPDATE model_version SET stage = 'production', stage_changed_at = now()
               WHERE model_version_id = %s""",
            (model_version_id,),
        )
        if evaluation_run_id is not None:
            cur.execute(
                """UPDATE evaluation_run SET promoted_at = now()
                   WHERE evaluation_run_id = %s AND model_version_id = %s AND status = 'passed'""",
                (evaluation_run_id, model_version_id),
            )
            if cur.rowcount != 1:
                raise RegistryError(
                    f"evaluation run {evaluation_run_id} is not a passed run of {model_name!r} "
                    f"version id {model_version_id}; nothing promoted")
    return current


def set_drifting(url: str, model_version_id: int, drifting: bool) -> None:
    with transaction(url) as cur:
        cur.execute(
            "UPDATE model_version SET is_drifting = %s WHERE model_version_id = %s",
            (drifting, model_version_id),
        )
