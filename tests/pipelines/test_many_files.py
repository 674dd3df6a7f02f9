"""Issue #22 item 9: directory datasets as Spark and Hive read them. ``_``- and ``.``-prefixed
files and folders (``_temporary/``, ``_SUCCESS``, ``.crc`` files) are not data, and a link
that points nowhere is named in a warning instead of being skipped in silence."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, safe_key_part
from modelgate.pipelines.evaluation import partitions

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


@pytest.mark.e2e  # two evaluations of the demo model
def test_many_small_files_are_scored_as_one_batch_with_the_numbers_of_one_file(
    settings_env: Settings, demo_builds: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelgate.cli.runs import run_evaluation_locally
    from modelgate.store.db import fetch_all

    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(tmp_path))  # no per-model overrides
    frame = pd.read_parquet(demo_builds["1"].heldout_path).iloc[:1000]
    one = tmp_path / "one.parquet"
    frame.to_parquet(one, index=False)
    many = tmp_path / "many"
    for i in range(200):
        (many / f"day={i // 50}").mkdir(parents=True, exist_ok=True)
        frame.iloc[5 * i:5 * i + 5].to_parquet(many / f"day={i // 50}" / f"part-{i:03d}.parquet", index=False)
    (many / "_SUCCESS").write_text("")
    whole = run_evaluation_locally(demo_builds["1"].archive_path, one, None).payload
    split = run_evaluation_locally(demo_builds["1"].archive_path, many, None).payload
    assert split["rows_scored"] == whole["rows_scored"] == 1000
    assert split["metrics"] == whole["metrics"] and split["fairness"] == whole["fairness"]
    ctx = Context.open(settings_env)
    (sha,), = fetch_all(ctx.db_url, "SELECT dataset_sha256 FROM evaluation_run WHERE evaluation_run_id = %s",
                        (split["evaluation_run_id"],))
    assert sha == partitions.local_dataset_fingerprint(many)  # a batch counts as its files
    pickles = ctx.store.list_keys(f"runs/evaluation/{safe_key_part(split['run_key'])}/partitions/")
    assert len(pickles) == 1  # one scoring partition for the 200 files


@pytest.mark.parametrize("spelling", ["./data", "./data/", "data", "file://./data", "data/./"])
def test_a_relative_dataset_names_each_file_by_its_path_under_the_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str,
) -> None:
    """Names identify partitions in the stored rows and the dataset's fingerprint: however the
    folder is spelt, each file is named by its own path under it (``./data`` gave every file
    the name ``parquet``)."""
    _write(tmp_path / "data", DATA)
    monkeypatch.chdir(tmp_path)
    found = [uri for uri, _ in partitions.list_sized(None, spelling)]
    assert [partitions.partition_name(spelling, uri) for uri in found] == DATA
