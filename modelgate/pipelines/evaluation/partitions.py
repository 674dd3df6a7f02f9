"""Partitioned held-out data: a parquet file, a directory of them, or an ``s3://`` prefix.

A dataset is listed once into its partitions (sorted, so every caller sees the same
order and the same partition indices); each partition is scored on its own (one mapped
Airflow task per file, or one after the other in the CLI) and summarised into
mergeable statistics (:mod:`modelgate.evaluation.sufficient`).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.pipelines.context import Context, fetch_dataset
from modelgate.pipelines.dataset_files import PARQUET_SUFFIX, s3_parquet, walk_parquet
from modelgate.store.objects import ObjectStore

log = logging.getLogger(__name__)


def list_partitions(ctx: Context, dataset_uri: str) -> list[str]:
    """The parquet files of a dataset, sorted: itself if it is one file.

    ``dataset_uri`` is a local path or ``file://`` URI (a file or a directory, searched
    recursively for ``*.parquet``), or ``s3://bucket/key`` (an object, or a prefix whose
    ``*.parquet`` objects are the partitions). Files that are not data are left out
    (:mod:`~modelgate.pipelines.dataset_files`).

    Raises
    ------
    FileNotFoundError
        If the dataset does not exist or holds no parquet file.
    ValueError
        If an ``s3://`` dataset is not in the configured bucket.
    """
    return list_partitions_in(ctx.store, dataset_uri)


def list_partitions_in(store: ObjectStore | None, dataset_uri: str) -> list[str]:
    """:func:`list_partitions` with only an object store (None: local datasets only)."""
    return [uri for uri, _ in list_sized(store, dataset_uri)]


def list_sized(store: ObjectStore | None, dataset_uri: str) -> list[tuple[str, int]]:
    """:func:`list_partitions_in` with each file's size in bytes, what
    :func:`batch_by_size` groups by: an ``s3://`` dataset from one listing request (per
    1000 keys; S3 lists sizes with the keys), a local one from ``os.stat``."""
    if not dataset_uri.startswith("s3://"):
        path = Path(dataset_uri[7:] if dataset_uri.startswith("file://") else dataset_uri)
        return [(p, os.stat(p).st_size) for p in list_partitions_local(path)]
    bucket, _, key = dataset_uri[5:].partition("/")
    if store is None or bucket != getattr(store, "bucket", None):
        raise ValueError(f"dataset {dataset_uri!r} is not in the configured bucket "
                         "(MODELGATE_S3_ENDPOINT, MODELGATE_S3_BUCKET)")
    found = [(f"s3://{bucket}/{k}", size) for k, size in s3_parquet(store, key)]
    if not found:
        raise FileNotFoundError(f"held-out dataset {dataset_uri!r} holds no {PARQUET_SUFFIX} file")
    return found


def local_files(store: ObjectStore | None, dataset_uri: str, work: Path
                ) -> Generator[Path, None, None]:
    """Each partition of a dataset as a local file, in partition order.

    ``s3://`` objects are downloaded into ``work`` one at a time and deleted once the
    caller asks for the next one (or stops), so a large dataset never fills the disk.
    """
    for uri in list_partitions_in(store, dataset_uri):
        if not uri.startswith("s3://"):
            yield Path(uri)
            continue
        key = uri[5:].partition("/")[2]
        assert store is not None  # list_partitions_in refused an s3:// dataset without one
        path = store.download(key, work / Path(key).name)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)


def dataset_sha256(store: ObjectStore | None, dataset_uri: str, work: Path) -> str:
    """:func:`dataset_fingerprint` of any dataset (names relative to it); ``s3://``
    partitions are downloaded to be hashed, one at a time."""
    # imported here (and below): the merge tasks load this module and must not load ONNX Runtime
    from modelgate.onnx.scoring import file_sha256

    if not dataset_uri.startswith("s3://"):
        return local_dataset_fingerprint(Path(dataset_uri[7:] if dataset_uri.startswith("file://")
                                              else dataset_uri))
    names = [partition_name(dataset_uri, u) for u in list_partitions_in(store, dataset_uri)]
    return dataset_fingerprint([(name, file_sha256(path)) for name, path in
                                zip(names, local_files(store, dataset_uri, work), strict=True)])


def check_partition(dataset_uri: str, partition_uri: str) -> None:
    """Refuse a partition that is not the dataset or under it (a task's argument is input)."""
    base = dataset_uri[7:] if dataset_uri.startswith("file://") else dataset_uri
    for member in members(partition_uri):
        if member != base and not member.startswith(base.rstrip("/") + "/"):
            raise ValueError(f"partition {member!r} is not part of dataset {dataset_uri!r}")


# Small files are scored together: per-file overhead (task, session, objects) dominated datasets
# of many small files (85 ms a file). Larger files stay partitions of their own, and so does
# every file of a dataset of up to 64 files: there a DAG gains more from spreading files over
# workers, and the float sums of the statistics keep the order of a mapped run's.
BATCH_MIN_FILES = 64
SMALL_FILE_BYTES = 8 << 20
BATCH_BYTES = 64 << 20
BATCH_FILES = 4096
BATCH_SEPARATOR = "\n"  # never in a path the listing returns: it is refused in names


def batch_small_files(paths: Sequence[str], *, min_files: int = BATCH_MIN_FILES) -> list[str]:
    """:func:`batch_by_size` of local files, their sizes from ``os.stat``.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for n in "abc":
    ...     _ = (d / f"{n}.parquet").write_bytes(b"x")
    >>> files = sorted(map(str, d.iterdir()))
    >>> [p.count(BATCH_SEPARATOR) + 1 for p in batch_small_files(files, min_files=0)]
    [3]
    >>> len(batch_small_files(files))  # a few files: one partition each
    3
    """
    if len(paths) <= min_files:
        return list(paths)
    return batch_by_size([(p, os.stat(p).st_size) for p in paths], min_files=min_files)


def batch_by_size(sized: Sequence[tuple[str, int]], *, min_files: int = BATCH_MIN_FILES) -> list[str]:
    """Partitions of ``(file, bytes)`` in order (local paths or ``s3://`` URIs): when there
    are more than ``min_files`` files, consecutive files under 8 MiB are joined into batches
    of at most 64 MiB and 4096 files (one partition, its members separated by a newline).

    >>> mib = 1 << 20
    >>> sized = [("a", 1), ("b", 9 * mib), ("c", 1), ("d", 1)]
    >>> [p.split(BATCH_SEPARATOR) for p in batch_by_size(sized, min_files=0)]
    [['a'], ['b'], ['c', 'd']]
    """
    if len(sized) <= min_files:
        return [uri for uri, _ in sized]
    out: list[str] = []
    batch: list[str] = []
    size = 0
    for uri, n in sized:
        if batch and (n >= SMALL_FILE_BYTES or size + n > BATCH_BYTES or len(batch) >= BATCH_FILES):
            out.append(BATCH_SEPARATOR.join(batch))
            batch, size = [], 0
        if n >= SMALL_FILE_BYTES:
            out.append(uri)
        else:
            batch.append(uri)
            size += n
    if batch:
        out.append(BATCH_SEPARATOR.join(batch))
    return out


def members(partition_uri: str) -> list[str]:
    """The files of a partition (one, or a batch of :func:`batch_by_size`)."""
    return partition_uri.split(BATCH_SEPARATOR)


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """A partition as one local parquet file; for a batch, its members and the sha256 of each
    member's bytes, in order (both empty for one file: scoring hashes the file it reads)."""

    path: Path
    members: tuple[str, ...] = ()
    member_sha256: tuple[str, ...] = ()


def fetch_partition(ctx: Context, partition_uri: str, work: Path) -> Path:
    """A local parquet file holding the partition (:func:`fetch_members`' path)."""
    return fetch_members(ctx, partition_uri, work).path


# Members fetched at once: a GET of a small object is mostly waiting (S3, MinIO), so a few in
# flight hide that; the bytes of one batch (at most BATCH_BYTES) are in memory anyway.
FETCH_THREADS = 8


def fetch_members(ctx: Context, partition_uri: str, work: Path) -> FetchedPartition:
    """The partition as a local parquet file: the file itself, or a batch's files concatenated
    in order into ``work/batch.parquet``, with each member's sha256.

    A batch's ``s3://`` members are read whole into memory with one GET each, up to
    :data:`FETCH_THREADS` at once, then hashed and decoded; none is written to disk, so two
    members of different folders that share a file name never meet. Local members are read
    where they are.

    Raises
    ------
    modelgate.onnx.scoring.ScoringError
        A member that is not readable parquet, named by its path or ``s3://`` URI.
    """
    files = members(partition_uri)
    if len(files) == 1:
        return FetchedPartition(fetch_dataset(ctx, partition_uri, work))
    from modelgate.onnx.scoring import ScoringError

    tables, hashes = [], []
    remote = files[0].startswith("s3://")
    pool = ThreadPoolExecutor(FETCH_THREADS if remote else 1)
    try:
        fetched = pool.map(lambda f: _object_bytes(ctx, f), files) if remote else [None] * len(files)
        for member, data in zip(files, fetched, strict=True):
            try:
                sha, table = _read_member(member, data)
            except (pa.ArrowException, OSError) as exc:
                raise ScoringError(f"cannot read parquet file {member!r}: {exc}") from exc
            hashes.append(sha)
            tables.append(table)
    finally:
        pool.shutdown(cancel_futures=True)  # after an error, fetch no further member
    work.mkdir(parents=True, exist_ok=True)
    out = work / "batch.parquet"
    pq.write_table(pa.concat_tables(tables, promote_options="default"), out)
    return FetchedPartition(out, tuple(files), tuple(hashes))


def _object_bytes(ctx: Context, member: str) -> bytes:
    """The bytes of an ``s3://`` batch member, an object of the configured bucket."""
    bucket, _, key = member[5:].partition("/")
    if bucket != getattr(ctx.store, "bucket", None):
        raise ValueError(f"dataset file {member!r} is not in the configured bucket")
    return ctx.store.get_bytes(key)


def _read_member(member: str, data: bytes | None) -> tuple[str, pa.Table]:
    """sha256 and rows of a member: its fetched bytes, or the local file ``member`` (read in
    place: faster than from a buffer)."""
    from modelgate.onnx.scoring import file_sha256

    if data is None:
        return file_sha256(Path(member)), pq.read_table(member)
    return hashlib.sha256(data).hexdigest(), pq.read_table(pa.BufferReader(data))


def member_fingerprints(dataset_uri: str, fetched: FetchedPartition) -> tuple[tuple[str, str], ...]:
    """``(name, sha256)`` of each file of a fetched batch, for the dataset fingerprint; () for
    one file (its scored file's sha256 is the file's).

    The sha256 are of the members' bytes, local or ``s3://`` alike, so an ``s3://`` dataset
    and a local copy of it have one fingerprint, as an unbatched ``s3://`` dataset has (the
    scored files of its partitions are hashed). An ETag is not that identity: a multipart
    upload's is no MD5 of the bytes, and the same bytes uploaded in other parts get another.
    """
    return tuple((partition_name(dataset_uri, f), sha)
                 for f, sha in zip(fetched.members, fetched.member_sha256, strict=True))


def dataset_fingerprint(partitions: Sequence[tuple[str, str]]) -> str:
    """sha256 of a dataset from ``(partition name, file sha256)`` pairs in order.

    One partition: its file's sha256 (so a single-file dataset keeps its file hash).

    >>> dataset_fingerprint([("a.parquet", "00")])
    '00'
    >>> len(dataset_fingerprint([("a.parquet", "00"), ("b.parquet", "11")]))
    64
    """
    if len(partitions) == 1:
        return partitions[0][1]
    digest = hashlib.sha256()
    for name, sha in partitions:
        digest.update(f"{name}\t{sha}\n".encode())
    return digest.hexdigest()


def local_dataset_fingerprint(path: Path) -> str:
    """:func:`dataset_fingerprint` of a local file or directory (names relative to it)."""
    from modelgate.onnx.scoring import file_sha256

    if path.is_file():
        return file_sha256(path)
    files = [Path(p) for p in list_partitions_local(path)]
    return dataset_fingerprint([(p.relative_to(path).as_posix(), file_sha256(p)) for p in files])


def list_partitions_local(path: Path) -> list[str]:
    """:func:`list_partitions` for a local path (no stores needed): the files
    :func:`~modelgate.pipelines.dataset_files.walk_parquet` lists.

    Raises
    ------
    FileNotFoundError
        If the path does not exist or holds no parquet file.
    """
    if not path.exists():
        raise FileNotFoundError(f"held-out dataset {str(path)!r} does not exist")
    found = walk_parquet(path)
    if not found:
        raise FileNotFoundError(f"held-out dataset {str(path)!r} holds no {PARQUET_SUFFIX} file")
    return found


def local_rows(paths: Iterable[str]) -> int:
    """Rows of local parquet files, from their footers (no data is read).

    Raises
    ------
    modelgate.onnx.scoring.ScoringError
        A file that is not readable parquet, named as scoring names it.
    """
    total = 0
    for path in paths:
        try:
            total += pq.read_metadata(path).num_rows
        except (pa.ArrowException, OSError) as exc:
            from modelgate.onnx.scoring import ScoringError  # onnxruntime: only on this path

            raise ScoringError(f"cannot read parquet file {str(path)!r}: {exc}") from exc
    return total


def partition_name(dataset_uri: str, partition_uri: str) -> str:
    """The partition's path relative to the dataset (its file name for a one-file dataset).

    A local dataset given as ``./d`` lists its files as ``d/a.parquet``: both are normalised
    before one is taken from the other, so each file keeps a name of its own.

    >>> partition_name("/d", "/d/day=1/a.parquet")
    'day=1/a.parquet'
    >>> partition_name("./d/", "d/a.parquet"), partition_name("s3://b/d/", "s3://b/d/x/a.parquet")
    ('a.parquet', 'x/a.parquet')
    """
    base = dataset_uri[7:] if dataset_uri.startswith("file://") else dataset_uri
    files = members(partition_uri)
    if len(files) > 1:
        return f"{partition_name(dataset_uri, files[0])}+{len(files) - 1}"
    if partition_uri == base:
        return Path(partition_uri).name
    if partition_uri.startswith("s3://"):
        return partition_uri[len(base.rstrip("/")) + 1:]
    relative = os.path.relpath(os.path.normpath(partition_uri), os.path.normpath(base))
    return Path(partition_uri).name if relative == "." else relative


def sample_positions(row_counts: Sequence[int], size: int, seed: int) -> list[np.ndarray]:
    """A seeded sample of ``size`` distinct rows across partitions, as offsets per partition.

    The sample depends only on the row counts and the seed, not on which worker reads.

    >>> [p.tolist() for p in sample_positions([3, 2], 5, seed=0)]
    [[0, 1, 2], [0, 1]]
    """
    total = int(sum(row_counts))
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(total, size=min(size, total), replace=False))
    starts = np.cumsum([0, *row_counts])
    return [chosen[(chosen >= starts[i]) & (chosen < starts[i + 1])] - starts[i]
            for i in range(len(row_counts))]

