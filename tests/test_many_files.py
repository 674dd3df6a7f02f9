"""Issue #22 item 9: directory datasets as Spark and Hive read them. ``_``- and ``.``-prefixed
files and folders (``_temporary/``, ``_SUCCESS``, ``.crc`` files) are not data, and a link
that points nowhere is named in a warning instead of being skipped in silence."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pandas as pd
import pytest

from modelgate.config import Settings
from modelgate.pipelines import partitions
from modelgate.pipelines.context import Context

DATA = ["day=1/part-0.parquet", "day=1/part-1.parquet", "day=2/part-0.parquet"]
HIDDEN = ["_SUCCESS", "_temporary/0/part-9.parquet", ".part-0.parquet.crc", ".hidden.parquet",
          "day=2/_part-tmp.parquet", "day=2/.inprogress/part-3.parquet", "_common_metadata"]


def _write(root: Path, names: list[str]) -> None:
    frame = pd.DataFrame({"x": [1.0]})
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(root / name) if name.endswith(".parquet") else (root / name).write_text("")


def test_local_listing_skips_hidden_files_and_names_dangling_links(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "data"
    _write(root, DATA + HIDDEN)
    os.symlink(root / "day=1" / "part-0.parquet", root / "day=3.parquet")  # a live link is data
    os.symlink(tmp_path / "gone.parquet", root / "day=2" / "moved.parquet")
    with caplog.at_level(logging.WARNING):
        found = partitions.list_partitions_local(root)
    assert [Path(p).relative_to(root).as_posix() for p in found] == [*DATA[:2], *DATA[2:], "day=3.parquet"]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "1 link(s) point to nothing" in warning and "day=2/moved.parquet" in warning
    assert partitions.local_rows(found) == 4


def test_s3_listing_skips_hidden_keys(settings: Settings) -> None:
    ctx = Context.open(settings)
    for name in DATA + HIDDEN:
        ctx.store.put_bytes(f"held/{name}", b"x", content_type="application/octet-stream")
    bucket = settings.s3.bucket  # type: ignore[union-attr]
    found = partitions.list_partitions(ctx, f"s3://{bucket}/held")
    assert found == [f"s3://{bucket}/held/{name}" for name in DATA]
