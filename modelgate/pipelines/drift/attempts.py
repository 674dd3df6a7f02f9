"""What ``decide`` returns for a drift attempt that judged nothing, without an alarm (issue #39).

An attempt that finds no data (or too few values) after an attempt of the same interval made
a verdict on data is recorded beside it and leaves that verdict current
(:mod:`modelgate.store.drift_attempts`): it ends with its own status, whatever the verdict
still shown for the interval. An attempt whose own verdict is ``insufficient_data`` decides
nothing either (:mod:`modelgate.pipelines.drift.verdict`).
"""

from __future__ import annotations

import logging

from modelgate.pipelines.context import Context
from modelgate.store import drift_attempts, drift_runs

log = logging.getLogger("modelgate.drift")


def unjudged_status(ctx: Context, run_id: int) -> str | None:
    """The status of drift run ``run_id``'s latest attempt when it judged nothing (logged as
    a warning): kept beside an earlier verdict on data, or ``insufficient_data``. None when
    ``decide`` judges the run's breaches."""
    kept = drift_attempts.kept_beside(ctx.db_url, run_id)
    if kept is not None:
        attempt, status, current = kept
        log.warning("drift run %d attempt %d ended %s; the interval keeps the verdict of attempt %d, "
                    "made on data (analytics.drift_attempts lists both)", run_id, attempt, status,
                    current)
        return status
    if drift_runs.verdict_of(ctx.db_url, run_id) == "insufficient_data":
        log.warning("drift run %d: too few values for a verdict (insufficient_data)", run_id)
        return drift_runs.get_drift_run(ctx.db_url, run_id).status
    return None
