"""The estimation reference of a model version is stored once and never changed (migration 0021)."""

from __future__ import annotations

import psycopg2
import psycopg2.errors
import pytest
from support.tiny_graphs import manifest_of

from modelgate.store import estimation, models

SHA = "a" * 64
SCHEMA = [{"feature": "age", "kind": "numeric", "n": 10, "missing_rate": 0.1, "minimum": 20.0,
           "maximum": 60.0, "low": 16.0, "high": 64.0, "integral": True, "domain_size": None}]


def _version(url: str) -> int:
    row, _ = models.register(url, model_name="m", version="1", sha256=SHA, archive_sha256=SHA,
                             archive_key="k", archive_uri="u", manifest=manifest_of("m", "1"))
    return row.model_version_id


def test_reference_is_written_once_and_read_back(clean_db: str) -> None:
    mv = _version(clean_db)
    assert estimation.get_reference(clean_db, mv) is None
    assert estimation.put_reference(clean_db, model_version_id=mv, object_key="k1", object_uri="s3://b/k1",
                                    method="cbpe_isotonic", skipped_reason=None, n_rows=10, schema=SCHEMA,
                                    reference_metrics={"accuracy": 0.8, "precision": None})
    # a second writer of the same version keeps the first reference
    assert not estimation.put_reference(clean_db, model_version_id=mv, object_key="k2",
                                        object_uri="s3://b/k2", method=None, skipped_reason="no labels",
                                        n_rows=5, schema=[], reference_metrics={})
    got = estimation.get_reference(clean_db, mv)
    assert got == estimation.EstimationReferenceRow("k1", "cbpe_isotonic", None,
                                                    {"accuracy": 0.8, "precision": None})


@pytest.mark.parametrize("sql", [
    "UPDATE estimation_reference SET object_key = 'other'",
    "DELETE FROM estimation_reference_metric",
    "UPDATE quality_schema_feature SET low = 0",
    "DELETE FROM quality_schema_feature",
], ids=["update_reference", "delete_metric", "update_schema", "delete_schema"])
def test_reference_rows_are_append_only(clean_db: str, sql: str) -> None:
    mv = _version(clean_db)
    estimation.put_reference(clean_db, model_version_id=mv, object_key="k1", object_uri="s3://b/k1",
                             method="cbpe_isotonic", skipped_reason=None, n_rows=10, schema=SCHEMA,
                             reference_metrics={"accuracy": 0.8})
    conn = psycopg2.connect(clean_db)
    try:
        with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="append-only"), \
                conn, conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()


def test_a_method_needs_no_reason_and_no_method_needs_one(clean_db: str) -> None:
    mv = _version(clean_db)
    with pytest.raises(psycopg2.errors.CheckViolation, match="estimation_reference_skipped_check"):
        estimation.put_reference(clean_db, model_version_id=mv, object_key="k", object_uri="u",
                                 method=None, skipped_reason=None, n_rows=10, schema=[],
                                 reference_metrics={})
