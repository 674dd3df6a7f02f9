"""One listing of a dataset: every command reads the same files of one awkward folder.

The folder is what a Spark job leaves behind: data files (one nested under ``day=1/``),
``_SUCCESS``, a ``.crc`` file, an unfinished ``_temporary/part-0.parquet`` (not parquet at
all: a command that reads it fails) and a link that points nowhere. ``modelgate evaluate``
(``list_partitions``, ``fetch_dataset``), ``modelgate monitor set`` (``check_dataset``,
``check_partitioned``) and a drift run (``partition_files``) are each given that folder,
locally and as an ``s3://`` prefix; the expected files are named by hand.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, fetch_dataset
from modelgate.pipelines.drift.monitor_checks import check_dataset, check_partitioned
from modelgate.pipelines.drift.partitions import partition_files
from modelgate.pipelines.evaluation.partitions import list_partitions

DAY = dt.date(2026, 11, 28)
DATA = ["day=1/part-1.parquet", "part-0.parquet"]  # sorted as strings
NOT_DATA = ["_SUCCESS", "_temporary/part-0.parquet", ".part-0.parquet.crc",
            "day=1/.part-1.parquet.crc", "day=1/_SUCCESS"]


def _awkward(folder: Path) -> None:
    for i, name in enumerate(DATA):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"x": [float(i), float(i) + 0.5], "id": [2 * i, 2 * i + 1]}),
                       folder / name)
    for name in NOT_DATA:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"not parquet: half written")


@pytest.fixture()
def ctx(settings: Settings) -> Context:
    return Context.open(settings)


def _where(ctx: Context, tmp_path: Path, where: str) -> tuple[str, str]:
    """The awkward folder as a dataset and as the ``dt=`` partition of a live root."""
    local = tmp_path / "src"
    _awkward(local / "dataset")
    _awkward(local / "live" / f"dt={DAY.isoformat()}")
    if where == "local":
        (local / "dataset" / "gone.parquet").symlink_to(tmp_path / "nowhere.parquet")
        (local / "live" / f"dt={DAY.isoformat()}" / "gone.parquet").symlink_to(tmp_path / "nowhere")
        return str(local / "dataset"), str(local / "live")
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        ctx.store.put_file(f"awkward/{path.relative_to(local).as_posix()}", path,
                           content_type="application/octet-stream")
    bucket = ctx.settings.s3.bucket if ctx.settings.s3 else ""
    return f"s3://{bucket}/awkward/dataset", f"s3://{bucket}/awkward/live"


@pytest.mark.parametrize("where", ["local", "s3"])
def test_every_command_reads_the_same_files(ctx: Context, tmp_path: Path, where: str,
                                            caplog: pytest.LogCaptureFixture) -> None:
    dataset, live = _where(ctx, tmp_path, where)
    caplog.set_level(logging.WARNING)

    listed = list_partitions(ctx, dataset)  # modelgate evaluate --data, the evaluation DAG
    assert [u[len(dataset) + 1:] for u in listed] == DATA
    if where == "local":  # the dangling link is named, not skipped in silence
        assert "gone.parquet" in caplog.text

    rows = pq.read_table(fetch_dataset(ctx, dataset, tmp_path / "fetched"))  # drift reference
    assert rows.column("id").to_pylist() == [0, 1, 2, 3]  # day=1/part-1, then part-0

    check_dataset(ctx, "--reference", dataset, ["x", "id"])  # monitor set --reference
    assert check_partitioned(ctx, "--live", live, ["x", "id"]) is None  # monitor set --live

    files = partition_files(ctx, live, DAY, tmp_path / "work")  # a drift run's live partition
    tables = [pq.read_table(f) for f in files]
    assert [t.column("id").to_pylist() for t in tables] == [[0, 1], [2, 3]]


def test_monitor_set_refuses_a_folder_of_only_hidden_files(ctx: Context, tmp_path: Path) -> None:
    folder = tmp_path / "only-temporary"
    (folder / "_temporary").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1.0]}), folder / "_temporary" / "part-0.parquet")
    from modelgate.pipelines.drift.monitor_checks import MonitorConfigError

    with pytest.raises(MonitorConfigError, match="holds no .parquet file"):
        check_dataset(ctx, "--reference", str(folder), ["x"])
    with pytest.raises(FileNotFoundError, match="holds no .parquet file"):
        list_partitions(ctx, str(folder))
