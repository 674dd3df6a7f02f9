"""The runs a model's index page lists (``summaries.listed_runs``), against the real PostgreSQL:
failed and abandoned runs are listed with their reason and no report, running ones are not, and
every run carries its version's stage now."""

from __future__ import annotations

import datetime as dt

from support.tiny_graphs import manifest_of

from modelgate.store import drift_runs, models, runs
from modelgate.store.summaries import listed_runs

UTC = dt.UTC


def _register(url: str, version: str) -> int:
    sha = version * 64
    row, _ = models.register(url, model_name="churn", version=version, sha256=sha, archive_sha256=sha,
                             archive_key=f"models/churn/{version}.tar.gz",
                             archive_uri=f"s3://b/models/churn/{version}.tar.gz", manifest=manifest_of())
    return row.model_version_id


def _evaluation(url: str, key: str, version_id: int, sha: str) -> int:
    return runs.start_evaluation_run(url, run_key=key, model_version_id=version_id,
                                     champion_version_id=None, dataset_uri="d.parquet",
                                     archive_sha256=sha)


def test_failed_blocked_and_abandoned_runs_are_listed_with_stage(clean_db: str) -> None:
    url = clean_db
    v1, v2 = _register(url, "1"), _register(url, "2")
    models.promote(url, v1, expected_champion_id=None)
    passed = _evaluation(url, "k-pass", v1, "1" * 64)
    runs.write_evaluation_results(url, passed, runs.EvaluationRows(gate={
        "passed": True, "summary": "PASSED: 3 checks", "policy_sha256": "p", "had_champion": False}),
        status="passed", report_key="reports/churn/1/evaluation-k-pass.html", report_uri="u")
    blocked = _evaluation(url, "k-block", v2, "2" * 64)
    runs.write_evaluation_results(url, blocked, runs.EvaluationRows(gate={
        "passed": False, "summary": "BLOCKED by 1 check\nroc_auc low", "policy_sha256": "p",
        "had_champion": True}), status="blocked", report_key="reports/churn/2/evaluation-k-block.html",
        report_uri="u")
    failed = _evaluation(url, "k-fail", v2, "2" * 64)
    runs.fail_evaluation_run(url, failed, "ScoringError: 3 rows with NaN in 'age'")
    _evaluation(url, "k-running", v2, "2" * 64)  # still running: not listed
    start = dt.datetime(2026, 1, 1, tzinfo=UTC)
    drift = drift_runs.start_drift_run(url, model_version_id=v1, interval_start=start,
                                       interval_end=start + dt.timedelta(days=1))
    drift_runs.fail_drift_run(url, drift, "BadLabelPartition: 2 duplicated ids")

    listed = {(r.kind, r.run_id): r for r in listed_runs(url, "churn")}
    assert set(listed) == {("evaluation", passed), ("evaluation", blocked), ("evaluation", failed),
                           ("drift", drift)}
    summary = {k: (r.status, r.stage, r.report_key, r.note) for k, r in listed.items()}
    assert summary == {
        ("evaluation", passed): ("passed", "production", "reports/churn/1/evaluation-k-pass.html",
                                 "PASSED: 3 checks"),
        ("evaluation", blocked): ("blocked", "candidate", "reports/churn/2/evaluation-k-block.html",
                                  "BLOCKED by 1 check\nroc_auc low"),
        ("evaluation", failed): ("failed", "candidate", None, "ScoringError: 3 rows with NaN in 'age'"),
        ("drift", drift): ("failed", "production", None, "BadLabelPartition: 2 duplicated ids"),
    }
