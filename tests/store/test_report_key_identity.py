"""Report keys are short and never shared by two runs or two attempts (#23), on the real
PostgreSQL: the run ids and attempts come from ``start_evaluation_run`` / ``start_drift_run``
and the expected keys are written out by hand."""

from __future__ import annotations

import datetime as dt

from support.tiny_graphs import manifest_of

from modelgate.pipelines.report_keys import drift_report_key, evaluation_report_key
from modelgate.store import drift_runs, models, runs
from modelgate.store.db import transaction

UTC = dt.UTC
SAME_SECOND = dt.datetime(2026, 11, 29, 22, 26, 9, tzinfo=UTC)


def _register(url: str, version: str) -> models.ModelVersionRow:
    sha = version * 64
    row, _ = models.register(url, model_name="churn", version=version, sha256=sha, archive_sha256=sha,
                             archive_key=f"models/churn/{version}.tar.gz",
                             archive_uri=f"s3://b/models/churn/{version}.tar.gz", manifest=manifest_of())
    return row


def _evaluation_key(url: str, run_id: int) -> str:
    run = runs.get_evaluation_run(url, run_id)
    return evaluation_report_key("churn", "2", run_id=run.evaluation_run_id, attempt=run.attempt,
                                 started_at=run.started_at)


def test_evaluation_runs_in_the_same_second_a_champion_run_and_a_rerun_get_keys_of_their_own(
    clean_db: str,
) -> None:
    url = clean_db
    v1, v2 = _register(url, "1"), _register(url, "2")

    def start(run_key: str, champion: int | None) -> int:
        return runs.start_evaluation_run(url, run_key=run_key, model_version_id=v2.model_version_id,
                                         champion_version_id=champion, dataset_uri="d.parquet",
                                         archive_sha256=v2.archive_sha256)

    first = start("cli__data__policy__churn__v2__vs-none", None)
    retry_dag = start("model_evaluation__manual__2026-11-29T22:26:09__churn__v2__vs-none", None)
    versus_champion = start("cli__data__policy__churn__v2__vs-v1", v1.model_version_id)
    with transaction(url) as cur:  # all three started in the same second
        cur.execute("UPDATE evaluation_run SET started_at = %s", (SAME_SECOND,))
    keys = {run_id: _evaluation_key(url, run_id) for run_id in (first, retry_dag, versus_champion)}
    assert keys == {run_id: f"reports/churn/2/evaluation-2026-11-29-run{run_id}.html"
                    for run_id in (first, retry_dag, versus_champion)}
    assert len(set(keys.values())) == 3

    # the same run key again (the same data and policy from the CLI): the row is reset and
    # counts a second attempt, whose report does not overwrite the first's
    assert start("cli__data__policy__churn__v2__vs-none", None) == first
    with transaction(url) as cur:
        cur.execute("UPDATE evaluation_run SET started_at = %s WHERE evaluation_run_id = %s",
                    (SAME_SECOND, first))
    assert _evaluation_key(url, first) == f"reports/churn/2/evaluation-2026-11-29-run{first}-attempt2.html"
    assert _evaluation_key(url, first) not in keys.values()


def test_drift_runs_of_hourly_and_daily_intervals_and_a_rerun_get_keys_of_their_own(clean_db: str) -> None:
    url = clean_db
    v1 = _register(url, "1")
    day = dt.datetime(2026, 11, 29, tzinfo=UTC)
    hour = dt.timedelta(hours=1)
    intervals = [(day, day + hour), (day + hour, day + 2 * hour),  # an hourly schedule
                 (day, day + 24 * hour)]  # a daily one: the same start as the first hour

    def start(begin: dt.datetime, end: dt.datetime) -> int:
        return drift_runs.start_drift_run(url, model_version_id=v1.model_version_id, interval_start=begin,
                                          interval_end=end)

    def key(run_id: int) -> str:
        run = drift_runs.get_drift_run(url, run_id)
        return drift_report_key("churn", "1", run_id=run.drift_run_id, attempt=run.attempt,
                                interval_start=run.interval_start)

    first_hour, second_hour, whole_day = (start(*i) for i in intervals)
    assert [key(r) for r in (first_hour, second_hour, whole_day)] == [
        f"reports/churn/1/drift-2026-11-29-run{first_hour}.html",
        f"reports/churn/1/drift-2026-11-29T01-00-run{second_hour}.html",
        f"reports/churn/1/drift-2026-11-29-run{whole_day}.html"]
    before = {key(r) for r in (first_hour, second_hour, whole_day)}
    assert len(before) == 3

    assert start(*intervals[0]) == first_hour  # a re-run of the interval: its second attempt
    assert key(first_hour) == f"reports/churn/1/drift-2026-11-29-run{first_hour}-attempt2.html"
    assert key(first_hour) not in before
