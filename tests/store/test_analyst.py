"""Analyst views and least privilege (migration 0004) against the real PostgreSQL server.

Rows go in through plain SQL as the superuser; every example query of sql/README.md then runs
as a LOGIN member of ``modelgate_analyst``, and the analyst's and writer's privileges are probed.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg2
import psycopg2.errors
import pytest
from conftest import _truncate_all

from modelgate.store import db

README = Path(__file__).resolve().parents[2] / "sql" / "README.md"
_QUERY = re.compile(r"<!-- query: ([a-z0-9_]+) -->\s*```sql\n(.*?)```", re.DOTALL)
QUERIES = _QUERY.findall(README.read_text())

VIEWS = (
    "model_versions", "evaluation_runs", "metric_history", "gate_checks", "latest_gate_decision",
    "fairness_by_group", "fairness_gaps", "feature_importance", "drift_runs",
    "feature_drift_by_interval", "concept_drift_changes", "report_links", "evaluation_refusals",
    "quarantined_partitions",
    "multivariate_drift_by_interval", "attribution_drift_by_interval",  # 0008
    "quality_by_interval", "performance_estimates",  # 0021
    "model_rollbacks",  # 0025
    "evaluation_attempts", "evaluation_step_failures",  # 0029
    "estimation_references",  # 0034
    "drift_attempts",  # 0038
    "segment_metrics", "segment_gate_checks",  # 0039
    "segment_drift",  # 0041
    "segment_estimates",  # 0042
)
SHA_1, SHA_2 = "1" * 64, "2" * 64

_SEED_SQL = """
INSERT INTO model_version (model_name, version, sha256, archive_sha256, archive_key, archive_uri,
                           manifest, stage, registered_at, stage_changed_at)
VALUES ('credit_default', '1.0.0', %(sha1)s, %(sha1)s, 'models/credit_default/1.0.0.tar.gz',
        's3://modelgate/models/credit_default/1.0.0.tar.gz', '{}', 'production',
        '2026-10-01T09:00Z', '2026-10-02T09:00Z'),
       ('credit_default', '1.1.0', %(sha2)s, %(sha2)s, 'models/credit_default/1.1.0.tar.gz',
        's3://modelgate/models/credit_default/1.1.0.tar.gz', '{}', 'candidate',
        '2026-11-01T09:00Z', '2026-11-01T09:00Z');

INSERT INTO evaluation_run (run_key, model_version_id, champion_version_id, dataset_uri, status,
                            failure_reason, provider, rows_scored, scoring_seconds,
                            scoring_rows_per_s, report_key, report_uri, started_at, finished_at)
VALUES ('eval-credit_default-1.0.0-a1', 1, NULL, 's3://modelgate/data/eval-2026-10.parquet',
        'passed', NULL, 'CPUExecutionProvider', 20000, 0.8, 25000,
        'reports/eval/1.html', 's3://modelgate/reports/eval/1.html',
        '2026-10-01T10:00Z', '2026-10-01T10:02Z'),
       ('eval-credit_default-1.1.0-b2', 2, 1, 's3://modelgate/data/eval-2026-11.parquet',
        'blocked', NULL, 'CPUExecutionProvider', 20000, 1.0, 20000,
        'reports/eval/2.html', 's3://modelgate/reports/eval/2.html',
        '2026-11-01T10:00Z', '2026-11-01T10:03Z'),
       ('eval-credit_default-1.1.0-c3', 2, 1, 's3://modelgate/data/eval-2026-11b.parquet',
        'failed', 'dataset is missing column ''income''', NULL, NULL, NULL, NULL, NULL, NULL,
        '2026-11-02T10:00Z', '2026-11-02T10:00:05Z');

INSERT INTO evaluation_metric VALUES
    (1, 'candidate', 'roc_auc', 0.81, 0.80, 0.82, 20000, NULL),
    (2, 'candidate', 'roc_auc', 0.79, 0.78, 0.80, 20000, NULL),
    (2, 'champion', 'roc_auc', 0.81, 0.80, 0.82, 20000, NULL),
    (2, 'delta', 'roc_auc', -0.02, -0.03, -0.01, 20000, NULL);

INSERT INTO fairness_group VALUES
    (1, 'gender', 'female', 9800, 0.21, 0.19, 0.70, 0.08, 0.66, 0.30, false),
    (1, 'gender', 'male', 10150, 0.23, 0.22, 0.72, 0.09, 0.67, 0.28, false),
    (1, 'gender', 'unknown', 50, 0.20, 0.18, 0.60, 0.10, 0.55, 0.40, true),
    (2, 'gender', 'female', 9800, 0.21, 0.15, 0.62, 0.06, 0.68, 0.38, false),
    (2, 'gender', 'male', 10200, 0.23, 0.25, 0.75, 0.11, 0.66, 0.25, false);

INSERT INTO fairness_metric VALUES
    (1, 'gender', 'demographic_parity_difference', 0.03, 0.01, 0.05),
    (2, 'gender', 'demographic_parity_difference', 0.10, 0.08, 0.12);

INSERT INTO shap_importance VALUES
    (1, 'income', 1, 0.42), (1, 'age', 2, 0.17),
    (2, 'income', 1, 0.45), (2, 'region', 2, 0.12);

INSERT INTO gate_check VALUES
    (1, 'auc_min', 'value', 'roc_auc', NULL, '>= 0.75', 0.81, 0.80, 0.82, 20000, 'pass', 'block',
     'roc_auc 0.81 >= 0.75'),
    (2, 'auc_min', 'value', 'roc_auc', NULL, '>= 0.75', 0.79, 0.78, 0.80, 20000, 'pass', 'block',
     'roc_auc 0.79 >= 0.75'),
    (2, 'auc_no_worse', 'change', 'roc_auc', NULL, 'delta >= -0.01', -0.02, -0.03, -0.01, 20000,
     'fail', 'block', 'roc_auc fell by 0.02 vs champion 1.0.0 (CI upper -0.01 < -0.01)'),
    (2, 'dp_gender', 'fairness', 'demographic_parity_difference', 'gender', '<= 0.05', 0.10, 0.08,
     0.12, 20000, 'fail', 'warn', 'demographic parity gap 0.10 on sex exceeds 0.05');

INSERT INTO gate_check (evaluation_run_id, check_id, kind, metric_name, threshold_text, observed,
                        ci_lower, ci_upper, n, verdict, severity, reason)
VALUES (2, 'segment:roc_auc:margin', 'segment', 'roc_auc', '>= -0.05', -0.09, -0.12, -0.06, 3000,
        'breach', 'block', 'segment region=south breaches: roc_auc difference from the rest -0.09');

INSERT INTO segment_metric (evaluation_run_id, attempt, segment, segment_columns, segment_values,
                            metric_name, n, positives, judged, not_judged_reason, higher_is_better,
                            value, ci_lower, ci_upper, rest_value, difference, difference_ci_lower,
                            difference_ci_upper, p_value, q_value, correction)
VALUES (1, 1, 'region=south', '{region}', '{south}', 'roc_auc', 3000, 600, true, NULL, true,
        0.82, 0.80, 0.84, 0.81, 0.01, -0.01, 0.03, 0.8, 0.9, 'bh'),
       (1, 1, 'region=north', '{region}', '{north}', 'roc_auc', 17000, 3400, true, NULL, true,
        0.81, 0.80, 0.82, 0.82, -0.01, -0.03, 0.01, 0.2, 0.4, 'bh'),
       (2, 1, 'region=south', '{region}', '{south}', 'roc_auc', 3000, 600, true, NULL, true,
        0.72, 0.69, 0.75, 0.81, -0.09, -0.12, -0.06, 0.00001, 0.00002, 'bh'),
       (2, 1, 'region=north', '{region}', '{north}', 'roc_auc', 17000, 3400, true, NULL, true,
        0.81, 0.80, 0.82, 0.72, 0.09, 0.06, 0.12, 1.0, 1.0, 'bh');

INSERT INTO segment_gate_check (evaluation_run_id, attempt, check_id, segment, segment_columns,
                                segment_values, metric_name, kind, n, observed, ci_lower, ci_upper,
                                lower, p_value, q_value, verdict)
VALUES (2, 1, 'segment:roc_auc:margin', 'region=south', '{region}', '{south}', 'roc_auc', 'margin',
        3000, -0.09, -0.12, -0.06, -0.05, 0.004, 0.008, 'breach');

INSERT INTO gate_decision VALUES
    (1, true, 'all 1 checks passed', %(sha1)s, false, '2026-10-01T10:02Z'),
    (2, false, '1 blocking check failed', %(sha1)s, true, '2026-11-01T10:03Z');

INSERT INTO drift_run (model_version_id, interval_start, interval_end, status, verdict, provider,
                       rows_available, rows_sampled, rows_labelled, n_features_breached,
                       report_key, report_uri, started_at, finished_at)
VALUES (1, '2026-11-20T00:00Z', '2026-11-21T00:00Z', 'drift', 'drift', 'CPUExecutionProvider',
        12000, 5000, 4000, 2, 'reports/drift/1.html', 's3://modelgate/reports/drift/1.html',
        '2026-11-21T01:00Z', '2026-11-21T01:01Z');
-- migration 0038: a re-run of the interval that found no live rows, kept beside the verdict
INSERT INTO drift_attempt (drift_run_id, attempt, status, verdict, provider, rows_available,
                           rows_sampled, rows_labelled, n_features_breached, report_key, report_uri,
                           started_at, finished_at)
VALUES (1, 1, 'drift', 'drift', 'CPUExecutionProvider', 12000, 5000, 4000, 2, 'reports/drift/1.html',
        's3://modelgate/reports/drift/1.html', '2026-11-21T01:00Z', '2026-11-21T01:01Z'),
       (1, 2, 'no_data', 'no_data', NULL, 0, 0, 4000, 0, 'reports/drift/1-attempt2.html',
        's3://modelgate/reports/drift/1-attempt2.html', '2026-11-22T01:00Z', '2026-11-22T01:01Z');
UPDATE drift_run SET attempt = 2, current_attempt = 1 WHERE drift_run_id = 1;

-- migration 0041: drift per segment of the run's first attempt
INSERT INTO segment_drift (drift_run_id, attempt, segment_column, segment_value, feature, kind, test,
                           n_reference, n_current, statistic, p_value, q_value, status, correction,
                           level, min_rows, family_size)
VALUES (1, 1, 'region', 'south', 'income', 'numeric', 'ks', 4000, 1000, 0.12, 1e-6, 4e-6, 'drift',
        'bh', 0.05, 30, 4),
       (1, 1, 'region', 'north', 'income', 'numeric', 'ks', 16000, 4000, 0.01, 0.7, 0.7, 'no_drift',
        'bh', 0.05, 30, 4),
       (1, 1, 'region', 'west', 'income', 'numeric', 'ks', 12, 3, NULL, NULL, NULL,
        'insufficient_data', 'bh', 0.05, 30, 4);
-- migration 0042: estimated performance per segment, in the same family
INSERT INTO segment_estimate (drift_run_id, attempt, segment_column, segment_value, metric, method,
                              n_rows, estimate, standard_error, lower_bound, upper_bound, confidence,
                              reference_value, max_worsening, p_value, q_value, status, reason,
                              correction, level, family_size)
VALUES (1, 1, 'region', 'south', 'roc_auc', 'cbpe_isotonic', 1000, 0.71, 0.015, 0.68, 0.74, 0.95,
        0.82, 0.05, 1e-4, 4e-4, 'breach', NULL, 'bh', 0.05, 4),
       (1, 1, 'region', 'north', 'roc_auc', 'cbpe_isotonic', 4000, 0.81, 0.008, 0.79, 0.83, 0.95,
        0.82, 0.05, 0.99, 0.99, 'ok', NULL, 'bh', 0.05, 4),
       (1, 1, 'region', 'west', 'roc_auc', 'cbpe_isotonic', 3, NULL, NULL, NULL, NULL, 0.95, 0.82,
        0.05, NULL, NULL, 'insufficient_data',
        'insufficient data: 3 scored row(s), fewer than the 50 an estimate needs', 'bh', 0.05, 4);
INSERT INTO feature_drift (drift_run_id, feature, kind, drift_rank, wasserstein,
                           wasserstein_normalised, js_divergence_base2, statistic_name,
                           statistic_value, baseline, threshold, verdict, n_reference, n_current,
                           n_missing_current, unseen_categories)
VALUES (1, 'income', 'numeric', 1, 5200.0, 0.31, 0.22, 'js_divergence_base2', 0.22, 0.01,
        0.1, 'drift', 20000, 5000, 0, '{}'),
        (1, 'region', 'categorical', 2, NULL, NULL, 0.15, 'js_divergence_base2', 0.15, 0.01,
        0.1, 'drift', 20000, 5000, 12, '{atlantis}'),
        (1, 'age', 'numeric', 3, 0.4, 0.03, 0.02, 'js_divergence_base2', 0.02, 0.01, 0.1, 'ok',
        20000, 5000, 0, '{}'),
        (1, 'prediction', 'prediction', 4, 0.01, 0.05, 0.04, 'js_divergence_base2', 0.04, 0.01,
        0.1, 'ok', 20000, 5000, 0, '{}');

INSERT INTO concept_drift_change VALUES (1, 118400, 1, '2026-11-20T14:32Z', 0.11, 0.19);
INSERT INTO evaluation_step_failure (evaluation_run_id, attempt, step, reason)
VALUES (2, 1, 'index_page', 'ObjectStoreError: object store unreachable');

INSERT INTO multivariate_drift VALUES (1, 'sliced_wasserstein_2', 0.21, 0.02, 0.05, 'drift', 3, 64,
                                       20000, 5000, 5000, 0);
INSERT INTO attribution_drift VALUES (1, 'total_variation', 0.04, 0.03, 0.1, 'ok', 100, 50);
INSERT INTO attribution_drift_share VALUES (1, 'income', 0.6, 0.58), (1, 'age', 0.4, 0.42);

INSERT INTO detector_state (model_version_id, detector, state, elements_seen, updated_by_run_id)
VALUES (1, 'adwin', '\\x00', 122400, 1);

-- migration 0005: a run whose process died, marked abandoned by the next run of the model
INSERT INTO evaluation_run (run_key, model_version_id, champion_version_id, dataset_uri, status,
                            failure_reason, started_at, finished_at, heartbeat_at)
VALUES ('eval-credit_default-1.1.0-d4', 2, 1, 's3://modelgate/data/eval-2026-11c.parquet',
        'abandoned', 'abandoned: no heartbeat since 2026-11-03T10:01:00Z (more than 30 min)',
        '2026-11-03T10:00Z', '2026-11-03T11:00Z', '2026-11-03T10:01Z');

INSERT INTO evaluation_refusal (run_key, model_name, version, dataset_uri, reason, refused_at)
VALUES ('model_evaluation__manual__2026-11-04', 'credit_default', '9.9.9',
        's3://modelgate/data/eval-2026-11.parquet',
        'RegistryError: model ''credit_default'' version ''9.9.9'' is not registered',
        '2026-11-04T10:00Z');

INSERT INTO scored_interval (model_version_id, interval_start, interval_end, scores_key, rows_scored,
                             quarantined_at, quarantine_reason, quarantined_by_run_id)
VALUES (1, '2026-11-20T00:00Z', '2026-11-21T00:00Z', 'runs/drift/1/scored-sample.parquet', 5000,
        '2026-11-21T00:05Z', 'labels partition dt=2026-11-20 under s3://labels: 4 rows share '
        'their ''id'' value with another row (ids must be unique); partition quarantined', 1);

-- migration 0017: a run that left a mistyped labels partition out finished degraded
INSERT INTO drift_run (model_version_id, interval_start, interval_end, status, verdict,
                       degraded_reason, rows_available, rows_sampled, rows_labelled,
                       n_features_breached, started_at, finished_at)
VALUES (1, '2026-11-22T00:00Z', '2026-11-23T00:00Z', 'degraded', 'ok',
        '1 partition(s) quarantined: labels partition dt=2026-11-22 under s3://labels: '
        'column "id" holds string ids', 5000, 5000, 0, 0, '2026-11-23T01:00Z', '2026-11-23T01:01Z');
INSERT INTO quarantined_partition (model_version_id, source, partition_name, partition_uri,
                                   interval_start, interval_end, reason, drift_run_id)
SELECT 1, 'labels', 'dt=2026-11-22', 's3://labels', '2026-11-22T00:00Z', '2026-11-23T00:00Z',
       'labels partition dt=2026-11-22 under s3://labels: column "id" holds string ids',
       max(drift_run_id) FROM drift_run;

-- migration 0021: run 1's estimates and quality counts; the interval's labels arrived later
INSERT INTO performance_estimate (drift_run_id, metric, method, estimate, standard_error, lower_bound,
                                  upper_bound, confidence, n_rows, reference_value, max_worsening,
                                  verdict)
VALUES (1, 'accuracy', 'cbpe_isotonic', 0.71, 0.006, 0.698, 0.722, 0.95, 5000, 0.78, 0.05, 'breach'),
       (1, 'roc_auc', 'cbpe_isotonic', 0.80, 0.007, 0.786, 0.814, 0.95, 5000, 0.84, NULL, 'ok');
INSERT INTO quality_check (drift_run_id, feature, kind, n_rows, n_missing, missing_rate,
                           reference_missing_rate, n_type_mismatch, n_out_of_range, n_new_category,
                           n_new_values, domain_checked, column_present, verdict, reasons)
VALUES (1, 'income', 'numeric', 5000, 0, 0.0, 0.0, 0, 250, 0, 0, false, true, 'breach',
        '{"out_of_range 0.0500 > 0.0100"}'),
       (1, 'region', 'categorical', 5000, 12, 0.0024, 0.002, 0, 0, 12, 1, true, true, 'breach',
        '{"new_category 0.0024 > 0.0010"}');
INSERT INTO realised_performance (model_version_id, interval_start, interval_end, metric, realised,
                                  n_labelled, drift_run_id)
VALUES (1, '2026-11-20T00:00Z', '2026-11-21T00:00Z', 'accuracy', 0.705, 4000, 1);
-- migration 0034: version 1's reference held one class only, so it has no estimator
INSERT INTO estimation_reference (model_version_id, object_key, object_uri, method, skipped_reason,
                                  n_rows, n_features)
VALUES (1, 'references/m/1/estimation.pkl', 's3://b/references/m/1/estimation.pkl', NULL,
        'the reference labels hold one class only (0: 900, 1: 0); a calibrator needs both', 900, 3);

-- migration 0025: production went back from 1.1.0 to 1.0.0, resting on 1.0.0's passed run 1
INSERT INTO model_rollback (model_name, from_version, to_version, evaluation_run_id, rolled_back_by,
                            reason, rolled_back_at)
VALUES ('credit_default', '1.1.0', '1.0.0', 1, 'jane', 'recall fell on live data',
        '2026-11-03T09:00Z');
"""


def _as_user(url: str, user: str) -> str:
    """``url`` with its user replaced (trust auth: no password)."""
    parts = urlsplit(url)
    host = parts.hostname or ""  # empty for the embedded server's socket (``?host=/dir``)
    netloc = f"{user}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _login_role(pg_url: str, group: str) -> Iterator[str]:
    role = f"mg_{group.removeprefix('modelgate_')}_test_{uuid.uuid4().hex[:10]}"
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE ROLE {role} LOGIN IN ROLE {group}")
        yield _as_user(pg_url, role)
        with admin.cursor() as cur:
            cur.execute(f"DROP ROLE {role}")
    finally:
        admin.close()


@pytest.fixture(scope="module")
def analyst_url(pg_url: str) -> Iterator[str]:
    yield from _login_role(pg_url, "modelgate_analyst")


@pytest.fixture(scope="module")
def writer_url(pg_url: str) -> Iterator[str]:
    yield from _login_role(pg_url, "modelgate_writer")


@pytest.fixture()
def seeded(clean_db: str) -> str:
    """Two versions of one model, three evaluation runs and one drift run, as the superuser.

    Tables are emptied first (identities restart at 1) in case an earlier test left rows.
    """
    _truncate_all(clean_db)
    with db.transaction(clean_db) as cur:
        cur.execute(_SEED_SQL, {"sha1": SHA_1, "sha2": SHA_2})
    return clean_db


def _fetch(url: str, sql: str) -> list[tuple[Any, ...]]:
    conn = psycopg2.connect(url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def test_readme_has_a_dozen_named_queries() -> None:
    names = [name for name, _ in QUERIES]
    assert len(names) >= 12
    assert len(set(names)) == len(names), f"duplicate query names: {names}"


@pytest.mark.parametrize("sql", [q for _, q in QUERIES], ids=[n for n, _ in QUERIES])
def test_readme_query_runs_as_analyst(seeded: str, analyst_url: str, sql: str) -> None:
    assert _fetch(analyst_url, sql), "the example query returned no rows on the seeded data"


def test_views_are_exactly_the_documented_ones_and_commented(pg_url: str) -> None:
    rows = _fetch(pg_url, """SELECT c.relname, obj_description(c.oid, 'pg_class'),
                                    pg_get_userbyid(c.relowner)
                             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                             WHERE n.nspname = 'analytics' ORDER BY c.relname""")
    assert sorted(r[0] for r in rows) == sorted(VIEWS)
    assert all(r[1] for r in rows), f"views without a COMMENT: {[r[0] for r in rows if not r[1]]}"
    assert {r[2] for r in rows} == {"modelgate_writer"}
    readme = README.read_text()
    assert [v for v in VIEWS if f"### analytics.{v}\n" not in readme] == []


def test_no_view_exposes_internal_columns(pg_url: str) -> None:
    exposed = _fetch(pg_url, """SELECT table_name, column_name FROM information_schema.columns
                                WHERE table_schema = 'analytics' AND column_name IN
                                ('archive_key', 'archive_uri', 'manifest', 'state',
                                 'report_key', 'scores_uri', 'dataset_uri', 'object_key')""")
    assert exposed == []


def test_latest_gate_decision_aggregates_blocking_reasons(seeded: str, analyst_url: str) -> None:
    rows = _fetch(analyst_url, """SELECT version, passed, blocking_failure_reasons, warning_reasons
                                  FROM analytics.latest_gate_decision ORDER BY version""")
    assert rows == [
        ("1.0.0", True, [], []),
        ("1.1.0", False, ["roc_auc fell by 0.02 vs champion 1.0.0 (CI upper -0.01 < -0.01)",
                          "segment region=south breaches: roc_auc difference from the rest -0.09"],
         ["demographic parity gap 0.10 on sex exceeds 0.05"]),
    ]


def test_which_slice_got_worse_since_the_last_version(seeded: str, analyst_url: str) -> None:
    sql = dict(QUERIES)["segment_worse_than_previous_version"]
    rows = _fetch(analyst_url, sql)
    assert [(r[1], r[2], r[3], round(r[6], 4)) for r in rows] == [
        ("region=south", "1.0.0", "1.1.0", -0.1), ("region=north", "1.0.0", "1.1.0", 0.0)]
    breaches = _fetch(analyst_url, dict(QUERIES)["segment_breaches"])
    assert [(r[1], r[2], r[3], r[8]) for r in breaches] == [
        ("1.1.0", "segment:roc_auc:margin", "region=south", "block")]


def test_which_slice_got_worse_orders_versions_by_registration_not_by_run(
        seeded: str, analyst_url: str) -> None:
    # the older version evaluated again after the newer one: still the previous version
    with db.transaction(seeded) as cur:
        cur.execute("""INSERT INTO evaluation_run (run_key, model_version_id, dataset_uri, status,
                                                   started_at, finished_at)
                       VALUES ('eval-credit_default-1.0.0-e5', 1, 's3://modelgate/data/x.parquet',
                               'passed', '2026-12-01T10:00Z', '2026-12-01T10:02Z')
                       RETURNING evaluation_run_id""")
        (run_id,) = cur.fetchone()
        cur.execute("""INSERT INTO segment_metric (evaluation_run_id, attempt, segment,
                           segment_columns, segment_values, metric_name, n, positives, judged,
                           higher_is_better, value, correction)
                       VALUES (%(r)s, 1, 'region=south', '{region}', '{south}', 'roc_auc', 3000,
                               600, true, true, 0.83, 'bh'),
                              (%(r)s, 1, 'region=north', '{region}', '{north}', 'roc_auc', 17000,
                               3400, true, true, 0.81, 'bh')""", {"r": run_id})
    rows = _fetch(analyst_url, dict(QUERIES)["segment_worse_than_previous_version"])
    assert [(r[1], r[2], r[3], round(r[6], 4)) for r in rows] == [
        ("region=south", "1.0.0", "1.1.0", -0.11), ("region=north", "1.0.0", "1.1.0", 0.0)]


def test_weakest_estimated_segments_breached_first(seeded: str, analyst_url: str) -> None:
    rows = _fetch(analyst_url, dict(QUERIES)["weakest_estimated_segments"])
    assert [(r[4], r[13], r[12]) for r in rows] == [("south", 4, "breach"), ("north", 4, "ok")]


def test_run_durations_and_report_links(seeded: str, analyst_url: str) -> None:
    durations = _fetch(analyst_url, """SELECT run_key, duration_ms, champion_version
                                       FROM analytics.evaluation_runs ORDER BY run_key""")
    assert durations == [("eval-credit_default-1.0.0-a1", 120_000.0, None),
                         ("eval-credit_default-1.1.0-b2", 180_000.0, "1.0.0"),
                         ("eval-credit_default-1.1.0-c3", 5_000.0, "1.0.0"),
                         ("eval-credit_default-1.1.0-d4", 3_600_000.0, "1.0.0")]
    links = _fetch(analyst_url, "SELECT kind, run_id FROM analytics.report_links ORDER BY 1, 2")
    assert links == [("drift", 1), ("evaluation", 1), ("evaluation", 2)]


_ANALYST_DENIED = {
    "select_model_version": "SELECT * FROM model_version",
    "select_detector_state": "SELECT state FROM detector_state",
    "select_evaluation_metric": "SELECT value FROM evaluation_metric",
    "insert_model_version": "INSERT INTO model_version (model_name, version, sha256, "
                            "archive_sha256, archive_key, archive_uri, manifest) VALUES "
                            f"('x', '9', '{SHA_1}', '{SHA_1}', 'k', 'u', '{{}}')",
    "update_evaluation_run": "UPDATE evaluation_run SET status = 'passed'",
    "delete_gate_check": "DELETE FROM gate_check",
    "insert_view": "INSERT INTO analytics.model_versions (model_name, version, sha256) "
                   f"VALUES ('x', '9', '{SHA_1}')",
    "update_view": "UPDATE analytics.model_versions SET stage = 'production'",
    # model_versions is the one automatically updatable view, so privileges are what stop it
    # (writing to the multi-table views fails earlier: they are not updatable at all).
    "delete_view": "DELETE FROM analytics.model_versions",
    "create_table_public": "CREATE TABLE public.analyst_scratch (x int)",
    "create_view_analytics": "CREATE VIEW analytics.analyst_scratch AS SELECT 1 AS x",
    # migration 0026: no TEMPORARY on the database, no CREATE anywhere (functions included)
    "create_temp_table": "CREATE TEMP TABLE analyst_scratch (x int)",
    "create_temp_view": "CREATE TEMP VIEW analyst_scratch AS SELECT 1 AS x",
    "create_function_public": "CREATE FUNCTION public.analyst_f() RETURNS int "
                              "LANGUAGE sql AS 'SELECT 1'",
    "create_function_analytics": "CREATE FUNCTION analytics.analyst_f() RETURNS int "
                                 "LANGUAGE sql AS 'SELECT 1'",
    "create_function_pg_temp": "CREATE FUNCTION pg_temp.analyst_f() RETURNS int "
                               "LANGUAGE sql AS 'SELECT 1'",
    "create_function_unqualified": "CREATE FUNCTION analyst_f() RETURNS int "
                                   "LANGUAGE sql AS 'SELECT 1'",
    "create_schema": "CREATE SCHEMA analyst_own",
}


@pytest.mark.parametrize("sql", list(_ANALYST_DENIED.values()), ids=list(_ANALYST_DENIED))
def test_analyst_is_denied(seeded: str, analyst_url: str, sql: str) -> None:
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
        _fetch(analyst_url, sql)


def test_analyst_may_only_select_views(pg_url: str, analyst_url: str) -> None:
    rows = _fetch(analyst_url, """
        SELECT c.relname,
               has_table_privilege(c.oid, 'SELECT'),
               has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('public', 'analytics') AND c.relkind IN ('r', 'v', 'S')""")
    readable = sorted(name for name, select, _ in rows if select)
    assert readable == sorted(VIEWS)
    assert [name for name, _, write in rows if write] == []


def test_analyst_may_create_nothing_anywhere(pg_url: str, analyst_url: str) -> None:
    """Migration 0026, read from the catalog rather than by trying: no CREATE or TEMPORARY on
    the database, no CREATE on any schema of it."""
    database = _fetch(analyst_url, """SELECT has_database_privilege(current_database(), 'CREATE'),
                                             has_database_privilege(current_database(), 'TEMPORARY')""")
    assert database == [(False, False)]
    creatable = _fetch(analyst_url, """SELECT nspname FROM pg_namespace
                                       WHERE has_schema_privilege(oid, 'CREATE')""")
    assert creatable == []


@pytest.mark.parametrize("view", VIEWS)
def test_analyst_reads_every_view(seeded: str, analyst_url: str, view: str) -> None:
    assert _fetch(analyst_url, f"SELECT * FROM analytics.{view}")


def test_writer_writes_tables(clean_db: str, writer_url: str) -> None:
    rows = _fetch(writer_url, f"""
        WITH mv AS (
            INSERT INTO model_version (model_name, version, sha256, archive_sha256, archive_key,
                                       archive_uri, manifest)
            VALUES ('w', '1', '{SHA_1}', '{SHA_1}', 'k', 's3://b/k', '{{}}')
            RETURNING model_version_id)
        INSERT INTO evaluation_run (run_key, model_version_id, dataset_uri)
        SELECT 'w-1', model_version_id, 's3://b/d.parquet' FROM mv
        RETURNING evaluation_run_id""")
    assert len(rows) == 1
    assert _fetch(writer_url, "UPDATE model_version SET is_drifting = true RETURNING version") == [
        ("1",)]
    assert _fetch(writer_url, "SELECT model_name FROM analytics.model_versions") == [("w",)]
    with pytest.raises(psycopg2.errors.InsufficientPrivilege):  # writing is not DDL
        _fetch(writer_url, "CREATE TABLE public.writer_scratch (x int)")
    # 0026 took nothing the writer uses: it still owns analytics (CREATE there, to own views)
    assert _fetch(writer_url, "SELECT has_schema_privilege('analytics', 'CREATE')") == [(True,)]
