"""What happens around a stored decision: the policy compared with the version's previous
attempt before it, the steps after it, and their retries.

Before the decision (``prepare``): an attempt's policy is compared with the policy of the
version's previous decided attempt (:func:`modelgate.store.attempts.previous_policy`), so a
policy loosened between attempts, in any of its sources (task default, the model's policy
file, an ad-hoc file), is seen even when the model's file itself was loosened. The
differences are stored with the attempt and a looser one needs ``--allow-looser-policy`` to
promote (:mod:`.policy_provenance`).

After the decision (``store``): the StatsD gauge and the model's index page are derived from
what is stored. A failure of either is recorded beside the decision
(``evaluation_step_failure``), never instead of it, and retried by the next stored run of the
model or by ``modelgate gc`` (:func:`retry_pending`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from modelgate.evaluation import PolicyChange, PolicyError, diff_policies, load_policy
from modelgate.gauges import emit as emit_metrics
from modelgate.gauges import gate_metrics
from modelgate.logsafe import one_line
from modelgate.pipelines import index_page
from modelgate.store import attempts

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context

log = logging.getLogger("modelgate.attempts")


@dataclass(frozen=True, slots=True)
class PolicyChanges:
    """How an attempt's policy differs from the previous decided attempt's (``previous`` None
    when the version has none): change records and whether a blocking check was loosened."""

    previous: tuple[int, int] | None
    changes: tuple[dict[str, Any], ...]
    looser: bool


def changes_from_previous(ctx: Context, model_version_id: int, run_id: int,
                          policy: Any) -> PolicyChanges:
    """Compare ``policy`` (an :class:`~modelgate.evaluation.policy.Policy`) with the policy of
    the version's previous decided attempt. A stored policy the loader no longer reads is one
    unordered change of a blocking check: looser, so promoting needs the explicit allowance."""

    previous = attempts.previous_policy(ctx.db_url, model_version_id, run_id=run_id)
    if previous is None:
        return PolicyChanges(None, (), False)
    where = (previous.evaluation_run_id, previous.attempt)
    try:
        reference = load_policy(previous.text)
    except PolicyError as exc:  # stored by another version of the format: cannot be ordered
        unreadable = PolicyChange("policy", "text", f"unreadable: {exc}", None, "unordered", True)
        return PolicyChanges(where, (unreadable.to_record(),), True)
    diff = diff_policies(policy, reference)
    return PolicyChanges(where, tuple(c.to_record() for c in diff.changes), diff.looser)


def _reason(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {str(exc) or 'interrupted'}")


def _guarded(ctx: Context, run_id: int, attempt: int, step: attempts.Step,
             action: Callable[[], object]) -> bool:
    """Run ``action``; on failure record it beside the decision (or log, when even that
    fails) and return False. The decision is stored already and stays as it is."""
    try:
        action()
        return True
    except Exception as exc:  # noqa: BLE001 - any failure here is recorded, never raised
        reason = _reason(exc)
        log.error("evaluation run %d attempt %d: %s failed after the decision was stored: %s",
                  run_id, attempt, step, reason)
        try:
            attempts.record_step_failure(ctx.db_url, run_id, attempt, step, reason)
        except Exception as db_exc:  # noqa: BLE001 - the database may be the cause
            log.error("could not record that failure: %s", _reason(db_exc))
        return False


def after_decision(ctx: Context, run_id: int, attempt: int, *, model_name: str, version: str,
                   passed: bool, checks_breached: int) -> bool:
    """Send the decision's gauge and rebuild the model's index page; retry the model's earlier
    failed ones. Returns True when both succeeded; never raises."""
    pending = _pending(ctx, model_name)
    gauge = _guarded(ctx, run_id, attempt, "statsd_gauge", lambda: emit_metrics(gate_metrics(
        model_name, version, passed=passed, checks_breached=checks_breached)))
    page = _guarded(ctx, run_id, attempt, "index_page",
                    lambda: index_page.write_model_index(ctx, model_name))
    _retry(ctx, pending, page_written=page, by=f"evaluation run {run_id}")
    return gauge and page


def _pending(ctx: Context, model_name: str | None) -> list[attempts.PendingFailure]:
    try:
        return attempts.pending_failures(ctx.db_url, model_name)
    except Exception as exc:  # noqa: BLE001 - retries wait for the next run or gc
        log.error("could not read pending step failures: %s", _reason(exc))
        return []


def _retry(ctx: Context, pending: list[attempts.PendingFailure], *, page_written: bool,
           by: str) -> int:
    """Retry ``pending``: an index page counts as retried once the model's page was written
    since; a gauge is sent again. Returns how many were retried successfully."""
    done = [p.failure_id for p in pending if p.step == "index_page" and page_written]
    for p in pending:
        if p.step == "statsd_gauge":
            try:
                emit_metrics(gate_metrics(p.model_name, p.version, passed=p.passed,
                                          checks_breached=p.checks_breached))
                done.append(p.failure_id)
            except Exception as exc:  # noqa: BLE001 - stays pending
                log.error("retrying the gauge of evaluation run %d failed: %s",
                          p.evaluation_run_id, _reason(exc))
    try:
        attempts.mark_retried(ctx.db_url, done, by=by)
    except Exception as exc:  # noqa: BLE001 - retried again next time; both are idempotent
        log.error("could not record retried step failures: %s", _reason(exc))
        return 0
    return len(done)


@dataclass(frozen=True, slots=True)
class Retried:
    """What :func:`retry_pending` did: failures retried successfully and failures left."""

    retried: int
    left: int


def retry_pending(ctx: Context, *, by: str = "gc") -> Retried:
    """Retry every pending index page and gauge failure (``modelgate gc`` calls this)."""
    pending = _pending(ctx, None)
    retried = 0
    for model_name in dict.fromkeys(p.model_name for p in pending):
        mine = [p for p in pending if p.model_name == model_name]
        page = True
        if any(p.step == "index_page" for p in mine):
            try:
                index_page.write_model_index(ctx, model_name)
            except Exception as exc:  # noqa: BLE001 - stays pending
                log.error("rebuilding the index page of %s failed: %s", model_name, _reason(exc))
                page = False
        retried += _retry(ctx, mine, page_written=page, by=by)
    return Retried(retried, len(pending) - retried)
