"""Migrations and model registry against the real PostgreSQL server."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg2
import pytest
from support.tiny_graphs import manifest_of

from modelgate.store import db, models

SHA_A = "a" * 64
SHA_B = "b" * 64


def _register(url: str, version: str, sha: str = SHA_A) -> models.ModelVersionRow:
    row, _ = models.register(
        url, model_name="m", version=version, sha256=sha, archive_sha256=sha,
        archive_key=f"models/m/{version}.tar.gz", archive_uri=f"s3://b/models/m/{version}.tar.gz",
        manifest=manifest_of("m", version),
    )
    return row


def test_upgrade_is_idempotent_and_recorded(pg_url: str) -> None:
    assert db.upgrade(pg_url) == []  # the session fixture already applied everything
    with db.transaction(pg_url) as cur:
        cur.execute("SELECT version, name FROM schema_migration ORDER BY version")
        recorded = cur.fetchall()
    on_disk = [(m.version, m.name) for m in db.load_migrations()]
    assert recorded == on_disk
    assert on_disk[0] == (1, "model_and_evaluation")


def test_changed_migration_is_refused(pg_url: str, tmp_path: Path) -> None:
    for migration in db.load_migrations():
        text = migration.sql + ("\n-- edited\n" if migration.version == 1 else "")
        (tmp_path / f"{migration.version:04d}_{migration.name}.sql").write_text(text)
    with pytest.raises(db.MigrationError, match="0001_model_and_evaluation.sql was changed"):
        db.upgrade(pg_url, tmp_path)


def test_migration_version_used_twice_is_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0003_b.sql").write_text("SELECT 1;")
    (tmp_path / "0003_c.sql").write_text("SELECT 1;")
    with pytest.raises(db.MigrationError, match="0003 is used twice"):
        db.load_migrations(tmp_path)


def test_migration_gap_is_allowed(tmp_path: Path) -> None:
    """Numbers are reserved for changes developed in parallel; one may land first."""
    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0003_c.sql").write_text("SELECT 1;")
    assert [m.version for m in db.load_migrations(tmp_path)] == [1, 3]


def test_register_same_version_twice_is_noop_but_other_hash_fails(clean_db: str) -> None:
    first = _register(clean_db, "1")
    again, created = models.register(
        clean_db, model_name="m", version="1", sha256=SHA_A, archive_sha256=SHA_A,
        archive_key="k", archive_uri="u", manifest=manifest_of("m", "1"),
    )
    assert not created and again.model_version_id == first.model_version_id
    with pytest.raises(models.RegistryError, match=rf"model.onnx sha256 {SHA_A}\); this archive has {SHA_B}"):
        _register(clean_db, "1", SHA_B)
    with pytest.raises(models.RegistryError, match="different manifest"):  # same bytes, edited manifest
        models.register(clean_db, model_name="m", version="1", sha256=SHA_A, archive_sha256=SHA_B,
                        archive_key="k", archive_uri="u", manifest=manifest_of("m", "1", threshold=0.01))
    assert first.stage == "candidate"


def test_unknown_version_is_a_clear_error(clean_db: str) -> None:
    with pytest.raises(models.RegistryError, match="'m' version '9' is not registered"):
        models.get(clean_db, "m", "9")


def test_promote_archives_previous_in_one_step(clean_db: str) -> None:
    v1, v2 = _register(clean_db, "1"), _register(clean_db, "2", SHA_B)
    assert models.promote(clean_db, v1.model_version_id, expected_champion_id=None) is None
    archived = models.promote(clean_db, v2.model_version_id, expected_champion_id=v1.model_version_id)
    assert archived == v1.model_version_id
    assert models.get(clean_db, "m", "1").stage == "archived"
    assert models.get_production(clean_db, "m").version == "2"  # type: ignore[union-attr]


def test_database_enforces_one_production_model(clean_db: str) -> None:
    v1, v2 = _register(clean_db, "1"), _register(clean_db, "2", SHA_B)
    models.promote(clean_db, v1.model_version_id, expected_champion_id=None)
    with pytest.raises(psycopg2.errors.UniqueViolation, match="model_version_model_name_production_key"), \
            db.transaction(clean_db) as cur:
        cur.execute("UPDATE model_version SET stage = 'production' WHERE model_version_id = %s",
                    (v2.model_version_id,))


def test_concurrent_promotions_of_two_candidates_promote_exactly_one(clean_db: str) -> None:
    v0 = _register(clean_db, "0")
    models.promote(clean_db, v0.model_version_id, expected_champion_id=None)
    candidates = [_register(clean_db, str(i), f"{i}" * 64) for i in (1, 2)]
    errors: list[Exception] = []
    barrier = threading.Barrier(2)

    def attempt(row: models.ModelVersionRow) -> None:
        barrier.wait()
        try:
            models.promote(clean_db, row.model_version_id, expected_champion_id=v0.model_version_id)
        except models.RegistryError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=attempt, args=(c,)) for c in candidates]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 1 and "production changed since" in str(errors[0])
    with db.transaction(clean_db) as cur:
        cur.execute("SELECT count(*) FROM model_version WHERE stage = 'production'")
        assert cur.fetchone()[0] == 1


def test_redact_url_hides_password() -> None:
    assert "s3cret" not in db.redact_url("postgresql://u:s3cret@h/db")
