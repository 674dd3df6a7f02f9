"""The explain step's sample: read by row group from the footers, the same rows however the
dataset's files are split or batched, through ranged reads of the object store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from modelgate.config import S3Settings
from modelgate.pipelines.evaluation import row_sample
from modelgate.pipelines.evaluation.partitions import BATCH_SEPARATOR, sample_positions
from modelgate.pipelines.evaluation.row_sample import (
    groups_holding,
    open_object,
    read_partition_rows,
    read_positions,
    sample_features,
    sample_scores,
)
from modelgate.store.object_file import ObjectFile
from modelgate.store.objects import LocalObjectStore, S3ObjectStore

ROWS = 3000


def _table(first: int, n: int) -> pa.Table:
    ids = np.arange(first, first + n)
    # an incompressible wide column makes the file far larger than its footer's first read
    wide = np.random.default_rng(first).bytes(200 * n)
    return pa.table({"row_id": ids, "x": ids * 0.5, "wide": [wide[200 * k:200 * k + 200] for k in range(n)]})


def test_groups_holding_matches_a_brute_force_walk_of_the_rows() -> None:
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, size=12)
    offsets = np.sort(rng.choice(int(sizes.sum()), size=10, replace=False))
    used, at = groups_holding(sizes, offsets)
    owner = np.repeat(np.arange(len(sizes)), sizes)  # the group of every row
    assert used.tolist() == sorted(set(owner[offsets].tolist()))
    rows_read = np.flatnonzero(np.isin(owner, used))  # the rows of the groups read, in order
    assert rows_read[at].tolist() == offsets.tolist()
    with pytest.raises(ValueError, match=r"\[0, "):
        groups_holding(sizes, np.array([int(sizes.sum())]))


def test_a_few_rows_of_a_file_of_many_row_groups_read_only_their_groups(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    path = store.root / "d.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(_table(0, ROWS), path, row_group_size=60)  # 50 row groups
    meta = pq.read_metadata(path)
    offsets = np.array([7, 8, 1234, 2999])  # in groups 0, 20 and 49
    f = ObjectFile(store, "d.parquet")
    rows = read_positions(pq.ParquetFile(f, pre_buffer=True), ["row_id", "x"], offsets)
    assert rows.column("row_id").to_pylist() == offsets.tolist()
    assert rows.column("x").to_pylist() == (offsets * 0.5).tolist()
    chunks = sum(meta.row_group(g).column(c).total_compressed_size for g in (0, 20, 49) for c in (0, 1))
    size = path.stat().st_size
    # the column chunks asked for and the footer: not the other 47 groups nor the wide column
    assert chunks <= f.bytes_read <= chunks + (64 << 10) + meta.serialized_size
    assert f.bytes_read < 0.12 * size and f.requests <= 5


def test_the_same_seed_reads_the_same_rows_however_the_files_are_split_or_batched(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "objects")
    one = tmp_path / "one.parquet"
    pq.write_table(_table(0, ROWS), one, row_group_size=256)
    cuts = [0, 400, 1100, 1111, 2500, ROWS]
    files = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False)):
        files.append(str(tmp_path / f"part-{i}.parquet"))
        pq.write_table(_table(a, b - a), files[-1], row_group_size=100)
    split = [(f"p{i}", f, b - a, "") for i, (f, a, b) in enumerate(zip(files, cuts, cuts[1:], strict=False))]
    batched = [("b0", BATCH_SEPARATOR.join(files[:3]), cuts[3], ""),
               ("b1", BATCH_SEPARATOR.join(files[3:]), ROWS - cuts[3], "")]
    seen = []
    for layout in ([("one", str(one), ROWS, "")], split, batched):
        offsets = sample_positions([rows for _, _, rows, _ in layout], 500, seed=0)
        needed = np.arange(0, 500, 7)
        table, names = sample_features(store, layout, offsets, needed, ["x"], id_column="row_id")
        seen.append((table.column("x").to_pylist(), [names[k] for k in needed.tolist()]))
    assert seen[0] == seen[1] == seen[2]
    # a seeded simple random sample over the concatenated rows, drawn independently
    expected = np.sort(np.random.default_rng(0).choice(ROWS, 500, replace=False))[::7]
    assert seen[0][1] == [f"row_id {i}" for i in expected]


def test_a_batch_reads_only_the_members_up_to_its_last_sampled_row(tmp_path: Path) -> None:
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(_table(0, 10), first)
    pq.write_table(_table(10, 10), second)
    partition = BATCH_SEPARATOR.join([str(first), str(second)])
    second.write_bytes(b"not parquet")  # never opened: the sample ends in the first member
    assert read_partition_rows(None, partition, ["row_id"], np.array([2, 9])).column(
        "row_id").to_pylist() == [2, 9]
    with pytest.raises(ValueError, match="not in the configured bucket"):
        read_partition_rows(None, "s3://elsewhere/a.parquet", ["row_id"], np.array([0]))


def test_scores_and_features_from_s3_by_ranged_reads(s3_settings: S3Settings, tmp_path: Path) -> None:
    store = S3ObjectStore(s3_settings)
    path = tmp_path / "d.parquet"
    pq.write_table(_table(0, 1000), path, row_group_size=100)  # 10 row groups
    store.put_file("held/d.parquet", path, content_type="application/octet-stream")
    # the held-out file stands for its scores file too: both are read the same way
    layout = [("d", f"s3://{store.bucket}/held/d.parquet", 1000, "held/d.parquet")]
    offsets = [np.array([5, 950])]
    scores = sample_scores(store, layout, offsets, ["row_id"])
    features, names = sample_features(store, layout, offsets, np.array([1]), ["x"], id_column="row_id")
    assert scores.column("row_id").to_pylist() == [5, 950]
    assert features.column("x").to_pylist() == [475.0] and names == {1: "row_id 950"}
    f = ObjectFile(store, "held/d.parquet")
    assert read_positions(pq.ParquetFile(f, pre_buffer=True), ["row_id"], offsets[0]).num_rows == 2
    # the 64 KiB footer read and two small column chunks, not the 200 KB file
    assert f.bytes_read < (64 << 10) + 4096 < path.stat().st_size / 2
    assert open_object(store, "held/d.parquet").metadata.num_row_groups == 10


def test_a_wide_file_is_read_a_few_columns_at_a_time_into_the_same_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    table = pa.table({f"proba_{k}": rng.random(500) for k in range(150)})
    pq.write_table(table, tmp_path / "wide.parquet", row_group_size=200)
    offsets = np.array([0, 3, 199, 200, 450, 499])
    names = ["proba_149", *(f"proba_{k}" for k in range(140))]
    got = read_positions(pq.ParquetFile(tmp_path / "wide.parquet"), names, offsets)
    assert got.equals(table.select(names).take(pa.array(offsets)))


def test_rows_in_many_row_groups_are_read_a_few_groups_at_a_time_into_the_same_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(0, ROWS)
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=60)  # 50 row groups
    offsets = np.unique(np.random.default_rng(3).integers(0, ROWS, 400))  # in nearly every group
    pf = pq.ParquetFile(tmp_path / "d.parquet")
    reads: list[int] = []
    whole = pf.read_row_groups
    monkeypatch.setattr(pf, "read_row_groups",
                        lambda groups, **kw: reads.append(len(groups)) or whole(groups, **kw))
    monkeypatch.setattr(row_sample, "_ROWS_A_READ", 500)  # 8 groups of 60 rows a read
    got = read_positions(pf, ["x", "row_id"], offsets)
    assert got.equals(table.select(["x", "row_id"]).take(pa.array(offsets)))
    assert sum(reads) == len(np.unique(offsets // 60)) and max(reads) <= 8 and len(reads) > 1
