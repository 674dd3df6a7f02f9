"""A drift result is never replaced by less evidence (issue #39 point 1), on the real PostgreSQL.

Each re-run of an interval is an attempt recorded beside the earlier ones in ``drift_attempt``;
an attempt that finds no data (or too few values) leaves the verdict made on data current.
The attempts are driven through the store calls a drift run makes (``start_drift_run``,
``record_sample``, ``write_drift_results``); the expected rows are written out by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg2.errors
import pytest
from support.tiny_graphs import manifest_of

from modelgate.cli.monitor import _print_verdict
from modelgate.config import Settings
from modelgate.pipelines.context import Context
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.attempts import unjudged_status
from modelgate.pipelines.tasks import refusals_are_final
from modelgate.store import drift_attempts, drift_runs, models
from modelgate.store.db import fetch_all, transaction

UTC = dt.UTC
START, END = dt.datetime(2026, 11, 28, tzinfo=UTC), dt.datetime(2026, 11, 29, tzinfo=UTC)
ATTEMPT_COLUMNS = ("attempt, is_current, status, verdict, failure_reason, evidence_reason, rows_available, "
                   "rows_sampled, rows_labelled, n_features_breached, report_uri")


def _feature(verdict: str, n_current: int) -> dict[str, Any]:
    judged = verdict in ("ok", "drift")
    return {"feature": "age", "kind": "numeric", "drift_rank": 1, "wasserstein": 4.0 if judged else None,
            "wasserstein_normalised": 0.4 if judged else None, "js_divergence_base2": None,
            "statistic_name": "wasserstein", "statistic_value": 0.4 if judged else None,
            "baseline": 0.1 if judged else None, "threshold": 0.2 if judged else None,
            "verdict": verdict, "n_reference": 500, "n_current": n_current, "n_missing_current": 0,
            "unseen_categories": []}


def _attempt(url: str, version_id: int, *, verdict: str, rows: int, ctx: Context | None = None) -> int:
    """One attempt of the interval as a drift run stores it: ``rows`` sampled, ``verdict``;
    with ``ctx``, its scored sample written to the object store under the attempt's key."""
    run_id = drift_runs.start_drift_run(url, model_version_id=version_id, interval_start=START,
                                        interval_end=END)
    attempt = drift_runs.get_drift_run(url, run_id).attempt
    drift_runs.record_sample(url, run_id, provider="CPUExecutionProvider" if rows else None,
                             rows_available=rows, rows_sampled=rows, scores_uri=_sample_uri(attempt, rows),
                             provider_reason=f"attempt {attempt}" if rows else None,
                             set_aside_reason=f"x: {attempt} missing" if rows else None)
    scores = None
    if ctx is not None and rows:
        key = feature_steps.DriftRef(run_id, version_id, "m", "1", START.isoformat(),
                             END.isoformat()).scored_sample_key(attempt)
        ctx.store.put_bytes(key, f"attempt {attempt}: {rows} rows".encode(), content_type="text/plain")
        drift_runs.upsert_scored_interval(url, model_version_id=version_id, interval_start=START,
                                          interval_end=END, scores_key=key, rows=rows, run_id=run_id)
        scores = (key, rows)
    evidence = "3 sampled row(s): too few" if verdict == "insufficient_data" else None
    drift_runs.write_drift_results(
        url, run_id, version_id,
        drift_runs.DriftRows(features=[_feature(verdict, rows)] if rows else [], verdict=verdict,
                             n_breached=int(verdict == "drift"), change_points=[], consumed=[],
                             detector_state=None, detector_seen_before=0, detector_seen_after=0,
                             evidence_reason=evidence),
        report_key=f"reports/m/1/drift-attempt{attempt}.html",
        report_uri=f"s3://b/reports/m/1/drift-attempt{attempt}.html", scores=scores)
    return run_id


def _sample_uri(attempt: int, rows: int) -> str | None:
    return f"s3://b/drift/m/1/attempt{attempt}/scored-sample.parquet" if rows else None


def _sample_of_row(url: str) -> tuple[Any, ...]:
    """The scored sample the run row names, and how it was scored."""
    (row,) = fetch_all(url, "SELECT scores_uri, provider_reason, set_aside_reason FROM drift_run")
    return row


ATTEMPT_1_SAMPLE = (_sample_uri(1, 1), "attempt 1", "x: 1 missing")


def _version(url: str) -> int:
    row, _ = models.register(url, model_name="m", version="1", sha256="a" * 64, archive_sha256="a" * 64,
                             archive_key="models/m/1.tar.gz", archive_uri="s3://b/models/m/1.tar.gz",
                             manifest=manifest_of())
    return row.model_version_id


def _attempts(url: str) -> list[tuple[Any, ...]]:
    return fetch_all(url, f"SELECT {ATTEMPT_COLUMNS} FROM analytics.drift_attempts ORDER BY attempt")


def _current(url: str) -> tuple[Any, ...]:
    (row,) = fetch_all(url, """SELECT r.status, r.verdict, r.rows_sampled, r.n_features_breached,
                                      r.attempt, r.current_attempt, v.is_drifting,
                                      (SELECT array_agg(verdict) FROM feature_drift f
                                       WHERE f.drift_run_id = r.drift_run_id)
                               FROM analytics.drift_runs r
                               JOIN model_version v ON v.model_name = r.model_name
                                                   AND v.version = r.version""")
    return row


DRIFT_ON_DATA = (1, True, "drift", "drift", None, None, 3907, 3907, 0, 1,
                 "s3://b/reports/m/1/drift-attempt1.html")


@pytest.mark.parametrize(("verdict", "rows", "reason"),
                         [("no_data", 0, None), ("insufficient_data", 3, "3 sampled row(s): too few")],
                         ids=["no-data", "insufficient-data"])
def test_a_rerun_with_less_evidence_is_kept_beside_the_verdict_made_on_data(
        clean_db: str, verdict: str, rows: int, reason: str | None) -> None:
    url, version_id = clean_db, _version(clean_db)
    run_id = _attempt(url, version_id, verdict="drift", rows=3907)
    assert _attempts(url) == [DRIFT_ON_DATA]
    assert _current(url) == ("drift", "drift", 3907, 1, 1, 1, True, ["drift"])

    assert _sample_of_row(url) == ATTEMPT_1_SAMPLE
    assert _attempt(url, version_id, verdict=verdict, rows=rows) == run_id
    second = (2, False, verdict, verdict, None, reason, rows, rows, 0, 0,
              "s3://b/reports/m/1/drift-attempt2.html")
    # the thin attempt's own sample (none, or its 3 rows) is on its record; the row names attempt 1's
    assert fetch_all(url, "SELECT attempt, scores_uri FROM drift_attempt ORDER BY attempt") == [
        (1, ATTEMPT_1_SAMPLE[0]), (2, _sample_uri(2, rows))]
    assert _sample_of_row(url) == ATTEMPT_1_SAMPLE
    assert _attempts(url) == [DRIFT_ON_DATA, second]  # the first attempt exactly as it was
    # the interval's current verdict is still the first attempt's, with its feature rows
    assert _current(url) == ("drift", "drift", 3907, 1, 2, 1, True, ["drift"])
    assert drift_attempts.kept_beside(url, run_id) == (2, verdict, 1)
    assert [a.status for a in drift_attempts.attempts_of(url, run_id)] == ["drift", verdict]
    # a step failing after that attempt ended (the index page) changes neither
    drift_runs.fail_drift_run(url, run_id, "OSError: index page not written")
    assert _attempts(url) == [DRIFT_ON_DATA, second]
    assert _current(url) == ("drift", "drift", 3907, 1, 2, 1, True, ["drift"])
    # what `monitor retry` / `monitor run` print after such an attempt
    models.promote(url, version_id, expected_champion_id=None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _print_verdict(SimpleNamespace(db_url=url), argparse.Namespace(name="m", interval=START), verdict)
    assert out.getvalue() == (f"m over the interval starting 2026-11-28T00:00:00+00:00: {verdict}\n"
                              f"  attempt 2 ended {verdict}: the interval keeps attempt 1's verdict drift, "
                              "made on data (analytics.drift_attempts lists every attempt)\n")


def test_a_rerun_with_data_replaces_the_current_verdict_and_keeps_the_earlier_attempt(
        clean_db: str) -> None:
    url, version_id = clean_db, _version(clean_db)
    run_id = _attempt(url, version_id, verdict="drift", rows=3907)
    _attempt(url, version_id, verdict="no_data", rows=0)
    _attempt(url, version_id, verdict="ok", rows=4000)
    assert [a[:4] for a in _attempts(url)] == [(1, False, "drift", "drift"), (2, False, "no_data", "no_data"),
                                               (3, True, "ok", "ok")]
    assert _attempts(url)[0] == (1, False, *DRIFT_ON_DATA[2:])
    assert _current(url) == ("ok", "ok", 4000, 0, 3, 3, False, ["ok"])
    assert _sample_of_row(url) == (_sample_uri(3, 1), "attempt 3", "x: 3 missing")  # its own
    assert drift_attempts.kept_beside(url, run_id) is None

    # no data after that keeps the ok verdict, and leaves is_drifting as the ok attempt set it
    _attempt(url, version_id, verdict="no_data", rows=0)
    assert _current(url) == ("ok", "ok", 4000, 0, 4, 3, False, ["ok"])


def test_no_data_without_an_earlier_verdict_on_data_is_the_current_result(clean_db: str) -> None:
    url, version_id = clean_db, _version(clean_db)
    _attempt(url, version_id, verdict="no_data", rows=0)
    _attempt(url, version_id, verdict="insufficient_data", rows=3)
    assert _current(url) == ("insufficient_data", "insufficient_data", 3, 0, 2, 2, False,
                             ["insufficient_data"])


def test_a_failed_rerun_is_the_current_result_and_the_verdict_stays_on_record(clean_db: str) -> None:
    url, version_id = clean_db, _version(clean_db)
    run_id = _attempt(url, version_id, verdict="drift", rows=3907)
    drift_runs.start_drift_run(url, model_version_id=version_id, interval_start=START, interval_end=END)
    drift_runs.fail_drift_run(url, run_id, "OSError: disk full")
    assert _attempts(url)[0] == DRIFT_ON_DATA[:1] + (False,) + DRIFT_ON_DATA[2:]
    assert _attempts(url)[1][:5] == (2, True, "failed", None, "OSError: disk full")
    # the row says failed, is_drifting is left, and attempt 1's feature rows stay (its evidence)
    assert _current(url)[:2] == ("failed", None) and _current(url)[5:] == (2, True, ["drift"])


@pytest.mark.parametrize("verdict", ["no_data", "insufficient_data"])
def test_less_evidence_after_a_failed_rerun_puts_the_verdict_on_data_back(
        settings_env: Settings, verdict: str) -> None:
    """drift (on data), then a failure, then a re-run with less evidence: the interval shows
    attempt 1's drift again, with its feature rows and its scored sample."""
    ctx = Context.open(settings_env)
    url, version_id = ctx.db_url, _version(ctx.db_url)
    run_id = _attempt(url, version_id, verdict="drift", rows=3907, ctx=ctx)
    drift_runs.start_drift_run(url, model_version_id=version_id, interval_start=START, interval_end=END)
    drift_runs.fail_drift_run(url, run_id, "OSError: disk full")
    _attempt(url, version_id, verdict=verdict, rows=3 if verdict == "insufficient_data" else 0, ctx=ctx)
    assert [a[:4] for a in _attempts(url)] == [(1, True, "drift", "drift"), (2, False, "failed", None),
                                               (3, False, verdict, verdict)]
    assert _current(url) == ("drift", "drift", 3907, 1, 3, 1, True, ["drift"])
    assert drift_attempts.kept_beside(url, run_id) == (3, verdict, 1)
    assert _scored_interval(url) == (f"{SAMPLES}/scored-sample.parquet", 3907)
    assert _sample_of_row(url) == ATTEMPT_1_SAMPLE


def test_a_failed_first_attempt_clears_its_partial_rows(clean_db: str) -> None:
    url, version_id = clean_db, _version(clean_db)
    run_id = drift_runs.start_drift_run(url, model_version_id=version_id, interval_start=START,
                                        interval_end=END)
    with transaction(url) as cur:  # a row left by a step before the failure
        cur.execute(drift_runs._FEATURE_INSERT, {"drift_run_id": run_id, **_feature("ok", 10)})
    drift_runs.fail_drift_run(url, run_id, "OSError: disk full")
    assert _current(url)[:2] == ("failed", None) and _current(url)[7] is None


def test_an_attempt_left_running_by_a_rerun_is_recorded_abandoned(clean_db: str) -> None:
    url, version_id = clean_db, _version(clean_db)
    run_id = drift_runs.start_drift_run(url, model_version_id=version_id, interval_start=START,
                                        interval_end=END)
    _attempt(url, version_id, verdict="ok", rows=10)
    assert [a[:5] for a in _attempts(url)] == [
        (1, False, "abandoned", None, "abandoned: attempt 2 started before it ended"),
        (2, True, "ok", "ok", None)]
    assert drift_runs.get_drift_run(url, run_id).attempt == 2


def test_the_database_refuses_to_change_or_delete_an_ended_attempt(clean_db: str) -> None:
    url, version_id = clean_db, _version(clean_db)
    run_id = _attempt(url, version_id, verdict="drift", rows=3907)
    for sql in ("UPDATE drift_attempt SET verdict = 'no_data', status = 'no_data'",
                "DELETE FROM drift_attempt"):
        with pytest.raises(psycopg2.errors.IntegrityConstraintViolation,
                           match=f"attempt 1 of drift run {run_id} ended \\(drift\\): its record is "
                                 "never changed or deleted"), transaction(url) as cur:
            cur.execute(sql)
    assert _attempts(url) == [DRIFT_ON_DATA]
    with transaction(url) as cur:  # deleting the run takes its attempts with it
        cur.execute("DELETE FROM feature_drift")
        cur.execute("DELETE FROM drift_run")
    assert _attempts(url) == []


class _TaskInstance:
    try_number, max_tries = 1, 1  # the first of two tries: a plain failure would be retried


@pytest.fixture
def in_airflow_task() -> Iterator[None]:
    from airflow.sdk.execution_time.context import set_current_context

    with set_current_context({"ti": _TaskInstance()}):  # type: ignore[typeddict-item]
        yield


def test_a_trigger_whose_live_override_names_nothing_leaves_the_stored_verdict(
        settings_env: Settings, in_airflow_task: None, tmp_path: Path) -> None:
    """The reported case: a manual trigger of an interval judged ``drift`` with a ``live``
    param naming nothing is refused by ``plan`` (not retried) before any run row is touched."""
    from airflow.sdk.exceptions import AirflowFailException

    ctx = Context.open(settings_env)
    url = ctx.db_url
    _attempt(url, _version(url), verdict="drift", rows=3907)
    params = {"model_name": "m", "live": str(tmp_path / "nowhere"), "labels": ""}
    with pytest.raises(AirflowFailException, match="drift_monitoring param 'live' .* does not exist"), \
            refusals_are_final():
        feature_steps.monitor_specs(ctx, params)
    assert _attempts(url) == [DRIFT_ON_DATA]
    assert _current(url) == ("drift", "drift", 3907, 1, 1, 1, True, ["drift"])


def test_decide_returns_the_kept_attempts_own_status(settings_env: Settings) -> None:
    ctx = Context.open(settings_env)
    version_id = _version(ctx.db_url)
    run_id = _attempt(ctx.db_url, version_id, verdict="drift", rows=3907)
    assert unjudged_status(ctx, run_id) is None  # the current attempt: decide judges it
    _attempt(ctx.db_url, version_id, verdict="no_data", rows=0)
    assert unjudged_status(ctx, run_id) == "no_data"  # no drift alarm from an attempt without data


SAMPLES = "runs/drift/m/1/2026-11-28T00-00-00-00-00~006a59baabaff7fd"  # DriftRef.prefix()


def _scored_interval(url: str) -> tuple[Any, ...]:
    (row,) = fetch_all(url, "SELECT scores_key, rows_scored FROM scored_interval")
    return row


def test_a_thin_rerun_leaves_the_scored_sample_of_the_verdict_on_data(settings_env: Settings) -> None:
    """Each attempt's scored sample has its own key, and the interval's scored_interval row
    (what late labels are joined to) follows the current verdict: a thin re-run kept beside
    the verdict on data neither overwrites its sample nor takes the row; a re-run on data does."""
    ctx = Context.open(settings_env)
    url, version_id = ctx.db_url, _version(ctx.db_url)
    _attempt(url, version_id, verdict="drift", rows=3907, ctx=ctx)
    first = f"{SAMPLES}/scored-sample.parquet"
    assert _scored_interval(url) == (first, 3907)

    _attempt(url, version_id, verdict="insufficient_data", rows=3, ctx=ctx)
    assert ctx.store.get_bytes(first) == b"attempt 1: 3907 rows"  # not overwritten
    assert ctx.store.get_bytes(f"{SAMPLES}/scored-sample-attempt2.parquet") == b"attempt 2: 3 rows"
    assert _scored_interval(url) == (first, 3907)  # still the kept verdict's sample
    assert _current(url)[:3] == ("drift", "drift", 3907)

    _attempt(url, version_id, verdict="ok", rows=4000, ctx=ctx)
    assert _scored_interval(url) == (f"{SAMPLES}/scored-sample-attempt3.parquet", 4000)
    assert ctx.store.get_bytes(first) == b"attempt 1: 3907 rows"
