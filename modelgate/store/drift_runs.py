"""Drift runs, reference sketches and the ADWIN detector state in the results store."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.store import drift_attempts, drift_joint, estimation
from modelgate.store.db import transaction


class StaleDetectorState(RuntimeError):
    """Another run advanced the detector state since this run read it."""


@dataclass(frozen=True, slots=True)
class DriftRunRow:
    drift_run_id: int
    model_version_id: int
    interval_start: dt.datetime
    interval_end: dt.datetime
    status: str
    attempt: int = 1  # how many times the run was started (migration 0022)


def start_drift_run(url: str, *, model_version_id: int, interval_start: dt.datetime,
                    interval_end: dt.datetime) -> int:
    """Create the run row for (model version, interval), or reset it on a re-run (``attempt``
    one more, so its report gets a key of its own).

    The earlier attempt stays recorded in ``drift_attempt`` (:mod:`modelgate.store.drift_attempts`);
    its feature, joint and estimate rows stay until this attempt stores a verdict made on
    data, or fails. Concept-drift change points are kept because the labels behind them were
    consumed by the earlier attempt and are not fed twice.
    """
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO drift_run (model_version_id, interval_start, interval_end)
               VALUES (%s, %s, %s)
               ON CONFLICT ON CONSTRAINT drift_run_model_version_id_interval_start_interval_end_key
               DO UPDATE SET status = 'running', verdict = NULL, failure_reason = NULL,
                   attempt = drift_run.attempt + 1,
                   degraded_reason = NULL, rows_set_aside = NULL, set_aside_reason = NULL,
                   evidence_reason = NULL,
                   report_key = NULL, report_uri = NULL, started_at = now(), finished_at = NULL,
                   heartbeat_at = NULL
               RETURNING drift_run_id""",
            (model_version_id, interval_start, interval_end),
        )
        run_id = int(cur.fetchone()[0])
    return run_id


def beat(url: str, run_id: int) -> None:
    """Record a sign of life of the process running drift run ``run_id`` (while it runs)."""
    with transaction(url) as cur:
        cur.execute("UPDATE drift_run SET heartbeat_at = now() "
                    "WHERE drift_run_id = %s AND status = 'running'", (run_id,))


def abandon_stale_runs(url: str, model_name: str, *, stale_minutes: int,
                       interval_start: dt.datetime, interval_end: dt.datetime) -> list[int]:
    """Mark the model's ``running`` drift runs with no heartbeat for ``stale_minutes`` abandoned.

    Their process died without recording anything; the reason names the last sign of life
    and the interval whose run noticed. That interval's own row is left alone: its run is
    about to start again. Returns the ids marked.
    """
    with transaction(url) as cur:
        cur.execute(
            """UPDATE drift_run r SET status = 'abandoned', finished_at = now(),
                   failure_reason = 'abandoned: no heartbeat since '
                       || to_char(COALESCE(r.heartbeat_at, r.started_at) AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                       || ' (more than ' || %s || ' min); noticed by the run of interval '
                       || to_char(%s::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
               FROM model_version mv
               WHERE mv.model_version_id = r.model_version_id AND mv.model_name = %s
                 AND r.status = 'running'
                 AND NOT (r.interval_start = %s AND r.interval_end = %s)
                 AND COALESCE(r.heartbeat_at, r.started_at) < now() - make_interval(mins => %s)
               RETURNING r.drift_run_id""",
            (stale_minutes, interval_start, model_name, interval_start, interval_end, stale_minutes),
        )
        return sorted(int(r[0]) for r in cur.fetchall())


def get_drift_run(url: str, run_id: int) -> DriftRunRow:
    with transaction(url) as cur:
        cur.execute("""SELECT drift_run_id, model_version_id, interval_start, interval_end, status,
                              attempt
                       FROM drift_run WHERE drift_run_id = %s""", (run_id,))
        record = cur.fetchone()
    if record is None:
        raise LookupError(f"drift run {run_id} does not exist")
    return DriftRunRow(*record)


def interval_end_of(url: str, model_version_id: int, interval_start: dt.datetime) -> dt.datetime | None:
    """End of the (latest) drift-run interval of a model version starting at ``interval_start``."""
    with transaction(url) as cur:
        cur.execute("""SELECT max(interval_end) FROM drift_run
                       WHERE model_version_id = %s AND interval_start = %s""",
                    (model_version_id, interval_start))
        record = cur.fetchone()
    return None if record is None or record[0] is None else record[0]


def fail_drift_run(url: str, run_id: int, reason: str) -> None:
    """Mark the run failed; a run already failed keeps its first reason (the cause).

    A failure after an attempt was kept beside an earlier verdict on data changes nothing:
    that attempt ended (its record says how), and the row shows the earlier verdict. Otherwise
    the row says ``failed``; the feature, joint and estimate rows are cleared unless they are
    those of an attempt's verdict made on data (:func:`_clear_partial_rows`).
    """
    with transaction(url) as cur:
        if drift_attempts.kept_beside_in(cur, run_id):
            return
        _clear_partial_rows(cur, run_id)
        cur.execute("""UPDATE drift_run SET status = 'failed',
                           failure_reason = CASE WHEN status = 'failed' THEN failure_reason ELSE %s END,
                           finished_at = COALESCE(finished_at, now())
                       WHERE drift_run_id = %s""", (reason[:4000], run_id))


def fail_lost_runs(url: str, *, interval_start: dt.datetime, interval_end: dt.datetime,
                   started_since: dt.datetime | None, reason: str) -> list[tuple[int, str]]:
    """Mark the interval's drift runs still ``running`` (started since ``started_since``)
    failed with ``reason``, their partial rows cleared like :func:`fail_drift_run`'s; returns
    (run id, model name) of each."""
    with transaction(url) as cur:
        cur.execute(
            """UPDATE drift_run r SET status = 'failed', failure_reason = %s,
                   finished_at = now()
               FROM model_version mv
               WHERE mv.model_version_id = r.model_version_id AND r.status = 'running'
                 AND r.interval_start = %s AND r.interval_end = %s
                 AND (%s::timestamptz IS NULL OR r.started_at >= %s::timestamptz)
               RETURNING r.drift_run_id, mv.model_name""",
            (reason[:4000], interval_start, interval_end, started_since, started_since),
        )
        failed = sorted((int(r[0]), str(r[1])) for r in cur.fetchall())
        for run_id, _ in failed:
            _clear_partial_rows(cur, run_id)
    return failed


def _clear_partial_rows(cur: Any, run_id: int) -> None:
    """Clear a failed run's feature, joint and estimate rows, unless an ended attempt made a
    verdict on data: those rows are its evidence, and stay (issue #39 point 1)."""
    if drift_attempts.latest_on_data(cur, run_id) is not None:
        return
    cur.execute("DELETE FROM feature_drift WHERE drift_run_id = %s", (run_id,))
    drift_joint.clear_run(cur, run_id)
    estimation.clear_run(cur, run_id)


def record_sample(url: str, run_id: int, *, provider: str | None, rows_available: int,
                  rows_sampled: int, scores_uri: str | None, provider_reason: str | None = None,
                  tf32_allowed: bool | None = None, rows_set_aside: int = 0,
                  set_aside_reason: str | None = None) -> None:
    """The run's sample: rows available and sampled, and those set aside unscored (with the
    count per column in ``set_aside_reason``)."""
    with transaction(url) as cur:
        cur.execute("""UPDATE drift_run SET provider = %s, rows_available = %s, rows_sampled = %s,
                       scores_uri = %s, provider_reason = %s, tf32_allowed = %s,
                       rows_set_aside = %s, set_aside_reason = %s
                       WHERE drift_run_id = %s""",
                    (provider, rows_available, rows_sampled, scores_uri, provider_reason,
                     tf32_allowed, rows_set_aside, set_aside_reason and set_aside_reason[:4000],
                     run_id))


def set_aside(url: str, run_id: int) -> tuple[int, str | None]:
    """How many sampled rows the run set aside unscored, and why (None: it set none aside)."""
    with transaction(url) as cur:
        cur.execute("SELECT rows_set_aside, set_aside_reason FROM drift_run WHERE drift_run_id = %s",
                    (run_id,))
        record = cur.fetchone()
    if record is None:
        return 0, None
    return int(record[0] or 0), None if record[1] is None else str(record[1])


def verdict_of(url: str, run_id: int) -> str | None:
    """The run's stored verdict (None until it is stored)."""
    with transaction(url) as cur:
        cur.execute("SELECT verdict FROM drift_run WHERE drift_run_id = %s", (run_id,))
        record = cur.fetchone()
    return None if record is None or record[0] is None else str(record[0])


def get_reference(url: str, model_version_id: int) -> str | None:
    with transaction(url) as cur:
        cur.execute("SELECT object_key FROM reference_sketch WHERE model_version_id = %s",
                    (model_version_id,))
        record = cur.fetchone()
    return None if record is None else str(record[0])


def put_reference(url: str, *, model_version_id: int, object_key: str, object_uri: str,
                  n_rows: int, n_features: int) -> None:
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO reference_sketch (model_version_id, object_key, object_uri, n_rows, n_features)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT ON CONSTRAINT reference_sketch_pkey DO NOTHING""",
            (model_version_id, object_key, object_uri, n_rows, n_features),
        )


def upsert_scored_interval(url: str, *, model_version_id: int, interval_start: dt.datetime,
                           interval_end: dt.datetime, scores_key: str, rows: int,
                           run_id: int | None = None) -> None:
    """Point the interval's ``scored_interval`` row (what late labels are joined to) at a
    scored sample, until its labels are consumed.

    While drift run ``run_id``'s current attempt is an earlier one whose verdict was made on
    data, the row keeps that attempt's sample: this attempt takes it over only if its own
    verdict replaces that one (``scores`` of :func:`write_drift_results`).
    """
    with transaction(url) as cur:
        if run_id is not None and drift_attempts.data_verdict_stands(cur, run_id):
            return
        _upsert_scored(cur, (model_version_id, interval_start, interval_end, scores_key, rows))


def _upsert_scored(cur: Any, values: tuple[Any, ...]) -> None:
    cur.execute(
        """INSERT INTO scored_interval (model_version_id, interval_start, interval_end,
                                        scores_key, rows_scored)
           VALUES (%s, %s, %s, %s, %s)
           ON CONFLICT ON CONSTRAINT scored_interval_pkey DO UPDATE SET
               scores_key = EXCLUDED.scores_key, rows_scored = EXCLUDED.rows_scored
           WHERE scored_interval.labels_consumed_at IS NULL""", values)


def pending_label_intervals(url: str, model_version_id: int,
                            until: dt.datetime) -> list[tuple[dt.datetime, dt.datetime, str]]:
    """Scored intervals ending no later than ``until`` whose labels were not fed yet."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT interval_start, interval_end, scores_key FROM scored_interval
               WHERE model_version_id = %s AND labels_consumed_at IS NULL AND interval_end <= %s
                 AND quarantined_at IS NULL
               ORDER BY interval_start""",
            (model_version_id, until),
        )
        return list(cur.fetchall())


def load_detector(url: str, model_version_id: int) -> tuple[bytes | None, int]:
    with transaction(url) as cur:
        cur.execute("""SELECT state, elements_seen FROM detector_state
                       WHERE model_version_id = %s AND detector = 'adwin_error'""",
                    (model_version_id,))
        record = cur.fetchone()
    return (None, 0) if record is None else (bytes(record[0]), int(record[1]))


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftRows:
    """What one drift run writes; feature rows and change points are records keyed by column.

    ``features``: ``FeatureDrift.to_record()`` with the run's ``drift_rank`` beside it (and
    ``kind`` ``prediction`` for the model's score). ``change_points``:
    ``ChangePoint.to_record()`` with the ``event_time`` of the element (None when the live
    data has no event time). ``consumed``: (start, end, labelled rows fed) of each scored
    interval whose labels this run fed; the run's ``rows_labelled`` is stored as the sum over
    every interval it consumed, by this attempt or an earlier one. ``degraded_reason``: the partitions the run
    quarantined; set, the run's status is ``degraded`` (its verdict stays ``verdict``).
    """

    features: Sequence[Mapping[str, Any]]
    verdict: str
    n_breached: int
    change_points: Sequence[Mapping[str, Any]]
    consumed: Sequence[tuple[dt.datetime, dt.datetime, int]]
    detector_state: bytes | None
    detector_seen_before: int
    detector_seen_after: int
    degraded_reason: str | None = None
    evidence_reason: str | None = None  # why the verdict is insufficient_data


_FEATURE_INSERT = """
INSERT INTO feature_drift (drift_run_id, feature, kind, drift_rank, wasserstein, wasserstein_normalised,
    js_divergence_base2, statistic_name, statistic_value, baseline, threshold, verdict, n_reference,
    n_current, n_missing_current, unseen_categories)
VALUES (%(drift_run_id)s, %(feature)s, %(kind)s, %(drift_rank)s, %(wasserstein)s,
    %(wasserstein_normalised)s, %(js_divergence_base2)s, %(statistic_name)s, %(statistic_value)s,
    %(baseline)s, %(threshold)s, %(verdict)s, %(n_reference)s, %(n_current)s, %(n_missing_current)s,
    %(unseen_categories)s)"""

_CHANGE_INSERT = """
INSERT INTO concept_drift_change (model_version_id, stream_position, drift_run_id, event_time,
    error_rate_before, error_rate_after)
VALUES (%(model_version_id)s, %(stream_position)s, %(drift_run_id)s, %(event_time)s,
    %(error_rate_before)s, %(error_rate_after)s)
ON CONFLICT ON CONSTRAINT concept_drift_change_pkey DO NOTHING"""


def write_drift_results(url: str, run_id: int, model_version_id: int, rows: DriftRows, *,
                        report_key: str | None, report_uri: str | None,
                        multivariate: Any | None = None, attribution: Any | None = None,
                        estimates: Sequence[Mapping[str, Any]] = (),
                        quality: Sequence[Mapping[str, Any]] = (),
                        realised: Sequence[Any] = (),
                        scores: tuple[str, int] | None = None) -> None:
    """Everything a drift run produces, the detector state and the status, in one transaction.

    ``multivariate`` and ``attribution`` are the run's ``MultivariateDrift`` and
    ``AttributionDrift`` (None when the model version has no such reference). ``estimates``
    and ``quality`` are the run's estimate and quality rows, ``realised`` the realised metrics
    of the intervals whose labels it fed (:func:`modelgate.store.estimation.write_realised`).
    ``scores`` is the attempt's scored sample ``(object key, rows)`` (None without one): the
    interval's ``scored_interval`` row points at it when this attempt's verdict is current.

    The detector state is compare-and-swapped on ``elements_seen`` so two runs can never
    feed the same labels twice or lose each other's updates.

    An attempt whose verdict is ``no_data`` or ``insufficient_data`` while the run's current
    attempt has a verdict made on data is recorded beside it: the run row, its feature, joint
    and estimate rows, and the interval's ``scored_interval`` row, keep the earlier result
    (:func:`modelgate.store.drift_attempts.put_back`).
    """
    with transaction(url) as cur:
        kept = drift_attempts.data_verdict_kept(cur, run_id, rows.verdict)
        if kept is None:  # this attempt's result replaces the earlier one's
            if scores is not None:
                cur.execute("SELECT model_version_id, interval_start, interval_end FROM drift_run "
                            "WHERE drift_run_id = %s", (run_id,))
                _upsert_scored(cur, (*cur.fetchone(), *scores))
            cur.execute("DELETE FROM feature_drift WHERE drift_run_id = %s", (run_id,))
            if rows.features:
                cur.executemany(_FEATURE_INSERT, [{"drift_run_id": run_id, **f} for f in rows.features])
            drift_joint.write_run(cur, run_id, multivariate, attribution)
            estimation.write_run(cur, run_id, estimates, quality)
        estimation.write_realised(cur, run_id, model_version_id, realised)
        _swap_detector(cur, model_version_id, run_id, rows)
        for change in rows.change_points:
            cur.execute(_CHANGE_INSERT, {"model_version_id": model_version_id, "drift_run_id": run_id,
                                         **change})
        for start, end, labelled in rows.consumed:
            cur.execute(
                """UPDATE scored_interval SET labels_consumed_at = now(), consumed_by_run_id = %s,
                       rows_labelled = %s
                   WHERE model_version_id = %s AND interval_start = %s AND interval_end = %s""",
                (run_id, labelled, model_version_id, start, end),
            )
        # Every interval the run consumed, by any attempt: a re-run that finds them consumed
        # keeps the count the detector was fed instead of zeroing it.
        cur.execute(
            """UPDATE drift_run SET status = %s, verdict = %s, n_features_breached = %s,
                   rows_labelled = (SELECT COALESCE(sum(rows_labelled), 0) FROM scored_interval
                                    WHERE consumed_by_run_id = %s),
                   degraded_reason = %s, report_key = %s, report_uri = %s, failure_reason = NULL,
                   evidence_reason = %s, finished_at = now() WHERE drift_run_id = %s""",
            ("degraded" if rows.degraded_reason else rows.verdict, rows.verdict, rows.n_breached,
             run_id, rows.degraded_reason and rows.degraded_reason[:4000], report_key, report_uri,
             rows.evidence_reason, run_id),
        )
        if kept is not None:
            drift_attempts.put_back(cur, run_id, kept)
        if rows.verdict not in ("no_data", "insufficient_data"):  # nothing judged: the flag stays
            cur.execute("UPDATE model_version SET is_drifting = %s WHERE model_version_id = %s",
                        (rows.verdict == "drift", model_version_id))


def _swap_detector(cur: Any, model_version_id: int, run_id: int, rows: DriftRows) -> None:
    if rows.detector_state is None:
        return
    cur.execute(
        """INSERT INTO detector_state (model_version_id, detector, state, elements_seen,
                                       updated_by_run_id)
           VALUES (%s, 'adwin_error', %s, %s, %s)
           ON CONFLICT ON CONSTRAINT detector_state_pkey DO UPDATE SET
               state = EXCLUDED.state, elements_seen = EXCLUDED.elements_seen,
               updated_at = now(), updated_by_run_id = EXCLUDED.updated_by_run_id
           WHERE detector_state.elements_seen = %s
           RETURNING 1""",
        (model_version_id, rows.detector_state, rows.detector_seen_after, run_id,
         rows.detector_seen_before),
    )
    if cur.fetchone() is None and not _already_swapped(cur, model_version_id, run_id, rows):
        raise StaleDetectorState(
            f"the ADWIN state of model version id {model_version_id} moved on since this run read "
            f"it ({rows.detector_seen_before} elements); retry the run"
        )


def _already_swapped(cur: Any, model_version_id: int, run_id: int, rows: DriftRows) -> bool:
    """True when this run's own earlier try committed this very update (a retried ``store``
    task whose first try failed after its transaction): writing it again changes nothing."""
    cur.execute("""SELECT 1 FROM detector_state WHERE model_version_id = %s AND detector = 'adwin_error'
                   AND elements_seen = %s AND updated_by_run_id = %s""",
                (model_version_id, rows.detector_seen_after, run_id))
    return cur.fetchone() is not None


@dataclass(frozen=True, slots=True)
class FeatureBreach:
    feature: str
    statistic_name: str
    statistic_value: float
    threshold: float


def breaches_and_status(url: str, run_id: int) -> tuple[list[FeatureBreach], str]:
    """The run's breached features (by drift rank) and its status, read in one transaction."""
    with transaction(url) as cur:
        cur.execute("""SELECT feature, statistic_name, statistic_value, threshold FROM feature_drift
                       WHERE drift_run_id = %s AND verdict = 'drift' ORDER BY drift_rank""",
                    (run_id,))
        breaches = [FeatureBreach(*row) for row in cur.fetchall()]
        cur.execute("SELECT status FROM drift_run WHERE drift_run_id = %s", (run_id,))
        status = cur.fetchone()[0]
    return breaches, str(status)


def ended_intervals(url: str, *, ended_before: dt.timedelta) -> list[tuple[str, str, dt.datetime]]:
    """``(model name, version, interval start)`` of the drift intervals whose runs all ended
    (none ``running``) and whose last one ended more than ``ended_before`` ago, by the
    database's clock; interval starts in UTC."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT v.model_name, v.version, r.interval_start AT TIME ZONE 'UTC'
               FROM drift_run r JOIN model_version v USING (model_version_id)
               GROUP BY v.model_name, v.version, r.interval_start
               HAVING bool_and(r.status <> 'running')
                  AND max(COALESCE(r.finished_at, r.heartbeat_at, r.started_at)) < now() - %s
               ORDER BY 1, 2, 3""", (ended_before,))
        return [(str(name), str(version), start.replace(tzinfo=dt.UTC))
                for name, version, start in cur.fetchall()]

