"""Model versions in the results store: registration, lookup, promotion, retirement and the
listings ``modelgate model list`` / ``show`` print."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from modelgate.onnx.archive_checks import ArtifactError
from modelgate.onnx.manifest import Manifest
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
    manifest: Manifest
    stage: str
    is_drifting: bool


_COLUMNS = (
    "model_version_id, model_name, version, sha256, archive_sha256, archive_key, archive_uri, "
    "manifest, stage, is_drifting"
)


def _row(record: tuple[Any, ...]) -> ModelVersionRow:
    """The row, its ``manifest`` column (jsonb, the manifest's JSON form) read back as a Manifest."""
    values = list(record)
    index = ModelVersionRow.__slots__.index("manifest")
    try:
        values[index] = Manifest.from_dict(values[index])
    except ArtifactError as exc:
        raise RegistryError(f"model {values[1]!r} version {values[2]!r}: the stored manifest "
                            f"does not read as a manifest ({exc})") from exc
    return ModelVersionRow(*values)


def register(
    url: str,
    *,
    model_name: str,
    version: str,
    sha256: str,
    archive_sha256: str,
    archive_key: str,
    archive_uri: str,
    manifest: Manifest,
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
             json.dumps(manifest.to_dict(), sort_keys=True)),
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


def lock_model_versions(cur: Any, model_version_id: int) -> tuple[str, str, dict[int, str], int | None]:
    """Inside a transaction: lock every version of the model ``model_version_id`` belongs to
    (in id order, so two stage changes of one model wait for each other) and return the
    model's name, that version's label, each version id's stage and the production one's id
    (None when there is none).

    Raises
    ------
    RegistryError
        When ``model_version_id`` does not exist.
    """
    cur.execute("SELECT model_name, version FROM model_version WHERE model_version_id = %s",
                (model_version_id,))
    record = cur.fetchone()
    if record is None:
        raise RegistryError(f"model version id {model_version_id} does not exist")
    model_name, version = record
    cur.execute(
        """SELECT model_version_id, stage FROM model_version WHERE model_name = %s
           ORDER BY model_version_id FOR UPDATE""",
        (model_name,),
    )
    stages = dict(cur.fetchall())
    current = next((mv for mv, st in stages.items() if st == "production"), None)
    return model_name, version, stages, current


def make_production(cur: Any, model_version_id: int, *, archiving: int | None) -> None:
    """Inside the transaction of :func:`lock_model_versions`: archive the production version
    ``archiving`` (None: there is none) and make ``model_version_id`` production."""
    if archiving is not None:
        cur.execute(
            """UPDATE model_version SET stage = 'archived', stage_changed_at = now()
               WHERE model_version_id = %s""",
            (archiving,),
        )
    cur.execute(
        """UPDATE model_version SET stage = 'production', stage_changed_at = now()
           WHERE model_version_id = %s""",
        (model_version_id,),
    )


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
        model_name, _, stages, current = lock_model_versions(cur, model_version_id)
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
        make_production(cur, model_version_id, archiving=current)
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


def retire(url: str, model_name: str, version: str, *, by: str,
           reason: str) -> tuple[RetirementRecord, bool]:
    """Retire a candidate that will never be promoted; returns (record, changed).

    The row is kept (the registry is append-only): its stage becomes ``retired`` with who,
    when and why (migration 0018), and promotion, which takes candidates only, refuses it from
    then on. Retiring a retired version again changes nothing and returns the first record.
    A version in any other stage than ``candidate`` (production above all) is refused.
    """
    if not by.strip() or not reason.strip():
        raise ValueError(f"retiring needs who and why; got by={by!r}, reason={reason!r}")
    with transaction(url) as cur:
        cur.execute(
            """SELECT stage FROM model_version WHERE model_name = %s AND version = %s
               FOR UPDATE""", (model_name, version))
        record = cur.fetchone()
        if record is None:
            raise RegistryError(f"model {model_name!r} version {version!r} is not registered")
        stage = record[0]
        changed = stage == "candidate"
        if changed:
            cur.execute(
                """UPDATE model_version SET stage = 'retired', stage_changed_at = now(),
                          retired_at = now(), retired_by = %s, retired_reason = %s
                   WHERE model_name = %s AND version = %s""",
                (by, reason, model_name, version))
        elif stage != "retired":
            raise RegistryError(
                f"model {model_name!r} version {version!r} is {stage!r}; only a candidate can be "
                "retired" + (" (promote another version first)" if stage == "production" else ""))
        cur.execute(
            """SELECT model_name, version, retired_at, retired_by, retired_reason
               FROM model_version WHERE model_name = %s AND version = %s""",
            (model_name, version))
        return RetirementRecord(*cur.fetchone()), changed


@dataclass(frozen=True, slots=True)
class RetirementRecord:
    model_name: str
    version: str
    retired_at: dt.datetime
    retired_by: str
    retired_reason: str


@dataclass(frozen=True, slots=True)
class VersionListing:
    """One registered version as ``modelgate model list`` and ``show`` print it."""

    model_name: str
    version: str
    stage: str
    is_drifting: bool
    sha256: str
    registered_at: dt.datetime
    stage_changed_at: dt.datetime
    evaluation_runs: int
    latest_evaluation_status: str | None
    latest_gate_passed: bool | None
    latest_gate_summary: str | None  # the summary's first line (the counts)
    drift_runs: int
    retired_at: dt.datetime | None
    retired_by: str | None
    retired_reason: str | None


def list_versions(url: str, model_name: str | None = None,
                  version: str | None = None) -> list[VersionListing]:
    """Registered versions (all, one model's, or one), by model name then registration."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT mv.model_name, mv.version, mv.stage, mv.is_drifting, mv.sha256,
                      mv.registered_at, mv.stage_changed_at,
                      (SELECT count(*) FROM evaluation_run r
                       WHERE r.model_version_id = mv.model_version_id),
                      latest.status, latest.passed, latest.summary,
                      (SELECT count(*) FROM drift_run d WHERE d.model_version_id = mv.model_version_id),
                      mv.retired_at, mv.retired_by, mv.retired_reason
               FROM model_version mv
               LEFT JOIN LATERAL (
                   SELECT r.status, g.passed, split_part(g.summary, E'\n', 1) AS summary
                   FROM evaluation_run r
                   LEFT JOIN gate_decision g
                        ON g.evaluation_run_id = r.evaluation_run_id AND g.attempt = r.attempt
                   WHERE r.model_version_id = mv.model_version_id
                   ORDER BY r.started_at DESC, r.evaluation_run_id DESC LIMIT 1) latest ON true
               WHERE (%(name)s::text IS NULL OR mv.model_name = %(name)s)
                 AND (%(version)s::text IS NULL OR mv.version = %(version)s)
               ORDER BY mv.model_name, mv.registered_at, mv.model_version_id""",
            {"name": model_name, "version": version})
        return [VersionListing(*record) for record in cur.fetchall()]


@dataclass(frozen=True, slots=True)
class RunLine:
    """One evaluation or drift run of a version, for ``modelgate model show``."""

    kind: str  # 'evaluation' | 'drift'
    run_id: int
    version: str
    status: str
    started_at: dt.datetime
    interval_start: dt.datetime | None
    detail: str | None  # failure reason, or the first line of the gate's summary
    has_report: bool
    breaches: list[str]  # each failed blocking gate check, or each drifted feature, as text


def runs_of(url: str, model_name: str, version: str | None = None, *,
            limit: int = 20) -> list[RunLine]:
    """The newest ``limit`` evaluation runs and drift runs of a model (or one version)."""
    with transaction(url) as cur:
        cur.execute(
            """(SELECT 'evaluation', r.evaluation_run_id, mv.version, r.status, r.started_at,
                       NULL::timestamptz, coalesce(r.failure_reason, split_part(g.summary, E'\n', 1)),
                       r.report_key IS NOT NULL,
                       ARRAY(SELECT c.check_id || ': ' || c.reason FROM gate_check c
                             WHERE c.evaluation_run_id = r.evaluation_run_id AND c.attempt = r.attempt
                               AND c.verdict = 'fail' AND c.severity = 'block' ORDER BY c.check_id)
                FROM evaluation_run r JOIN model_version mv USING (model_version_id)
                LEFT JOIN gate_decision g
                     ON g.evaluation_run_id = r.evaluation_run_id AND g.attempt = r.attempt
                WHERE mv.model_name = %(name)s AND (%(version)s::text IS NULL OR mv.version = %(version)s)
                ORDER BY r.started_at DESC, r.evaluation_run_id DESC LIMIT %(limit)s)
               UNION ALL
               (SELECT 'drift', d.drift_run_id, mv.version, d.status, d.started_at,
                       d.interval_start, d.failure_reason, d.report_key IS NOT NULL,
                       ARRAY(SELECT format('%%s: %%s = %%s > threshold %%s', f.feature, f.statistic_name,
                                           round(f.statistic_value::numeric, 4),
                                           round(f.threshold::numeric, 4))
                             FROM feature_drift f WHERE f.drift_run_id = d.drift_run_id
                               AND f.verdict = 'drift' ORDER BY f.drift_rank)
                FROM drift_run d JOIN model_version mv USING (model_version_id)
                WHERE mv.model_name = %(name)s AND (%(version)s::text IS NULL OR mv.version = %(version)s)
                ORDER BY d.interval_start DESC, d.drift_run_id DESC LIMIT %(limit)s)""",
            {"name": model_name, "version": version, "limit": limit})
        return [RunLine(*record) for record in cur.fetchall()]


def report_key(url: str, kind: str, run_id: int) -> str | None:
    """The object key of an evaluation or drift run's report; None when it has none.

    Raises :class:`RegistryError` when no such run exists.
    """
    table, key = {"evaluation": ("evaluation_run", "evaluation_run_id"),
                  "drift": ("drift_run", "drift_run_id")}[kind]
    with transaction(url) as cur:
        cur.execute(f"SELECT report_key FROM {table} WHERE {key} = %s", (run_id,))
        record = cur.fetchone()
    if record is None:
        raise RegistryError(f"there is no {kind} run {run_id}")
    return None if record[0] is None else str(record[0])
