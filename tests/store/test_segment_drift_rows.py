"""Segment drift and segment estimate rows on the real PostgreSQL: written under an attempt, never
changed, shown by ``analytics.segment_drift`` and ``analytics.segment_estimates``, gone with their run."""

from __future__ import annotations

import datetime as dt

import numpy as np
import psycopg2.errors
import pytest
from modelgate.drift import segment_drift, segment_family
from support.tiny_graphs import manifest_of

from modelgate.store import drift_runs, models
from modelgate.store import segment_drift as store
from modelgate.store.db import fetch_all, transaction

START, END = dt.datetime(2026, 11, 28, tzinfo=dt.UTC), dt.datetime(2026, 11, 29, tzinfo=dt.UTC)


def _family() -> object:
    rng = np.random.default_rng(5)
    ref = {"region": np.repeat(["n", "s", "w"], [200, 200, 5]), "age": rng.normal(40, 10, 405),
           "plan": rng.choice(["a", "b"], 405)}
    age = rng.normal(40, 10, 205)
    age[100:200] += 15  # region s shifted
    cur = {"region": np.repeat(["n", "s", "w"], [100, 100, 5]), "age": age,
           "plan": rng.choice(["a", "b"], 205)}
    return segment_drift(ref, cur, ["region"], ["age", "plan"], categorical=["plan"])


def test_rows_are_written_shown_kept_and_cascade(clean_db: str) -> None:
    url = clean_db
    row, _ = models.register(url, model_name="m", version="1", sha256="a" * 64, archive_sha256="a" * 64,
                             archive_key="models/m/1.tar.gz", archive_uri="s3://b/models/m/1.tar.gz",
                             manifest=manifest_of())
    run_id = drift_runs.start_drift_run(url, model_version_id=row.model_version_id, interval_start=START,
                                        interval_end=END)
    family = _family()
    assert store.put_segment_drift(url, run_id, 1, family) == 6
    assert [(r["segment_value"], r["feature"]) for r in store.flagged(url, run_id, 1)] == [("s", "age")]
    shown = fetch_all(url, """SELECT segment_value, feature, test, n_reference, n_current, status,
                                     family_size, is_current_attempt
                              FROM analytics.segment_drift ORDER BY segment_value, feature""")
    assert shown == [("n", "age", "ks", 200, 100, "no_drift", 4, None),
                     ("n", "plan", "chi2", 200, 100, "no_drift", 4, None),
                     ("s", "age", "ks", 200, 100, "drift", 4, None),
                     ("s", "plan", "chi2", 200, 100, "no_drift", 4, None),
                     ("w", "age", "ks", 5, 5, "insufficient_data", 4, None),
                     ("w", "plan", "chi2", 5, 5, "insufficient_data", 4, None)]
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="never changed or deleted"), \
            transaction(url) as cur:
        cur.execute("UPDATE segment_drift SET status = 'no_drift'")
    with pytest.raises(psycopg2.errors.UniqueViolation):
        store.put_segment_drift(url, run_id, 1, family)
    with transaction(url) as cur:
        cur.execute("DELETE FROM drift_run WHERE drift_run_id = %s", (run_id,))
    assert fetch_all(url, "SELECT count(*) FROM segment_drift") == [(0,)]


def _estimates() -> list[dict[str, object]]:
    base = {"segment_column": "region", "metric": "accuracy", "reference_value": 0.9, "max_worsening": 0.05}
    return [{**base, "segment_value": "n", "n_rows": 400, "estimate": 0.89, "standard_error": 0.015,
             "lower": 0.86, "upper": 0.92, "reason": None},
            {**base, "segment_value": "s", "n_rows": 300, "estimate": 0.78, "standard_error": 0.02,
             "lower": 0.74, "upper": 0.82, "reason": None},
            {**base, "segment_value": "w", "n_rows": 5, "estimate": None, "standard_error": None,
             "lower": None, "upper": None,
             "reason": "insufficient data: 5 scored row(s), fewer than the 50 an estimate needs"}]


def test_estimate_rows_round_trip_with_the_joint_family(clean_db: str) -> None:
    url = clean_db
    row, _ = models.register(url, model_name="m", version="1", sha256="a" * 64, archive_sha256="a" * 64,
                             archive_key="models/m/1.tar.gz", archive_uri="s3://b/models/m/1.tar.gz",
                             manifest=manifest_of())
    run_id = drift_runs.start_drift_run(url, model_version_id=row.model_version_id, interval_start=START,
                                        interval_end=END)
    judged = segment_family(_estimates(), _family())  # 4 drift tests + 2 estimate checks
    assert judged.drift is not None
    store.put_segment_drift(url, run_id, 1, judged.drift)
    assert store.put_segment_estimates(url, run_id, 1, judged, method="cbpe_isotonic", confidence=0.95) == 3
    shown = fetch_all(url, """SELECT segment_value, metric, n_rows, estimate, lower_bound, upper_bound,
                                     status, family_size, p_value IS NOT NULL, reason IS NULL
                              FROM analytics.segment_estimates ORDER BY segment_value""")
    assert shown == [("n", "accuracy", 400, 0.89, 0.86, 0.92, "ok", 6, True, True),
                     ("s", "accuracy", 300, 0.78, 0.74, 0.82, "breach", 6, True, True),
                     ("w", "accuracy", 5, None, None, None, "insufficient_data", 6, False, False)]
    assert fetch_all(url, "SELECT DISTINCT family_size FROM segment_drift") == [(6,)]
    stored_q = fetch_all(url, "SELECT q_value FROM segment_estimate WHERE segment_value = 's'")[0][0]
    assert stored_q == pytest.approx(next(e.q_value for e in judged.estimates if e.segment_value == "s"))
    assert [r["segment_value"] for r in store.breached_estimates(url, run_id, 1)] == ["s"]
    drift, estimates = store.attempt_rows(url, run_id, 1)
    assert (len(drift), len(estimates)) == (6, 3)
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="never changed or deleted"), \
            transaction(url) as cur:
        cur.execute("UPDATE segment_estimate SET status = 'ok'")
    with pytest.raises(psycopg2.errors.UniqueViolation):
        store.put_segment_estimates(url, run_id, 1, judged, method="cbpe_isotonic", confidence=0.95)
    with transaction(url) as cur:
        cur.execute("DELETE FROM drift_run WHERE drift_run_id = %s", (run_id,))
    assert fetch_all(url, "SELECT count(*) FROM segment_estimate") == [(0,)]
