"""Rollbacks in the results store: production back to an earlier version, and their history.

A rollback changes stages the way a promotion does (:func:`modelgate.store.models.promote`): all
versions of the model name are locked, production must still be the version the rollback was
planned from, the current production version is archived and the target becomes production, and
the history row is written in the same transaction (``model_rollback``, migration 0025; the
database refuses a row whose run is not a passed run of the target, and any change or delete).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from modelgate.store.db import transaction
from modelgate.store.models import RegistryError, lock_model_versions, make_production


@dataclass(frozen=True, slots=True)
class RollbackRecord:
    """One ``model_rollback`` row: who returned production from which version to which, when and why."""

    model_rollback_id: int
    model_name: str
    from_version: str
    to_version: str
    evaluation_run_id: int
    rolled_back_by: str
    reason: str
    rolled_back_at: dt.datetime


_COLUMNS = ("model_rollback_id, model_name, from_version, to_version, evaluation_run_id, "
            "rolled_back_by, reason, rolled_back_at")


def passed_run(url: str, model_version_id: int) -> int | None:
    """The passed evaluation run (with a passed gate decision) a rollback to this version rests
    on: the run that promoted it when there is one, else the newest; None if it never passed."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT er.evaluation_run_id FROM evaluation_run er
               JOIN gate_decision gd ON gd.evaluation_run_id = er.evaluation_run_id
                                     AND gd.attempt = er.attempt  -- its latest decision
               WHERE er.model_version_id = %s AND er.status = 'passed' AND gd.passed
               ORDER BY er.promoted_at IS NOT NULL DESC, er.finished_at DESC NULLS LAST,
                        er.evaluation_run_id DESC
               LIMIT 1""", (model_version_id,))
        record = cur.fetchone()
    return None if record is None else int(record[0])


def roll_back(url: str, model_version_id: int, *, expected_champion_id: int,
              evaluation_run_id: int, by: str, reason: str) -> RollbackRecord:
    """Make the archived version ``model_version_id`` production again, archive the current
    one and record the rollback, atomically.

    ``expected_champion_id`` is the production version the rollback was planned from; if
    production changed since (a promotion or another rollback in between), nothing changes and
    :class:`~modelgate.store.models.RegistryError` says so, so a rollback racing a promotion
    cannot leave two production versions or archive a version nobody looked at. The partial
    unique index ``model_version_model_name_production_key`` is the last line of defence.
    """
    with transaction(url) as cur:
        model_name, version, stages, current = lock_model_versions(cur, model_version_id)
        if stages[model_version_id] != "archived":
            raise RegistryError(f"only an archived (former production) version can be rolled back "
                                f"to; {model_name!r} v{version} is {stages[model_version_id]!r}")
        if current != expected_champion_id:
            raise RegistryError(
                f"{model_name!r}: production changed since the rollback was planned (from version "
                f"id {expected_champion_id}, now {current}); nothing changed, check `modelgate model "
                "show` and roll back again")
        make_production(cur, model_version_id, archiving=current)
        cur.execute(
            f"""INSERT INTO model_rollback (model_name, from_version, to_version, evaluation_run_id,
                                            rolled_back_by, reason)
                SELECT %s, version, %s, %s, %s, %s FROM model_version WHERE model_version_id = %s
                RETURNING {_COLUMNS}""",
            (model_name, version, evaluation_run_id, by, reason, current))
        return RollbackRecord(*cur.fetchone())


def history(url: str, model_name: str, version: str | None = None) -> list[RollbackRecord]:
    """The rollbacks of a model (of one version: from it or to it), oldest first."""
    with transaction(url) as cur:
        cur.execute(
            f"""SELECT {_COLUMNS} FROM model_rollback WHERE model_name = %(name)s
                  AND (%(version)s::text IS NULL OR %(version)s IN (from_version, to_version))
                ORDER BY rolled_back_at, model_rollback_id""",
            {"name": model_name, "version": version})
        rows: list[Any] = cur.fetchall()
    return [RollbackRecord(*row) for row in rows]
