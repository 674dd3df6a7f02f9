"""Object store for model archives, scores and HTML reports.

Two implementations behind one small interface: :class:`S3ObjectStore` talks to any S3 API
server (MinIO in production, moto's server in tests) through the ``minio`` client, and
:class:`LocalObjectStore` keeps objects in a directory with ``file://`` links (the embedded
default). Keys are chosen by the caller and are deterministic, so re-running a task
overwrites the same object instead of adding a new one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from modelgate.config import S3Settings, Settings
from modelgate.files import atomic_write

log = logging.getLogger("modelgate.store")


class ObjectStoreError(RuntimeError):
    """The object store could not be reached or refused an operation."""


class ObjectStore(Protocol):
    def put_bytes(self, key: str, data: bytes, *, content_type: str) -> str:
        """Store ``data`` under ``key`` atomically and return its URI."""
        ...

    def put_file(self, key: str, path: Path, *, content_type: str) -> str: ...

    def get_bytes(self, key: str) -> bytes: ...

    def size(self, key: str) -> int:
        """The object's length in bytes."""
        ...

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        """``length`` bytes of the object from ``offset`` (fewer at its end): one ranged read,
        so a reader of a parquet footer and a few row groups never fetches the whole object."""
        ...

    def download(self, key: str, path: Path) -> Path: ...

    def exists(self, key: str) -> bool: ...

    def uri(self, key: str) -> str: ...

    def list_keys(self, prefix: str) -> list[str]:
        """Keys under ``prefix``, sorted."""
        ...

    def list_sizes(self, prefix: str) -> list[tuple[str, int]]:
        """``(key, bytes)`` of every object whose key starts with ``prefix``, sorted by key,
        from one listing (S3 returns sizes with the keys: no request per object)."""
        ...

    def delete_keys(self, keys: Sequence[str]) -> int:
        """Delete the objects ``keys`` (missing ones are no error); how many were asked."""
        ...

    def link(self, key: str, *, expiry_s: int) -> str:
        """A URL a person can open: presigned with an expiry for S3, ``file://`` locally."""
        ...


def validate_key(key: str) -> str:
    """Reject keys that could escape the bucket or the local root.

    >>> validate_key("reports/gss/v1/evaluation.html")
    'reports/gss/v1/evaluation.html'
    """
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"object key must be a relative path without '..' or empty parts, got {key!r}")
    return key


class LocalObjectStore:
    """Objects as files under ``root``; writes go to a temp file then ``os.replace``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, key: str) -> Path:
        return self.root / validate_key(key)

    def put_bytes(self, key: str, data: bytes, *, content_type: str) -> str:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        return self.uri(key)

    def put_file(self, key: str, path: Path, *, content_type: str) -> str:
        return self.put_bytes(key, path.read_bytes(), content_type=content_type)

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise ObjectStoreError(f"object {key!r} does not exist in {self.root}") from None

    def size(self, key: str) -> int:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            raise ObjectStoreError(f"object {key!r} does not exist in {self.root}") from None

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        try:
            with self._path(key).open("rb") as f:
                f.seek(offset)
                return f.read(length)
        except FileNotFoundError:
            raise ObjectStoreError(f"object {key!r} does not exist in {self.root}") from None

    def download(self, key: str, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, self.get_bytes(key))  # concurrent tasks may download the same key
        return path

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def uri(self, key: str) -> str:
        return self._path(key).as_uri()

    def list_keys(self, prefix: str) -> list[str]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*")
                      if p.is_file() and not p.name.startswith(".tmp-"))

    def list_sizes(self, prefix: str) -> list[tuple[str, int]]:
        folder, _, start = prefix.rpartition("/")
        base = self.root / folder if folder else self.root
        if not base.is_dir():
            return []
        found = []
        for entry in base.iterdir():  # the names in the prefix's folder that start like it
            if not entry.name.startswith(start):
                continue
            for path in (entry.rglob("*") if entry.is_dir() else [entry]):
                if path.is_file() and not path.name.startswith(".tmp-"):
                    found.append((path.relative_to(self.root).as_posix(), path.stat().st_size))
        return sorted(found)

    def delete_keys(self, keys: Sequence[str]) -> int:
        parents = set()
        for key in keys:
            path = self._path(key)
            path.unlink(missing_ok=True)
            parents.add(path.parent)
        for folder in sorted(parents, key=lambda p: len(p.parts), reverse=True):
            while folder != self.root and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()  # empty folders left by deleted objects
                folder = folder.parent
        return len(keys)

    def link(self, key: str, *, expiry_s: int) -> str:
        return self.uri(key)


# Connections kept open to the server: the pipelines read footers and partitions eight at a
# time through one store; urllib3 keeps one by default and discards the rest after each request.
CONNECTIONS_PER_HOST = 16


class S3ObjectStore:
    """Objects in an S3 bucket through the ``minio`` client; creates the bucket if missing."""

    def __init__(self, settings: S3Settings, *, timeout_s: float = 30.0) -> None:
        import urllib3
        from minio import Minio

        self.settings = settings
        http = urllib3.PoolManager(
            maxsize=CONNECTIONS_PER_HOST,
            timeout=urllib3.Timeout(connect=5.0, read=timeout_s),
            retries=urllib3.Retry(total=2, backoff_factor=0.2, status_forcelist=(500, 502, 503, 504)),
        )
        self.client = Minio(
            settings.endpoint,
            access_key=settings.access_key,
            secret_key=settings.secret_key,
            secure=settings.secure,
            region=settings.region,
            http_client=http,
        )
        self._bucket_checked = False

    @property
    def bucket(self) -> str:
        return self.settings.bucket

    def _ensure_bucket(self) -> None:
        if self._bucket_checked:
            return
        try:
            if not self.client.bucket_exists(self.bucket):
                self.client.make_bucket(self.bucket)
                log.info("created bucket %r on %s", self.bucket, self.settings.endpoint)
        except Exception as exc:
            raise self._error("reach bucket", self.bucket, exc) from exc
        self._bucket_checked = True

    def _error(self, action: str, key: str, exc: Exception) -> ObjectStoreError:
        # The message names the server and key but never the credentials.
        return ObjectStoreError(
            f"object store at {self.settings.endpoint} could not {action} {key!r}: "
            f"{type(exc).__name__}: {exc}"
        )

    def put_bytes(self, key: str, data: bytes, *, content_type: str) -> str:
        validate_key(key)
        self._ensure_bucket()
        try:
            self.client.put_object(
                self.bucket, key, io.BytesIO(data), len(data), content_type=content_type,
                metadata={"x-amz-meta-sha256": hashlib.sha256(data).hexdigest()},
            )
        except Exception as exc:
            raise self._error("store", key, exc) from exc
        return self.uri(key)

    def put_file(self, key: str, path: Path, *, content_type: str) -> str:
        validate_key(key)
        self._ensure_bucket()
        try:
            self.client.fput_object(self.bucket, key, str(path), content_type=content_type)
        except Exception as exc:
            raise self._error("store", key, exc) from exc
        return self.uri(key)

    def get_bytes(self, key: str) -> bytes:
        validate_key(key)
        try:
            response = self.client.get_object(self.bucket, key)
            try:
                return response.read()
            finally:
                response.close()
                response.release_conn()
        except Exception as exc:
            raise self._error("read", key, exc) from exc

    def size(self, key: str) -> int:
        validate_key(key)
        try:
            return int(self.client.stat_object(self.bucket, key).size or 0)
        except Exception as exc:
            raise self._error("look up", key, exc) from exc

    def get_range(self, key: str, offset: int, length: int) -> bytes:
        validate_key(key)
        if length <= 0:
            return b""
        try:
            response = self.client.get_object(self.bucket, key, offset=offset, length=length)
            try:
                return response.read()
            finally:
                response.close()
                response.release_conn()
        except Exception as exc:
            raise self._error("read", key, exc) from exc

    def download(self, key: str, path: Path) -> Path:
        validate_key(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # minio's own temporary name is <path>.<etag>.part.minio: two tasks downloading the
        # same object to the same path (mapped drift tasks of one run) would share it. A
        # unique temporary file per call, then os.replace, gives each reader a whole file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name}.")
        os.close(fd)
        try:
            self.client.fget_object(self.bucket, key, tmp)
            os.replace(tmp, path)
        except Exception as exc:
            Path(tmp).unlink(missing_ok=True)
            raise self._error("read", key, exc) from exc
        return path

    def exists(self, key: str) -> bool:
        from minio.error import S3Error

        validate_key(key)
        try:
            self.client.stat_object(self.bucket, key)
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchBucket", "NoSuchObject"):
                return False
            raise self._error("look up", key, exc) from exc
        except Exception as exc:
            raise self._error("look up", key, exc) from exc
        return True

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def list_keys(self, prefix: str) -> list[str]:
        return [key for key, _ in self.list_sizes(prefix)]

    def list_sizes(self, prefix: str) -> list[tuple[str, int]]:
        self._ensure_bucket()
        try:
            # one LIST request per 1000 keys; each entry carries the object's size
            objects = self.client.list_objects(self.bucket, prefix=prefix, recursive=True)
            return sorted((o.object_name, int(o.size or 0)) for o in objects)
        except Exception as exc:
            raise self._error("list", prefix, exc) from exc

    def delete_keys(self, keys: Sequence[str]) -> int:
        from minio.deleteobjects import DeleteObject

        for key in keys:
            validate_key(key)
        try:
            # one request per 1000 keys; the iterator yields the keys S3 could not delete
            failed = list(self.client.remove_objects(self.bucket, [DeleteObject(k) for k in keys]))
        except Exception as exc:
            raise self._error("delete", keys[0] if keys else "", exc) from exc
        if failed:
            raise ObjectStoreError(f"could not delete {len(failed)} object(s) from bucket "
                                   f"{self.bucket!r}, e.g. {failed[0].name!r}: {failed[0].message}")
        return len(keys)

    def link(self, key: str, *, expiry_s: int) -> str:
        try:
            return self.client.presigned_get_object(
                self.bucket, key, expires=dt.timedelta(seconds=expiry_s)
            )
        except Exception as exc:
            raise self._error("presign", key, exc) from exc


def put_once(store: ObjectStore, key: str, data: bytes, *, content_type: str) -> str:
    """Store ``data`` under ``key`` unless it is there already; never replace other bytes.

    For write-once objects (model archives). The same bytes again are a no-op; different
    bytes under an existing key raise :class:`ObjectStoreError` naming both sha256s.
    """
    if store.exists(key):
        stored = hashlib.sha256(store.get_bytes(key)).hexdigest()
        offered = hashlib.sha256(data).hexdigest()
        if stored != offered:
            raise ObjectStoreError(
                f"object {key!r} is write-once and already holds sha256 {stored}; refusing to "
                f"replace it with sha256 {offered}")
        return store.uri(key)
    return store.put_bytes(key, data, content_type=content_type)


def open_object_store(settings: Settings) -> ObjectStore:
    """The configured store: S3 settings, an Airflow connection, or a local directory."""
    if settings.s3 is not None:
        return S3ObjectStore(settings.s3)
    s3 = _airflow_s3_settings(settings.s3_conn_id)
    if s3 is not None:
        return S3ObjectStore(s3)
    return LocalObjectStore(settings.home / "objects")


def _airflow_s3_settings(conn_id: str) -> S3Settings | None:
    if not os.environ.get("AIRFLOW_CTX_DAG_ID") and f"AIRFLOW_CONN_{conn_id.upper()}" not in os.environ:
        return None
    try:
        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(conn_id)
    except Exception:  # noqa: BLE001 - any lookup failure means "not configured"
        return None
    extra = conn.extra_dejson or {}
    endpoint = extra.get("endpoint_url") or f"{conn.host}:{conn.port or 9000}"
    from modelgate.config import strip_scheme

    return S3Settings(
        endpoint=strip_scheme(str(endpoint)),
        access_key=conn.login or "",
        secret_key=conn.password or "",
        bucket=extra.get("bucket", "modelgate"),
        secure=str(endpoint).startswith("https://") or bool(extra.get("secure", False)),
        region=extra.get("region_name", "us-east-1"),
    )
