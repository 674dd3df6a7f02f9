"""What a drift attempt with less evidence than the interval's verdict ends as (issue #39.1).

An attempt that finds no data (or too few values) after an attempt of the same interval made
a verdict on data is recorded beside it and leaves that verdict current
(:mod:`modelgate.store.drift_attempts`): it raises no drift alarm and ends with its own status.
"""

from __future__ import annotations

import logging

from modelgate.pipelines.context import Context
from modelgate.store import drift_attempts

log = logging.getLogger(__name__)


def kept_status(ctx: Context, run_id: int) -> str | None:
    """The status of drift run ``run_id``'s latest attempt when it was recorded beside an earlier verdict
    on data (logged as a warning), None when it is the interval's current result."""
    kept = drift_attempts.kept_beside(ctx.db_url, run_id)
    if kept is None:
        return None
    attempt, status, current = kept
    log.warning("drift run %d attempt %d ended %s; the interval keeps the verdict of attempt %d, "
                "made on data (analytics.drift_attempts lists both)", run_id, attempt,
                status, current)
    return status
