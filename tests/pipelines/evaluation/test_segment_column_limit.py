"""A segment column with more distinct values than a segment column may have (an id, a raw
measurement) is refused naming the column, before any slice is summarised: in the scoring
of a binary run, in a multiclass or regression run's segments, and through
``modelgate evaluate`` with the run recorded as failed and no segment row stored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from modelgate.evaluation.segment_policy import SegmentPolicy
from support.model_zoo import build

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.evaluation.segments_step import (
    MAX_SEGMENT_VALUES,
    SegmentColumnRefused,
    _encoded_columns,
    collect_batch,
)
from modelgate.pipelines.refusals import refusal_types
from modelgate.store.db import transaction


def _table(n_values: int) -> pa.Table:
    rows = n_values + 5
    return pa.table({"region": np.array(["north", "south"])[np.arange(rows) % 2],
                     "reading": (np.arange(rows) % n_values).astype(np.float64) + 0.5})


def test_a_column_one_value_over_the_limit_is_refused_naming_it() -> None:
    table = _table(MAX_SEGMENT_VALUES + 1)
    y = np.arange(table.num_rows) % 2
    section = SegmentPolicy(columns=("region", "reading"))
    with pytest.raises(SegmentColumnRefused, match=r"segment column 'reading' has 1,001 distinct "
                       r"values, more than the 1,000"):
        collect_batch(table, y, np.full(table.num_rows, 0.5), 0.5, section)
    assert isinstance(SegmentColumnRefused("x"), refusal_types())  # the DAG does not retry it


def test_a_column_at_the_limit_is_a_segment_column() -> None:
    encoded = _encoded_columns(_table(MAX_SEGMENT_VALUES), ["region", "reading"])
    assert len(encoded["region"][0]) == 2 and len(encoded["reading"][0]) == MAX_SEGMENT_VALUES


@pytest.mark.e2e
def test_evaluate_refuses_an_id_like_segment_column_and_stores_no_segment(
        settings_env: Settings, tmp_path: Path) -> None:
    zoo = build("sklearn-no-zipmap")
    # the zoo's rows repeated to one more row than a segment column may have values
    frame = zoo.frame.loc[np.arange(MAX_SEGMENT_VALUES + 1) % len(zoo.frame)].reset_index(drop=True)
    frame["reading"] = np.arange(len(frame)) * 0.25
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    frame.to_parquet(data)
    with pytest.raises(SegmentColumnRefused, match="segment column 'reading'"):
        run_evaluation_locally(archive, data, None, segments=("reading",))
    with transaction(settings_env.database_url) as cur:
        cur.execute("SELECT status FROM analytics.evaluation_runs")
        assert cur.fetchall() == [("failed",)]
        cur.execute("SELECT count(*) FROM analytics.segment_metrics")
        assert cur.fetchone() == (0,)
