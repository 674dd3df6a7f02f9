"""Checks ``modelgate monitor set`` makes on each data location before it stores anything.

A config that can never work (``ftp://``, a missing directory, another bucket, a flat
folder instead of ``dt=YYYY-MM-DD`` partitions, columns the model does not have) would
otherwise be stored and turn every later run into ``no_data`` or a failure. Each location
must be a local directory, ``file://`` path or ``s3://<configured bucket>/prefix`` that can
be read; live and label locations must hold ``dt=YYYY-MM-DD/*.parquet`` partitions (none
yet is a warning: data may not have arrived), and one parquet file of the newest partition
(or of the reference dataset) must have the columns the model needs. Only the parquet
footer's schema is read from local files; from S3 the file is downloaded.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from modelgate.pipelines.context import Context
from modelgate.pipelines.dataset_files import PARQUET_SUFFIX, hidden, s3_parquet, walk_parquet
from modelgate.pipelines.refusals import InputRefused

_PARTITION = re.compile(r"dt=(\d{4}-\d{2}-\d{2})")


class MonitorConfigError(InputRefused):
    """A monitoring location that cannot work; the message names the option and the value."""


def _local(uri: str) -> Path | None:
    """The local path of ``uri``, or None for ``s3://``; other schemes are refused."""
    if uri.startswith("s3://"):
        return None
    if uri.startswith("file://"):
        return Path(uri[7:])
    if "://" in uri:
        raise MonitorConfigError(f"{uri!r}: only a directory, file:// path or s3://bucket/prefix "
                                 f"is supported, not {uri.split('://', 1)[0]}://")
    return Path(uri)


def check_exists(ctx: Context, option: str, uri: str) -> None:
    """Refuse a location that names nothing here: a local path that does not exist, an
    ``s3://`` bucket other than the configured one, another scheme (no listing, no reading)."""
    path = _local(uri)
    if path is None:
        _s3_key(ctx, option, uri)
    elif not path.exists():
        raise MonitorConfigError(f"{option} {uri!r} does not exist on this machine")


def _s3_key(ctx: Context, option: str, uri: str) -> str:
    bucket, _, key = uri[5:].partition("/")
    configured = getattr(ctx.store, "bucket", None)
    if bucket != configured:
        where = f"the configured bucket {configured!r}" if configured else "no S3 bucket (local store)"
        raise MonitorConfigError(f"{option} {uri!r}: bucket {bucket!r} is not readable here; "
                                 f"the object store is {where}")
    return key


def partition_day(name: str) -> dt.date | None:
    """The day of a ``dt=YYYY-MM-DD`` partition name, None for any other name.

    >>> partition_day("dt=2024-03-01"), partition_day("dt=2024-13-01"), partition_day("x")
    (datetime.date(2024, 3, 1), None, None)
    """
    match = _PARTITION.fullmatch(name)
    if match is None:
        return None
    try:
        return dt.date.fromisoformat(match.group(1))
    except ValueError:
        return None


def _local_partitions(option: str, root: Path) -> tuple[dict[dt.date, list[Path]], list[str]]:
    if not root.exists():
        raise MonitorConfigError(f"{option} {str(root)!r} does not exist")
    if not root.is_dir():
        raise MonitorConfigError(f"{option} {str(root)!r} is not a directory of dt=YYYY-MM-DD "
                                 "partitions")
    if not os.access(root, os.R_OK | os.X_OK):
        raise MonitorConfigError(f"{option} {str(root)!r} is not readable by this user")
    found: dict[dt.date, list[Path]] = {}
    other = []
    for child in sorted(root.iterdir()):
        day = partition_day(child.name) if child.is_dir() else None
        if day is None:
            if not hidden(child.name):  # _SUCCESS, .crc: not data, not a wrong layout either
                other.append(child.name)
            continue
        files = [Path(p) for p in walk_parquet(child)]  # the files a drift run reads
        if files:
            found[day] = files
    return found, other


def _s3_partitions(ctx: Context, key: str) -> tuple[dict[dt.date, list[str]], list[str]]:
    prefix = key.rstrip("/") + "/" if key else ""
    found: dict[dt.date, list[str]] = {}
    other = set()
    for k in ctx.store.list_keys(prefix):
        first, _, rest = k[len(prefix):].partition("/")
        day = partition_day(first) if rest else None
        if day is not None and k.endswith(PARQUET_SUFFIX) and not hidden(rest):
            found.setdefault(day, []).append(k)
        elif day is None and not hidden(first):
            other.add(first)
    return found, sorted(other)


def _schema(ctx: Context, option: str, uri: str, file: Path | str, work: Path) -> Any:
    local = file if isinstance(file, Path) else ctx.store.download(file, work / Path(file).name)
    try:
        return pq.read_schema(local)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise MonitorConfigError(f"{option} {uri!r}: {file} is not a readable parquet file: "
                                 f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None


def _missing(option: str, uri: str, source: str, names: Sequence[str], needed: Sequence[str]) -> None:
    missing = [c for c in needed if c not in names]
    if missing:
        raise MonitorConfigError(f"{option} {uri!r}: {source} lacks the column(s) {missing} the "
                                 f"model needs (it has {sorted(names)[:20]})")


def check_partitioned(ctx: Context, option: str, uri: str, columns: Sequence[str]) -> str | None:
    """Check a ``dt=YYYY-MM-DD`` partitioned location; a warning when it holds no partition yet.

    Raises
    ------
    MonitorConfigError
        Unsupported scheme, another bucket, a missing or unreadable directory, a layout
        other than ``dt=YYYY-MM-DD/*.parquet``, or a newest partition without ``columns``.
    """
    if not uri:
        raise MonitorConfigError(f"{option} must be a directory or s3://bucket/prefix of "
                                 f"dt=YYYY-MM-DD partitions, got {uri!r}")
    path = _local(uri)
    found: dict[dt.date, Any]
    found, other = (_local_partitions(option, path) if path is not None
                    else _s3_partitions(ctx, _s3_key(ctx, option, uri)))
    if not found:
        if other:
            raise MonitorConfigError(
                f"{option} {uri!r} holds no dt=YYYY-MM-DD/*.parquet partition (found e.g. "
                f"{other[:3]}); point it at the folder above the dt=... partitions")
        return (f"{option} {uri!r} holds no dt=YYYY-MM-DD partition yet: runs are no_data until "
                "one arrives")
    newest = max(found)
    work = ctx.scratch("monitor-check", option.strip("-"))
    first: Path | str = min(found[newest])
    names = _schema(ctx, option, uri, first, work).names
    _missing(option, uri, f"partition dt={newest.isoformat()}", names, columns)
    return None


def check_dataset(ctx: Context, option: str, uri: str, columns: Sequence[str]) -> None:
    """Check a reference dataset (a parquet file, a directory of them or an ``s3://`` prefix,
    what evaluation takes) is readable and has ``columns``."""
    path = _local(uri)
    work = ctx.scratch("monitor-check", option.strip("-"))
    file: Path | str
    if path is not None:
        if not path.exists():
            raise MonitorConfigError(f"{option} {uri!r} does not exist")
        files = [Path(p) for p in walk_parquet(path)]  # the files `evaluate --data` reads
        if not files:
            raise MonitorConfigError(f"{option} {uri!r} holds no .parquet file")
        if not os.access(files[0], os.R_OK):
            raise MonitorConfigError(f"{option} {str(files[0])!r} is not readable by this user")
        file = files[0]
    else:
        key = _s3_key(ctx, option, uri)
        keys = [k for k, _ in s3_parquet(ctx.store, key)]
        if not keys:
            raise MonitorConfigError(f"{option} {uri!r} holds no .parquet object")
        file = sorted(keys)[0]
    names = _schema(ctx, option, uri, file, work).names
    _missing(option, uri, str(file), names, columns)
