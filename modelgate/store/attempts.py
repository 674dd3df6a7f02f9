"""Attempts of evaluation runs and failures after their decisions (migration 0029).

Every start of an evaluation run is an attempt with a row of its own in
``evaluation_attempt``; a trigger keeps the current attempt's row in step with the run row,
and once an attempt has ended its row, gate decision and gate checks never change. Steps
that fail after a decision was stored (the index page, the StatsD gauge, a refused
promotion) are recorded in ``evaluation_step_failure`` beside it; the decision stands.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from modelgate.store.db import transaction

#: Steps after a decision whose failure is recorded beside it; the first two are retried.
Step = Literal["index_page", "statsd_gauge", "after_decision"]
RETRIED_STEPS: tuple[Step, ...] = ("index_page", "statsd_gauge")


@dataclass(frozen=True, slots=True)
class PreviousPolicy:
    """The policy of a version's previous decided attempt, the reference a new attempt's
    policy is compared with."""

    evaluation_run_id: int
    attempt: int
    text: str


def previous_policy(url: str, model_version_id: int, *, run_id: int) -> PreviousPolicy | None:
    """The policy of the version's latest decided attempt (``passed`` or ``blocked``, any run
    but ``run_id``'s current attempt) that was judged by neither a policy looser than the
    model's own nor one looser than its own previous attempt's: a looser policy, even one
    allowed, never becomes the reference that later attempts are compared with.
    """
    with transaction(url) as cur:
        cur.execute(
            """SELECT a.evaluation_run_id, a.attempt, a.policy_text
               FROM evaluation_attempt a JOIN evaluation_run r USING (evaluation_run_id)
               WHERE r.model_version_id = %s AND a.status IN ('passed', 'blocked')
                 AND a.policy_text IS NOT NULL AND a.policy_looser_than_model IS NOT TRUE
                 AND a.policy_looser_than_previous IS NOT TRUE
                 AND NOT (a.evaluation_run_id = %s AND a.attempt = r.attempt)
               ORDER BY a.finished_at DESC NULLS LAST, a.evaluation_run_id DESC, a.attempt DESC
               LIMIT 1""",
            (model_version_id, run_id))
        record = cur.fetchone()
    return None if record is None else PreviousPolicy(int(record[0]), int(record[1]), str(record[2]))


def current_attempt(url: str, run_id: int) -> int:
    """The run's current attempt (``evaluation_run.attempt``)."""
    with transaction(url) as cur:
        cur.execute("SELECT attempt FROM evaluation_run WHERE evaluation_run_id = %s", (run_id,))
        record = cur.fetchone()
    if record is None:
        raise LookupError(f"evaluation run {run_id} does not exist")
    return int(record[0])


def record_step_failure(url: str, run_id: int, attempt: int, step: Step, reason: str) -> int:
    """Record that ``step`` failed after attempt ``attempt`` of ``run_id`` stored its decision."""
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO evaluation_step_failure (evaluation_run_id, attempt, step, reason)
               VALUES (%s, %s, %s, %s) RETURNING evaluation_step_failure_id""",
            (run_id, attempt, step, reason[:4000]))
        return int(cur.fetchone()[0])


@dataclass(frozen=True, slots=True)
class PendingFailure:
    """A retryable step failure not retried yet, with what a retry needs."""

    failure_id: int
    evaluation_run_id: int
    attempt: int
    step: Step
    model_name: str
    version: str
    passed: bool
    checks_breached: int


def pending_failures(url: str, model_name: str | None = None) -> list[PendingFailure]:
    """Index page and StatsD failures not retried yet (of one model, or of all), oldest first."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT f.evaluation_step_failure_id, f.evaluation_run_id, f.attempt, f.step,
                      mv.model_name, mv.version, g.passed,
                      (SELECT count(*) FROM gate_check c WHERE c.evaluation_run_id = f.evaluation_run_id
                         AND c.attempt = f.attempt AND c.effect <> 'none')
               FROM evaluation_step_failure f
               JOIN evaluation_run r ON r.evaluation_run_id = f.evaluation_run_id
               JOIN model_version mv ON mv.model_version_id = r.model_version_id
               JOIN gate_decision g ON g.evaluation_run_id = f.evaluation_run_id
                                   AND g.attempt = f.attempt
               WHERE f.retried_at IS NULL AND f.step = ANY(%s)
                 AND (%s::text IS NULL OR mv.model_name = %s)
               ORDER BY f.evaluation_step_failure_id""",
            (list(RETRIED_STEPS), model_name, model_name))
        return [PendingFailure(int(i), int(r), int(a), s, n, v, bool(p), int(c))
                for i, r, a, s, n, v, p, c in cur.fetchall()]


def mark_retried(url: str, failure_ids: Iterable[int], *, by: str) -> None:
    """Record that the failures were retried successfully, by whom (``gc``, ``evaluation run N``)."""
    ids = sorted(set(failure_ids))
    if not ids:
        return
    with transaction(url) as cur:
        cur.execute("""UPDATE evaluation_step_failure SET retried_at = now(), retried_by = %s
                       WHERE evaluation_step_failure_id = ANY(%s) AND retried_at IS NULL""",
                    (by[:200], ids))


@dataclass(frozen=True, slots=True)
class AttemptLine:
    """One attempt of an evaluation run, for ``modelgate model show``."""

    evaluation_run_id: int
    attempt: int
    status: str
    started_at: dt.datetime
    summary: str | None  # the first line of the gate's summary, or the failure reason
    policy_source: str | None
    policy_source_path: str | None
    policy_sha256: str | None
    looser: bool  # looser than the model's own policy or than the previous attempt's
    looser_allowed: bool
    report_key: str | None
    step_failures: list[str]  # "<step>: <reason>" of each failure after the decision


def attempts_of(url: str, run_ids: Sequence[int]) -> dict[int, list[AttemptLine]]:
    """Every attempt of each run in ``run_ids``, oldest first, by run id."""
    found: dict[int, list[AttemptLine]] = {}
    with transaction(url) as cur:
        cur.execute(
            """SELECT a.evaluation_run_id, a.attempt, a.status, a.started_at,
                      coalesce(a.failure_reason, split_part(g.summary, E'\\n', 1)),
                      a.policy_source, a.policy_source_path, a.policy_sha256,
                      coalesce(a.policy_looser_than_model OR a.policy_looser_than_previous, false),
                      coalesce(a.looser_policy_allowed, false),
                      CASE WHEN a.status IN ('passed', 'blocked') THEN a.report_key END,
                      ARRAY(SELECT f.step || ': ' || f.reason
                                   || CASE WHEN f.retried_at IS NULL THEN '' ELSE ' (retried)' END
                            FROM evaluation_step_failure f
                            WHERE f.evaluation_run_id = a.evaluation_run_id AND f.attempt = a.attempt
                            ORDER BY f.evaluation_step_failure_id)
               FROM evaluation_attempt a
               LEFT JOIN gate_decision g ON g.evaluation_run_id = a.evaluation_run_id
                                        AND g.attempt = a.attempt
               WHERE a.evaluation_run_id = ANY(%s)
               ORDER BY a.evaluation_run_id, a.attempt""",
            (list(run_ids),))
        for record in cur.fetchall():
            line = AttemptLine(*record)
            found.setdefault(line.evaluation_run_id, []).append(line)
    return found
