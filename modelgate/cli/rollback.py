"""Rolling production back to an earlier version that passed its gate.

The way back after a promotion that should not have happened: ``modelgate model rollback NAME
--to VERSION --reason TEXT`` calls :func:`roll_back`. The target must be an ``archived`` version
(a former production version; promotion archives the one it replaces) with a stored passed
evaluation whose gate decision passed. Refused, naming why (:class:`RollbackRefused`):

* an empty reason or author: a rollback says who and why;
* a model with no version in production (there is nothing to roll back from);
* a target already in production;
* a ``retired`` target: retirement means the version must never serve (migration 0018 keeps it
  final), and it never did: only candidates are retired;
* a ``candidate`` target (never in production): a candidate reaches production only through the
  gate against the current champion (``modelgate evaluate --promote``), never by rollback;
* a target with no passed gate decision.

Like a promotion, the target's drift reference sketch is made sure of first (usually it exists
from its first promotion; it is built when the model is monitored and the version has none,
e.g. monitoring was set up after it was archived), then the stages change in one transaction
that checks production is still the version the rollback was planned from
(:func:`modelgate.store.rollbacks.roll_back`), and the model's index page is rebuilt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from modelgate.pipelines import index_page
from modelgate.pipelines.context import Context
from modelgate.pipelines.drift.monitor import reference_on_promotion
from modelgate.store import models, rollbacks

log = logging.getLogger("modelgate.rollback")


class RollbackRefused(ValueError):
    """A rollback that cannot be done as asked (the message says why); nothing changed."""


@dataclass(frozen=True, slots=True)
class RollbackOutcome:
    """The stored rollback and whether the target's drift reference sketch was made sure of."""

    record: rollbacks.RollbackRecord
    sketched: bool


def check_rollback(ctx: Context, model_name: str, to_version: str, *, by: str,
                   reason: str) -> tuple[models.ModelVersionRow, models.ModelVersionRow, int]:
    """The target, the current production version and the passed run the rollback rests on.

    Raises
    ------
    RollbackRefused
        For each refusal in the module docstring.
    modelgate.store.models.RegistryError
        When ``to_version`` is not registered.
    """
    if not by.strip() or not reason.strip():
        raise RollbackRefused(f"--reason and --by must not be empty: a rollback says who and why "
                              f"(got by={by!r}, reason={reason!r})")
    target = models.get(ctx.db_url, model_name, to_version)
    current = models.get_production(ctx.db_url, model_name)
    what = f"{model_name!r} v{to_version}"
    if current is None:
        raise RollbackRefused(f"{model_name!r} has no version in production, so there is nothing to "
                              "roll back from; promote one with modelgate evaluate --promote")
    if target.stage == "production":
        raise RollbackRefused(f"{what} is already in production")
    if target.stage == "retired":
        raise RollbackRefused(f"{what} is retired: a retired version never serves (retirement is "
                              "final)")
    if target.stage != "archived":
        raise RollbackRefused(
            f"{what} is {target.stage!r} and was never in production; a rollback returns to a "
            "former production version (a candidate is promoted with modelgate evaluate --promote)")
    run_id = rollbacks.passed_run(ctx.db_url, target.model_version_id)
    if run_id is None:
        raise RollbackRefused(f"{what} never passed its gate (no passed evaluation with a passed "
                              "gate decision is stored); a rollback returns only to a version that did")
    return target, current, run_id


def roll_back(ctx: Context, model_name: str, to_version: str, *, by: str,
              reason: str) -> RollbackOutcome:
    """Return production of ``model_name`` to ``to_version``, recording who, when and why.

    Raises
    ------
    RollbackRefused
        See :func:`check_rollback`.
    modelgate.store.models.RegistryError
        When the version is not registered, or production changed since the checks (a
        promotion or another rollback at the same moment): nothing changed then.
    """
    target, current, run_id = check_rollback(ctx, model_name, to_version, by=by, reason=reason)
    # the sketch first, as at promotion: a version that cannot be monitored is not put back
    sketched = reference_on_promotion(ctx, target) is not None
    record = rollbacks.roll_back(ctx.db_url, target.model_version_id,
                                 expected_champion_id=current.model_version_id,
                                 evaluation_run_id=run_id, by=by, reason=reason)
    log.info("rolled %s back from v%s to v%s (resting on evaluation run %d)", model_name,
             record.from_version, record.to_version, run_id)
    try:
        index_page.write_model_index(ctx, model_name)
    except Exception as exc:  # noqa: BLE001 - the rollback is recorded; the page is derived
        log.error("could not rebuild the index page of %s: %s", model_name, exc)
    return RollbackOutcome(record, sketched)
