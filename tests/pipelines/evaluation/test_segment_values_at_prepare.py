"""A segment column with more distinct values than a segment column may have is refused by the
``prepare`` step (the DAG's ``verify``), before anything is scored: counted from that column
alone, a row group at a time, stopping at the first row group past the limit; exactly the
limit passes; a column past it only in its last file (an ``s3://`` prefix) is refused too;
``modelgate evaluate`` and the DAG record the run failed with the reason and score nothing.

The counts are built by hand (values 0..n-1, a null is one value more, as the scoring step's
own check counts it), never by the code under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
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
from modelgate.pipelines.evaluation.segment_values import count_values, refuse_segment_columns
from modelgate.pipelines.evaluation.segments_step import (
    MAX_SEGMENT_VALUES,
    SegmentColumnRefused,
    _encoded_columns,
)
from modelgate.pipelines.refusals import refusal_types

PARQUET = "application/vnd.apache.parquet"
TEXT = "more than 1,000 distinct values"


def _write(path: Path, values: Sequence[Any] | np.ndarray, *, rows_per_group: int) -> Path:
    region = np.array(["north", "south"])[np.arange(len(values)) % 2]
    pq.write_table(pa.table({"region": region, "reading": pa.array(values, type=pa.float64())}),
                   path, row_group_size=rows_per_group)
    return path


# --- counting: no database ------------------------------------------------------------------


def test_counting_stops_at_the_first_row_group_past_the_limit_and_opens_no_later_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 600 new values per row group of 600 rows: 600 after the first group, 1,200 after the second
    first = _write(tmp_path / "a.parquet", np.arange(2400) + 0.5, rows_per_group=600)
    _write(tmp_path / "b.parquet", np.arange(600) + 0.5, rows_per_group=600)
    reads = ParquetReads(monkeypatch)
    counted = count_values((reads.open(str(p)) for p in (first, tmp_path / "b.parquet")),
                           ["region", "reading"])
    assert (counted.column, counted.seen, counted.row_groups) == ("reading", 1200, 2)
    assert reads.opened == ["a.parquet"] and reads.groups == [("a.parquet", 0), ("a.parquet", 1)]

    reads.opened.clear()
    reads.groups.clear()
    with pytest.raises(SegmentColumnRefused, match=rf"segment column 'reading' has {TEXT} "
                       r"\(1,200 seen when counting stopped\), more than the 1,000 a segment "
                       r"column may have: segment by a column of categories"):
        refuse_segment_columns(None, str(tmp_path), ["region", "reading"], open_file=reads.open)
    # the directory's files in order, the second never opened
    assert reads.opened == ["a.parquet"] and reads.groups == [("a.parquet", 0), ("a.parquet", 1)]
    assert isinstance(SegmentColumnRefused("x"), refusal_types())  # final: the DAG does not retry it


@pytest.mark.parametrize(("values", "refused"), [
    (list(np.arange(MAX_SEGMENT_VALUES) + 0.5), False),
    ([*(np.arange(MAX_SEGMENT_VALUES - 1) + 0.5), None, None], False),
    ([*(np.arange(MAX_SEGMENT_VALUES) + 0.5), None], True),
    ([*(np.arange(MAX_SEGMENT_VALUES) + 0.5), float("nan")], True),
    ([*(np.arange(MAX_SEGMENT_VALUES + 1) + 0.5)], True),
], ids=["1000-values", "999-values-and-nulls", "1000-values-and-a-null", "1000-values-and-a-nan",
        "1001-values"])
def test_exactly_the_limit_passes_and_a_missing_value_is_one_more_as_scoring_counts_it(
        tmp_path: Path, values: list[Any], refused: bool) -> None:
    path = _write(tmp_path / "d.parquet", values * 3, rows_per_group=700)  # values span groups
    counted = count_values([pq.ParquetFile(path)], ["region", "reading"])
    assert counted.column == ("reading" if refused else None)
    # the scoring step's check, which stays as a guard, draws the line at the same place
    table = pq.read_table(path)
    if refused:
        with pytest.raises(SegmentColumnRefused):
            _encoded_columns(table, ["region", "reading"])
    else:
        assert len(_encoded_columns(table, ["region", "reading"])["reading"][0]) <= MAX_SEGMENT_VALUES


@pytest.mark.parametrize(("values", "expected"), [
    ([*(np.arange(MAX_SEGMENT_VALUES - 1) + 0.5), None, float("nan")], (None, 0)),
    ([*(np.arange(MAX_SEGMENT_VALUES) + 0.5), None, float("nan")], ("reading", 1001)),
    ([*(np.arange(5000) + 0.5), None, float("nan")], ("reading", 5001)),
], ids=["999-values-null-and-nan", "1000-values-null-and-nan", "5000-values-null-and-nan"])
def test_one_row_group_past_the_limit_is_counted_whole_null_and_nan_as_one_value(
        tmp_path: Path, values: list[Any], expected: tuple[str | None, int]) -> None:
    path = _write(tmp_path / "d.parquet", values, rows_per_group=len(values))
    counted = count_values([pq.ParquetFile(path)], ["reading"])
    assert (counted.column, counted.seen, counted.row_groups) == (*expected, 1)


def test_a_column_past_the_limit_only_in_its_last_s3_file_is_refused(
        settings: Settings, tmp_path: Path) -> None:
    ctx = Context.open(settings)
    assert settings.s3 is not None
    # three files of the same 600 values, then one whose 401 new values make 1,001
    chunks = [np.arange(600) + 0.5] * 3 + [np.arange(600, 600 + MAX_SEGMENT_VALUES + 1 - 600) + 0.5]
    for i, chunk in enumerate(chunks):
        local = _write(tmp_path / f"part-{i}.parquet", chunk, rows_per_group=200)
        ctx.store.put_file(f"held/part-{i}.parquet", local, content_type=PARQUET)
    dataset = f"s3://{settings.s3.bucket}/held/"
    with pytest.raises(SegmentColumnRefused, match=rf"'reading' has {TEXT} \(1,001 seen"):
        refuse_segment_columns(ctx.store, dataset, ["reading"])
    ctx.store.delete_keys([f"held/part-{len(chunks) - 1}.parquet"])
    counted = refuse_segment_columns(ctx.store, dataset, ["reading"])
    assert (counted.column, counted.row_groups) == (None, 9)  # every row group of three files, once


# --- the run: PostgreSQL and S3 ---------------------------------------------------------------


@pytest.fixture()
def zoo_run(settings_env: Settings, tmp_path: Path) -> dict[str, Any]:
    """The zoo's model registered, and held-out data with a ``reading`` column of 1,001 values
    (``many.parquet``) and of exactly 1,000 (``limit.parquet``)."""
    zoo = build("sklearn-no-zipmap")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    frame = zoo.frame.loc[np.arange(2 * MAX_SEGMENT_VALUES) % len(zoo.frame)].reset_index(drop=True)
    data = {}
    for name, n_values in (("many", MAX_SEGMENT_VALUES + 1), ("limit", MAX_SEGMENT_VALUES)):
        frame["reading"] = (np.arange(len(frame)) % n_values) * 0.25
        data[name] = tmp_path / f"{name}.parquet"
        frame.to_parquet(data[name], row_group_size=500)
    return {"archive": archive, "data": data, "ctx": Context.open(settings_env), "zoo": zoo}


def _nothing_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    def scored(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a partition was scored")

    monkeypatch.setattr(score_step, "score_partition", scored)


def _assert_refused_run_left_nothing_scored(ctx: Context) -> None:
    (status, reason, attempt), = sql_rows(ctx.db_url, "SELECT status, failure_reason, attempt "
                                                      "FROM analytics.evaluation_runs")
    assert (status, attempt) == ("failed", 1)
    assert reason.startswith("SegmentColumnRefused: segment column 'reading' has more than 1,000")
    keys = [k for k, _ in ctx.store.list_sizes("")]
    assert not [k for k in keys if "/partitions/" in k or "/scores/" in k], keys
    assert sql_rows(ctx.db_url, "SELECT count(*) FROM analytics.segment_metrics") == [(0,)]


def test_evaluate_refuses_the_column_at_prepare_and_scores_nothing(
        zoo_run: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.cli.runs import run_evaluation_locally

    _nothing_scored(monkeypatch)
    with pytest.raises(SegmentColumnRefused, match=f"segment column 'reading' has {TEXT}"):
        run_evaluation_locally(zoo_run["archive"], zoo_run["data"]["many"], None,
                               segments=("reading",))
    _assert_refused_run_left_nothing_scored(zoo_run["ctx"])


def test_a_column_of_exactly_the_limit_passes_prepare(zoo_run: dict[str, Any]) -> None:
    ctx = zoo_run["ctx"]
    row, _ = register_archive(ctx, zoo_run["archive"])
    ref = prepare_step.prepare(ctx, model_name=row.model_name, version=row.version,
                               dataset_uri=str(zoo_run["data"]["limit"]), run_key="k",
                               segments=("reading",))
    assert sql_rows(ctx.db_url, "SELECT evaluation_run_id, status FROM analytics.evaluation_runs") \
        == [(ref.evaluation_run_id, "running")]


@pytest.mark.e2e  # a DAG run
def test_the_dag_refuses_the_column_at_verify_once_and_scores_nothing(
        zoo_run: dict[str, Any], airflow_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.airflow_runner import run_dag

    _nothing_scored(monkeypatch)  # dag.test() runs the tasks in this process
    row, _ = register_archive(zoo_run["ctx"], zoo_run["archive"])
    dag_run = run_dag("model_evaluation", conf={
        "model_name": row.model_name, "model_version": row.version,
        "dataset": str(zoo_run["data"]["many"]), "segments": "reading"})
    assert str(dag_run.state) == "failed"
    # one attempt: the refusal was final, verify was not tried again
    _assert_refused_run_left_nothing_scored(zoo_run["ctx"])


def test_a_pandas_categorical_column_is_counted_by_its_values(tmp_path: Path) -> None:
    path = tmp_path / "c.parquet"
    pd.DataFrame({"g": pd.Categorical(["x", "y", "x", None])}).to_parquet(path)
    assert count_values([pq.ParquetFile(path)], ["g"], limit=2).column == "g"  # x, y and missing
    assert count_values([pq.ParquetFile(path)], ["g"], limit=3).column is None
