"""A segment column that a held-out file lacks is refused by the ``prepare`` step (the DAG's
``verify``) before anything is scored, naming the column, the file and that file's columns of the
closest names: a misspelt ``--segments`` column through ``modelgate evaluate`` and the DAG (the run
recorded failed, attempt 1, nothing scored), a column named only in a policy's pairs, a column
missing from only the last file of a directory or an ``s3://`` prefix. Only footers are read for
it; a column every file has passes. The expected messages are written out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.model_zoo import build
from support.parquet_reads import ParquetReads
from support.sql_rows import sql_rows

from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation import prepare_step, score_step
from modelgate.pipelines.evaluation.segment_values import (
    SegmentColumnMissing,
    missing_columns,
    refuse_segment_columns,
)
from modelgate.pipelines.refusals import refusal_types

PARQUET = "application/vnd.apache.parquet"


def _write(path: Path, region: str = "region", rows: int = 40) -> Path:
    """``rows`` rows in row groups of 10: a segment column named ``region`` (or not) and an amount."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({region: np.array(["north", "south"])[np.arange(rows) % 2],
                             "amount": np.arange(rows, dtype=np.float64)}), path, row_group_size=10)
    return path


# --- the check: no database -----------------------------------------------------------------


@pytest.mark.parametrize(("columns", "names", "expected"), [
    (["region", "amount"], ["regoin"],
     "segment column 'regoin' is not in held-out file f.parquet (did you mean 'region'?)"),
    (["region", "Region", "regions"], ["regoin"],
     "segment column 'regoin' is not in held-out file f.parquet (did you mean 'region', 'regions' or "
     "'Region'?)"),
    (["a", "b"], ["region", "zone"],
     "segment column 'region' is not in held-out file f.parquet (none of its 2 columns has a similar "
     "name: 'a', 'b'); nor 'zone' (none of its 2 columns has a similar name: 'a', 'b')"),
    ([f"c{i:02d}" for i in range(12)], ["region"],
     "segment column 'region' is not in held-out file f.parquet (none of its 12 columns has a similar "
     "name: 'c00', 'c01', 'c02', 'c03', 'c04', 'c05', 'c06', 'c07', 'c08', 'c09' and 2 more)"),
    (["region", "amount"], ["amount", "region"], None),
], ids=["misspelt", "several-close", "none-close-two-missing", "none-close-many-columns", "present"])
def test_the_refusal_names_the_column_the_file_and_its_closest_columns(
        columns: list[str], names: list[str], expected: str | None) -> None:
    assert missing_columns(columns, names, "f.parquet") == expected


def test_a_column_missing_from_only_the_last_file_of_a_directory_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("part-0.parquet", "part-1.parquet"):
        _write(tmp_path / "held" / name)
    _write(tmp_path / "held" / "part-2.parquet", region="region_name")
    reads = ParquetReads(monkeypatch)
    with pytest.raises(SegmentColumnMissing) as caught:
        refuse_segment_columns(None, str(tmp_path / "held") + "/", ["region"], open_file=reads.open)
    assert str(caught.value) == ("segment column 'region' is not in held-out file part-2.parquet "
                                 "(did you mean 'region_name'?)")
    assert isinstance(caught.value, refusal_types())  # final: the DAG does not retry it
    # one pass: the files before it counted (4 row groups each), the last one's footer alone read
    assert reads.opened == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert reads.groups == [(f"part-{f}.parquet", g) for f in (0, 1) for g in range(4)]


def test_a_file_without_the_column_is_refused_from_its_footer_named_within_the_dataset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "held" / "part-0.parquet")
    _write(tmp_path / "held" / "day=2" / "part-1.parquet", region="zone")  # listed first: sorted paths
    reads = ParquetReads(monkeypatch)
    with pytest.raises(SegmentColumnMissing, match=r"^segment column 'region' is not in held-out file "
                       r"day=2/part-1\.parquet \(none of its 2 columns has a similar name: 'zone', "
                       r"'amount'\)$"):
        refuse_segment_columns(None, f"file://{tmp_path}/./held", ["region"], open_file=reads.open)
    assert (reads.opened, reads.groups) == (["part-1.parquet"], [])


def test_a_column_every_file_has_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("part-0.parquet", "part-1.parquet", "part-2.parquet"):
        _write(tmp_path / name)
    reads = ParquetReads(monkeypatch)
    counted = refuse_segment_columns(None, str(tmp_path), ["region"], open_file=reads.open)
    assert (counted.column, counted.row_groups) == (None, 12)  # 3 files of 4 row groups, each once
    assert reads.opened == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]


def test_a_column_missing_from_only_the_last_s3_file_is_refused(settings: Settings, tmp_path: Path) -> None:
    ctx = Context.open(settings)
    assert settings.s3 is not None
    for i in range(3):
        local = _write(tmp_path / f"part-{i}.parquet", region="regoin" if i == 2 else "region")
        ctx.store.put_file(f"held/part-{i}.parquet", local, content_type=PARQUET)
    dataset = f"s3://{settings.s3.bucket}/held/"
    with pytest.raises(SegmentColumnMissing, match=r"^segment column 'region' is not in held-out file "
                       r"part-2\.parquet \(did you mean 'regoin'\?\)$"):
        refuse_segment_columns(ctx.store, dataset, ["region"])
    ctx.store.delete_keys(["held/part-2.parquet"])
    assert refuse_segment_columns(ctx.store, dataset, ["region"]).row_groups == 8


# --- the run: PostgreSQL and S3 ---------------------------------------------------------------


@pytest.fixture()
def zoo_run(settings_env: Settings, tmp_path: Path) -> dict[str, Any]:
    """The zoo's model and its held-out rows with a ``region`` column, one file."""
    zoo = build("sklearn-no-zipmap")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    frame = zoo.frame.copy()
    frame["region"] = np.array(["north", "south"])[np.arange(len(frame)) % 2]
    data = tmp_path / "heldout.parquet"
    frame.to_parquet(data)
    return {"archive": archive, "data": data, "ctx": Context.open(settings_env)}


def _nothing_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    def scored(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a partition was scored")

    monkeypatch.setattr(score_step, "score_partition", scored)


def _assert_refused_run_left_nothing_scored(ctx: Context, reason: str) -> None:
    (status, failure, attempt), = sql_rows(ctx.db_url, "SELECT status, failure_reason, attempt "
                                                       "FROM analytics.evaluation_runs")
    assert (status, failure, attempt) == ("failed", reason, 1)
    keys = [k for k, _ in ctx.store.list_sizes("")]
    assert not [k for k in keys if "/partitions/" in k or "/scores/" in k], keys


MISSPELT = ("SegmentColumnMissing: segment column 'regoin' is not in held-out file heldout.parquet "
            "(did you mean 'region'?)")


def test_evaluate_refuses_a_misspelt_segment_column_at_prepare_and_scores_nothing(
        zoo_run: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from modelgate.cli import main

    _nothing_scored(monkeypatch)
    code = main(["evaluate", "--model", str(zoo_run["archive"]), "--data", str(zoo_run["data"]),
                 "--segments", "region,regoin"])
    assert code == 1 and MISSPELT in capsys.readouterr().err
    _assert_refused_run_left_nothing_scored(zoo_run["ctx"], MISSPELT)


def test_a_column_named_only_in_the_policy_pairs_is_refused_and_a_present_one_passes(
        zoo_run: dict[str, Any], tmp_path: Path) -> None:
    ctx = zoo_run["ctx"]
    row, _ = register_archive(ctx, zoo_run["archive"])
    run = {"model_name": row.model_name, "version": row.version, "dataset_uri": str(zoo_run["data"])}
    policy = tmp_path / "policy.yaml"
    policy.write_text("segments: {columns: [region], pairs: [[region, devcie]]}\n")
    with pytest.raises(SegmentColumnMissing, match=r"^segment column 'devcie' is not in held-out file "
                       r"heldout\.parquet \(none of its \d+ columns has a similar name: 'x1', "):
        prepare_step.prepare(ctx, run_key="k", policy_path=str(policy), **run)
    policy.write_text("segments: {columns: [region], pairs: [[region, group]]}\n")
    ref = prepare_step.prepare(ctx, run_key="k", policy_path=str(policy), **run)
    failure = ("SegmentColumnMissing: segment column 'devcie' is not in held-out file heldout.parquet "
               "(none of its")
    rows = sql_rows(ctx.db_url, "SELECT evaluation_run_id, attempt, status, failure_reason "
                                "FROM analytics.evaluation_attempts ORDER BY attempt")
    assert [r[:3] for r in rows] == [(ref.evaluation_run_id, 1, "failed"),
                                     (ref.evaluation_run_id, 2, "running")]
    assert rows[0][3].startswith(failure)


@pytest.mark.e2e  # a DAG run
def test_the_dag_refuses_a_misspelt_segment_column_at_verify_once_and_scores_nothing(
        zoo_run: dict[str, Any], airflow_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.airflow_runner import run_dag

    _nothing_scored(monkeypatch)  # dag.test() runs the tasks in this process
    row, _ = register_archive(zoo_run["ctx"], zoo_run["archive"])
    dag_run = run_dag("model_evaluation", conf={
        "model_name": row.model_name, "model_version": row.version,
        "dataset": str(zoo_run["data"]), "segments": "regoin"})
    assert str(dag_run.state) == "failed"
    # one attempt: the refusal was final, verify was not tried again
    _assert_refused_run_left_nothing_scored(zoo_run["ctx"], MISSPELT)
