"""Attempts of drift runs, and which one is the interval's current result (migrations 0038, 0040).

Every start of a drift run (one per model version and interval) is an attempt. When an
attempt ends, trigger ``drift_attempt_recorded_trigger`` copies its status, verdict, counts,
reasons, report and scored sample (``scores_uri``, how it was scored) into ``drift_attempt``,
a row that never changes, and makes it the run
row's ``current_attempt``. One exception, applied here: an attempt that ends with less
evidence (``no_data`` or ``insufficient_data``) than the current attempt, whose verdict was
made on data (``ok`` or ``drift``, degraded or not), is recorded beside it; the run row, its
feature, joint and estimate rows, the interval's ``scored_interval`` row (the scored sample
late labels are joined to; every attempt's sample has a key of its own) and
``model_version.is_drifting`` keep the earlier result.
A failed or abandoned attempt is recorded the same way and becomes the current one (the row
says it failed; ``is_drifting`` stays), but clears no feature, joint or estimate row of an
earlier verdict on data, nor takes the interval's scored sample: an attempt with less
evidence after it puts that verdict back (:func:`latest_on_data`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from modelgate.store.db import transaction

#: Verdicts made on data: an attempt with less evidence never replaces one of these.
ON_DATA = ("ok", "drift")
#: Verdicts that decide nothing about the data.
LESS_EVIDENCE = ("no_data", "insufficient_data")

# what put_back restores: the attempt's result and its scored sample (migration 0040)
_RESULT = ("status, verdict, failure_reason, degraded_reason, evidence_reason, provider, "
           "rows_available, rows_sampled, rows_labelled, rows_set_aside, n_features_breached, "
           "report_key, report_uri, started_at, finished_at, scores_uri, provider_reason, "
           "tf32_allowed, set_aside_reason")


@dataclass(frozen=True, slots=True)
class DriftAttempt:
    """One ended attempt of a drift run, as ``analytics.drift_attempts`` shows it."""

    drift_run_id: int
    attempt: int
    is_current: bool
    status: str
    verdict: str | None
    reason: str | None  # failure, evidence or degraded reason, the first set
    rows_sampled: int | None
    rows_labelled: int | None
    report_uri: str | None
    finished_at: dt.datetime


def latest_on_data(cur: Any, run_id: int) -> int | None:
    """The latest ended attempt of drift run ``run_id`` whose verdict was made on data (None:
    none was). Its feature, joint and estimate rows are the ones stored for the run: a later
    attempt with less evidence is kept beside it and a failed one clears none of them."""
    cur.execute("""SELECT max(attempt) FROM drift_attempt WHERE drift_run_id = %s AND verdict = ANY(%s)""",
                (run_id, list(ON_DATA)))
    record = cur.fetchone()
    return None if record is None or record[0] is None else int(record[0])


def data_verdict_kept(cur: Any, run_id: int, verdict: str) -> int | None:
    """Inside the transaction that stores an attempt's ``verdict``: the earlier attempt whose
    verdict on data the row keeps instead (None when ``verdict`` replaces it). That attempt
    is the latest with a verdict on data, also when a failed attempt came after it. Locks
    the row."""
    if verdict not in LESS_EVIDENCE:
        return None
    cur.execute("SELECT 1 FROM drift_run WHERE drift_run_id = %s FOR UPDATE", (run_id,))
    return latest_on_data(cur, run_id)


def data_verdict_stands(cur: Any, run_id: int) -> bool:
    """Whether an ended attempt of drift run ``run_id`` made a verdict on data, which the
    running attempt replaces only with one of its own."""
    return latest_on_data(cur, run_id) is not None


def put_back(cur: Any, run_id: int, attempt: int) -> None:
    """Show ``attempt``'s recorded result in the run row again, its scored sample
    (``scores_uri``) included (after a later attempt with less evidence ended; that attempt
    stays recorded beside it)."""
    cur.execute(
        f"""UPDATE drift_run dr SET ({_RESULT}, current_attempt)
                = (SELECT {_RESULT}, attempt FROM drift_attempt da
                   WHERE da.drift_run_id = dr.drift_run_id AND da.attempt = %s)
            WHERE dr.drift_run_id = %s""", (attempt, run_id))


def kept_beside(url: str, run_id: int) -> tuple[int, str, int] | None:
    """``(attempt, its status, current attempt)`` when the run's latest attempt ended with
    less evidence and was recorded beside an earlier verdict on data; None otherwise."""
    with transaction(url) as cur:
        return kept_beside_in(cur, run_id)


def kept_beside_in(cur: Any, run_id: int) -> tuple[int, str, int] | None:
    """:func:`kept_beside` inside ``cur``'s transaction."""
    cur.execute(
        """SELECT da.attempt, da.status, dr.current_attempt FROM drift_run dr
           JOIN drift_attempt da ON da.drift_run_id = dr.drift_run_id AND da.attempt = dr.attempt
           WHERE dr.drift_run_id = %s AND dr.current_attempt < dr.attempt""", (run_id,))
    record = cur.fetchone()
    return None if record is None else (int(record[0]), str(record[1]), int(record[2]))


def attempts_of(url: str, run_id: int) -> list[DriftAttempt]:
    """Every ended attempt of drift run ``run_id``, first first."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT drift_run_id, attempt, is_current, status, verdict,
                      COALESCE(failure_reason, evidence_reason, degraded_reason), rows_sampled,
                      rows_labelled, report_uri, finished_at
               FROM analytics.drift_attempts WHERE drift_run_id = %s ORDER BY attempt""",
            (run_id,))
        return [DriftAttempt(int(r[0]), int(r[1]), bool(r[2]), *r[3:]) for r in cur.fetchall()]


def kept_in_interval(url: str, model_name: str,
                     interval_start: dt.datetime) -> tuple[int, str, int, str] | None:
    """Like :func:`kept_beside` for the production version's run of the interval starting at
    ``interval_start``: ``(attempt, its status, current attempt, current verdict)``."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT da.attempt, da.status, dr.current_attempt, dr.verdict FROM drift_run dr
               JOIN model_version mv ON mv.model_version_id = dr.model_version_id
               JOIN drift_attempt da ON da.drift_run_id = dr.drift_run_id AND da.attempt = dr.attempt
               WHERE mv.model_name = %s AND mv.stage = 'production' AND dr.interval_start = %s
                 AND dr.current_attempt < dr.attempt
               ORDER BY dr.interval_end DESC LIMIT 1""", (model_name, interval_start))
        record = cur.fetchone()
    return None if record is None else (int(record[0]), str(record[1]), int(record[2]), str(record[3]))
