"""An evaluation run's reference and its step results, and how a run ends in failure.

Each step reads what it needs from the object store or the database and returns ids or
object keys, never data frames. Object keys are deterministic in the run key, so a
re-run overwrites instead of adding. Step results that later steps need are stored as
pickles under ``runs/evaluation/<run key>/`` (our own bucket, written by our own code:
that is the trust boundary for unpickling). The steps themselves are a module each
(``prepare_step``, ``score_step``, ``metrics_step``, ``explain_step``, ``fairness_step``,
``gate_step``, ``report_step``, ``store_step``, ``promote_step``); their order is
:mod:`modelgate.pipelines.evaluation.runner`'s, and the DAG and the CLI call the same steps.
"""

from __future__ import annotations

import logging
import pickle
import time
from dataclasses import dataclass
from typing import Any

from modelgate.logsafe import one_line
from modelgate.pipelines import index_page, stored_pickles
from modelgate.pipelines.context import Context, safe_key_part
from modelgate.pipelines.payloads import RunRefDict
from modelgate.store import models, runs
from modelgate.store.db import DatabaseError

log = logging.getLogger("modelgate.evaluate")


class EvaluationBlocked(RuntimeError):
    """The promotion gate blocked the candidate; the message lists each breach."""


@dataclass(frozen=True, slots=True)
class RunRef:
    """What one step hands to the next: the run's id and key (small, XCom-friendly)."""

    evaluation_run_id: int
    run_key: str

    def prefix(self) -> str:
        return f"runs/evaluation/{safe_key_part(self.run_key)}"

    def as_dict(self) -> RunRefDict:
        return {"evaluation_run_id": self.evaluation_run_id, "run_key": self.run_key}


def put_pickle(ctx: Context, key: str, value: object) -> str:
    ctx.store.put_bytes(key, pickle.dumps(value, protocol=5), content_type="application/octet-stream")
    return key


def get_pickle(ctx: Context, key: str) -> Any:
    return stored_pickles.loads(ctx.store.get_bytes(key))


def model_row(ctx: Context, model_version_id: int) -> models.ModelVersionRow:
    return models.get_by_id(ctx.db_url, model_version_id)


def candidate_row(ctx: Context, run: runs.EvaluationRunRow) -> models.ModelVersionRow:
    """The run's model version, checked against the archive sha256 pinned on the run row.

    Every step reads the manifest through here, so all steps of one run see one manifest.
    """
    row = model_row(ctx, run.model_version_id)
    if run.archive_sha256 is not None and row.archive_sha256 != run.archive_sha256:
        raise models.RegistryError(
            f"evaluation run {run.evaluation_run_id} pinned archive sha256 {run.archive_sha256}, "
            f"but {row.model_name!r} v{row.version} now has {row.archive_sha256}")
    return row


FAIL_RECORD_ATTEMPTS = 3


def failure_reason(exc: BaseException) -> str:
    """One line: the exception's type and message, control characters escaped.

    >>> failure_reason(KeyboardInterrupt())
    'KeyboardInterrupt: interrupted'
    >>> print(failure_reason(ValueError("bad\\nline")))
    ValueError: bad\\nline
    """
    return one_line(f"{type(exc).__name__}: {str(exc) or 'interrupted'}")


def beat(ctx: Context, ref: RunRef) -> None:
    """Keep the run's heartbeat (``run_step`` calls this every minute while a step works)."""
    runs.beat(ctx.db_url, ref.evaluation_run_id)


def fail(ctx: Context, ref: RunRef, exc: BaseException) -> None:
    """Record a failed run with a one-line reason (type and message, no data rows); when the
    run's attempt stored its decision already, the failure is recorded beside it and the
    decision stands (:func:`~modelgate.store.runs.fail_evaluation_run`).

    Each attempt opens a fresh connection (the one that failed may be the cause); if every
    attempt fails the error is logged and the caller's exception is left to propagate: the
    row stays ``running`` and the next run of the model marks it ``abandoned``. The model's
    index page is rebuilt so it no longer lists the run.
    """

    reason = failure_reason(exc)
    log.error("evaluation run %d failed: %s", ref.evaluation_run_id, reason)
    for attempt in range(1, FAIL_RECORD_ATTEMPTS + 1):
        try:
            runs.fail_evaluation_run(ctx.db_url, ref.evaluation_run_id, reason)
            break
        except DatabaseError as db_exc:
            log.error("could not record the failure of evaluation run %d (attempt %d/%d): %s",
                      ref.evaluation_run_id, attempt, FAIL_RECORD_ATTEMPTS, failure_reason(db_exc))
            if attempt == FAIL_RECORD_ATTEMPTS:
                return
            time.sleep(0.5 * attempt)
    try:
        row = model_row(ctx, runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id).model_version_id)
    except (DatabaseError, LookupError):
        return
    rebuild_index(ctx, row.model_name)


def rebuild_index(ctx: Context, model_name: str) -> None:
    """Rebuild the model's index page after a state change; a failure here is only logged."""
    try:
        index_page.write_model_index(ctx, model_name)
    except Exception as exc:  # noqa: BLE001 - the run's state is recorded; the page is derived
        log.error("could not rebuild the index page of %s: %s", model_name, failure_reason(exc))
