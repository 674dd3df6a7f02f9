"""Object stores: the S3 path against a real S3 API server, and the local directory."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from modelgate.config import S3Settings
from modelgate.store.objects import LocalObjectStore, ObjectStoreError, S3ObjectStore, validate_key


def test_s3_round_trip_and_presigned_link(s3_settings: S3Settings) -> None:
    store = S3ObjectStore(s3_settings)
    uri = store.put_bytes("reports/m/1/report.html", b"<h1>hi</h1>", content_type="text/html")
    assert uri == f"s3://{s3_settings.bucket}/reports/m/1/report.html"
    assert store.exists("reports/m/1/report.html")
    assert not store.exists("reports/m/1/missing.html")
    assert store.get_bytes("reports/m/1/report.html") == b"<h1>hi</h1>"
    link = store.link("reports/m/1/report.html", expiry_s=120)
    assert "X-Amz-Expires=120" in link and s3_settings.secret_key not in link
    with urllib.request.urlopen(link, timeout=10) as response:
        assert response.read() == b"<h1>hi</h1>"


def test_s3_overwrite_keeps_one_object(s3_settings: S3Settings) -> None:
    store = S3ObjectStore(s3_settings)
    store.put_bytes("a/b.txt", b"one", content_type="text/plain")
    store.put_bytes("a/b.txt", b"two", content_type="text/plain")
    objects = list(store.client.list_objects(s3_settings.bucket, prefix="a/", recursive=True))
    assert [o.object_name for o in objects] == ["a/b.txt"]
    assert store.get_bytes("a/b.txt") == b"two"


def test_s3_unreachable_server_is_a_clear_error_without_secrets() -> None:
    settings = S3Settings(endpoint="127.0.0.1:1", access_key="AK", secret_key="very-secret",
                          bucket="nowhere")
    store = S3ObjectStore(settings, timeout_s=1)
    with pytest.raises(ObjectStoreError) as info:
        store.put_bytes("k", b"x", content_type="text/plain")
    assert "127.0.0.1:1" in str(info.value) and "very-secret" not in str(info.value)
    assert "very-secret" not in repr(settings)


def test_local_store_atomic_and_file_links(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    uri = store.put_bytes("r/x.html", b"ok", content_type="text/html")
    assert uri == (tmp_path / "r" / "x.html").resolve().as_uri()
    assert store.link("r/x.html", expiry_s=1) == uri
    assert [p.name for p in (tmp_path / "r").iterdir()] == ["x.html"]  # no temp files left
    with pytest.raises(ObjectStoreError, match="'r/none' does not exist"):
        store.get_bytes("r/none")


@pytest.mark.parametrize("key", ["", "/abs", "a/../b", "a//b", "./a"],
                         ids=["empty", "absolute", "dotdot", "double-slash", "dot"])
def test_unsafe_keys_are_rejected(key: str) -> None:
    with pytest.raises(ValueError, match="object key"):
        validate_key(key)


@pytest.mark.parametrize("kind", ["s3", "local"])
def test_concurrent_downloads_of_one_key_to_one_path_each_get_the_whole_file(
    kind: str, s3_settings: S3Settings, tmp_path: Path,
) -> None:
    # Mapped drift tasks of one run download the same sample to the same scratch path at once.
    from concurrent.futures import ThreadPoolExecutor

    store = S3ObjectStore(s3_settings) if kind == "s3" else LocalObjectStore(tmp_path / "root")
    payload = bytes(range(256)) * 40_000  # 10 MB
    store.put_bytes("runs/sample.parquet", payload, content_type="application/octet-stream")
    target = tmp_path / "scratch" / "sample.parquet"

    def fetch(_: int) -> bytes:
        return store.download("runs/sample.parquet", target).read_bytes()

    with ThreadPoolExecutor(max_workers=8) as pool:
        seen = list(pool.map(fetch, range(16)))
    assert all(s == payload for s in seen)
    assert sorted(p.name for p in target.parent.iterdir()) == ["sample.parquet"]  # no leftovers


def test_eight_threads_reading_one_store_reuse_their_connections(
        s3_settings: S3Settings, caplog: pytest.LogCaptureFixture) -> None:
    """The pipelines read footers and partitions eight at a time through one store: each thread
    keeps its connection (urllib3's pool used to hold one per host, so the others were
    discarded after every request, with a "Connection pool is full" warning each)."""
    import logging
    from concurrent.futures import ThreadPoolExecutor

    store = S3ObjectStore(s3_settings)
    for i in range(8):
        store.put_bytes(f"pool/{i}", bytes([i]) * 64, content_type="application/octet-stream")
    caplog.set_level(logging.WARNING, logger="urllib3.connectionpool")
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda i: store.get_range(f"pool/{i % 8}", 0, 8), range(64)))
    assert got == [bytes([i % 8]) * 8 for i in range(64)]
    assert not [r for r in caplog.records if "Connection pool is full" in r.getMessage()]
