"""Held-out files that scoring would refuse for what their footers say are refused by the
``prepare`` step (the DAG's ``verify``), before anything is scored: a column the model needs
missing (label, feature, sensitive feature), a numeric feature held as text, a file of no rows,
a file that is not parquet, a dataset of no parquet file, an ``s3://`` dataset whose metrics
would need more memory than the limit. Each refusal is final (a refusal type, so Airflow does
not retry it) and recorded: the run is ``failed`` at attempt 1 with the reason.

Rows that only the data can show (a missing label) are refused by the scoring step, final too.

The expected messages are written out by hand; the files are written by pandas, never by the
code under test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from support.model_zoo import build
from support.sql_rows import sql_rows

from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation import prepare_step, score_step
from modelgate.pipelines.evaluation.held_out_files import HeldOutRefused
from modelgate.pipelines.evaluation.model_tasks import EvaluationTooLarge
from modelgate.pipelines.refusals import refusal_types

PARQUET = "application/vnd.apache.parquet"
MODEL = "zoo-binary_classification"


@pytest.fixture()
def zoo(settings_env: Settings, tmp_path: Path) -> dict[str, Any]:
    """The zoo's binary model (numeric x1..x3 as one tensor, label y_binary, sensitive group)."""
    model = build("sklearn-no-zipmap")
    archive = package(*model.write(tmp_path / "src"), tmp_path / "out")
    return {"archive": archive, "frame": model.frame, "ctx": Context.open(settings_env)}


def _nothing_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    def scored(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a partition was scored")

    monkeypatch.setattr(score_step, "score_partition", scored)


def _assert_refused_once(ctx: Context, reason_starts: str) -> None:
    """One run, failed at attempt 1 with the reason; no partition or scores stored."""
    (status, reason, attempt), = sql_rows(ctx.db_url, "SELECT status, failure_reason, attempt "
                                                      "FROM analytics.evaluation_runs")
    assert (status, attempt) == ("failed", 1)
    assert reason.startswith(reason_starts), reason
    keys = [k for k, _ in ctx.store.list_sizes("")]
    assert not [k for k in keys if "/partitions/" in k or "/scores/" in k], keys


def _drop(column: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    return lambda frame: frame.drop(columns=[column])


CASES: list[tuple[Callable[[pd.DataFrame], pd.DataFrame], str]] = [
    (_drop("y_binary"), f"has no column 'y_binary' (the label of model '{MODEL}')"),
    (_drop("x2"), f"has no column 'x2' (a numeric feature of the model '{MODEL}')"),
    (_drop("group"), f"has no column 'group' (a sensitive feature of model '{MODEL}')"),
    (lambda frame: frame.assign(x1=frame["x1"].astype(str)),
     f"column 'x1' (a numeric feature of the model '{MODEL}') holds large_string; expected integers "
     "or floats"),
    (lambda frame: frame.assign(x3=frame["x3"] > 0),
     f"column 'x3' (a numeric feature of the model '{MODEL}') holds bool; expected integers "
     "or floats"),
    (lambda frame: frame.iloc[:0], "has no rows; held-out data must hold rows to score"),
]


@pytest.mark.parametrize(("mutate", "expected"), CASES,
                         ids=["no-label", "no-feature", "no-sensitive-feature", "feature-as-text",
                              "feature-as-bool", "no-rows"])
def test_evaluate_refuses_the_file_at_prepare_and_scores_nothing(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        mutate: Callable[[pd.DataFrame], pd.DataFrame], expected: str) -> None:
    from modelgate.cli.runs import run_evaluation_locally

    data = tmp_path / "held out.parquet"
    mutate(zoo["frame"]).to_parquet(data, index=False)
    _nothing_scored(monkeypatch)
    with pytest.raises(HeldOutRefused) as caught:
        run_evaluation_locally(zoo["archive"], data, None)
    assert str(caught.value) == f"held-out file {str(data.resolve())!r} {expected}"
    _assert_refused_once(zoo["ctx"], f"HeldOutRefused: held-out file {str(data.resolve())!r} ")


def test_a_file_that_is_not_parquet_is_refused_at_prepare(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.cli.runs import run_evaluation_locally

    data = tmp_path / "held"
    data.mkdir()
    zoo["frame"].to_parquet(data / "a.parquet", index=False)
    (data / "b.parquet").write_bytes(b"PAR1 not parquet")
    _nothing_scored(monkeypatch)
    bad = str((data / "b.parquet").resolve())
    with pytest.raises(HeldOutRefused, match=f"cannot read parquet file {bad!r}: "):
        run_evaluation_locally(zoo["archive"], data, None)
    _assert_refused_once(zoo["ctx"], f"HeldOutRefused: cannot read parquet file {bad!r}")


def test_the_first_bad_s3_file_in_order_is_named(
        zoo: dict[str, Any], settings_env: Settings, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.cli.runs import run_evaluation_locally

    ctx = zoo["ctx"]
    assert settings_env.s3 is not None
    # part-1 lacks the label, part-2 is not parquet: footers are read side by side, part-1 named
    for i, frame in enumerate([zoo["frame"], zoo["frame"].drop(columns=["y_binary"]), zoo["frame"]]):
        frame.to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    (tmp_path / "part-2.parquet").write_bytes(b"PAR1 not parquet")
    for i in range(3):
        ctx.store.put_file(f"held/part-{i}.parquet", tmp_path / f"part-{i}.parquet", content_type=PARQUET)
    bucket = settings_env.s3.bucket
    _nothing_scored(monkeypatch)
    with pytest.raises(HeldOutRefused) as caught:
        run_evaluation_locally(zoo["archive"], f"s3://{bucket}/held/", None)
    assert str(caught.value) == (f"held-out file 's3://{bucket}/held/part-1.parquet' has no column "
                                 f"'y_binary' (the label of model '{MODEL}')")
    _assert_refused_once(ctx, "HeldOutRefused: held-out file 's3://")


def test_a_folder_without_parquet_is_refused_at_prepare(
        zoo: dict[str, Any], tmp_path: Path) -> None:
    # the CLI hashes the data before it runs, so this is the DAG's path: prepare itself
    ctx = zoo["ctx"]
    row, _ = register_archive(ctx, zoo["archive"])
    empty = tmp_path / "nothing here"
    empty.mkdir()
    with pytest.raises(HeldOutRefused, match=f"held-out dataset {str(empty)!r} holds no .parquet file"):
        prepare_step.prepare(ctx, model_name=row.model_name, version=row.version,
                             dataset_uri=str(empty), run_key="k")
    _assert_refused_once(ctx, "HeldOutRefused: held-out dataset ")


def test_an_s3_dataset_too_large_for_the_memory_limit_is_refused_at_prepare(
        settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.cli.runs import run_evaluation_locally

    model = build("sklearn-regression")
    archive = package(*model.write(tmp_path / "src"), tmp_path / "out")
    ctx = Context.open(settings_env)
    assert settings_env.s3 is not None
    # a regression model's metrics hold 8 x 15 bytes a row: 10,000 rows are 1.14 MiB, over 1 MiB
    frame = model.frame.loc[np.arange(10_000) % len(model.frame)].reset_index(drop=True)
    for i, part in enumerate((frame.iloc[:4000], frame.iloc[4000:])):
        part.to_parquet(tmp_path / f"p{i}.parquet", index=False)
        ctx.store.put_file(f"big/p{i}.parquet", tmp_path / f"p{i}.parquet", content_type=PARQUET)
    monkeypatch.setenv("MODELGATE_EVAL_MEMORY_LIMIT_MB", "1")
    _nothing_scored(monkeypatch)
    with pytest.raises(EvaluationTooLarge, match="the metrics of the regression model "
                       r"'zoo-regression' on 10,000 rows need about 1 MiB, over "
                       "MODELGATE_EVAL_MEMORY_LIMIT_MB=1"):
        run_evaluation_locally(archive, f"s3://{settings_env.s3.bucket}/big/", None)
    _assert_refused_once(ctx, "EvaluationTooLarge: the metrics of the regression model")


def test_missing_values_the_footers_count_are_refused_at_prepare(
        zoo: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing label, or a missing value in a feature that allows none, counted by the row
    groups' statistics: refused before anything is scored, naming the file and the column."""
    from modelgate.cli.runs import run_evaluation_locally

    _nothing_scored(monkeypatch)
    frame = zoo["frame"].copy()
    frame.loc[[3, 9], "y_binary"] = None
    frame.to_parquet(tmp_path / "unlabelled.parquet", index=False)
    data = str(tmp_path / "unlabelled.parquet")
    with pytest.raises(HeldOutRefused, match=r"^held-out file '.*unlabelled.parquet': label "
                                             r"column 'y_binary' has 2 missing value\(s\); "
                                             r"held-out rows must all be labelled$"):
        run_evaluation_locally(zoo["archive"], data, None)
    frame = zoo["frame"].copy()
    frame.loc[[5], "x2"] = None
    frame.to_parquet(tmp_path / "gap.parquet", index=False)
    with pytest.raises(HeldOutRefused, match=r"column 'x2' \(a numeric feature of the model .*\) "
                                             r"has 1 missing value\(s\); .*\"allow_missing\": true"):
        run_evaluation_locally(zoo["archive"], tmp_path / "gap.parquet", None)


def test_a_missing_label_value_without_footer_statistics_is_refused_by_scoring_as_final(
        zoo: dict[str, Any], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from modelgate.cli.runs import run_evaluation_locally

    frame = zoo["frame"].copy()
    frame.loc[[3, 9], "y_binary"] = None
    data = tmp_path / "unlabelled.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), data, write_statistics=False)
    with pytest.raises(HeldOutRefused, match="label column 'y_binary' has 2 missing value") as caught:
        run_evaluation_locally(zoo["archive"], data, None)
    assert isinstance(caught.value, refusal_types())  # the DAG's score task does not retry it
    (status, reason, attempt), = sql_rows(zoo["ctx"].db_url, "SELECT status, failure_reason, "
                                                             "attempt FROM analytics.evaluation_runs")
    assert (status, attempt) == ("failed", 1)
    assert reason.startswith("HeldOutRefused: label column 'y_binary' has 2 missing value(s)")


def test_the_footer_check_reads_no_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    from modelgate.pipelines.evaluation.held_out_files import NeededColumn, refuse_unusable_files

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"y": [0, 1] * 50, "x": np.arange(100.0)}), path, row_group_size=10)

    def read(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("data was read")

    for name in ("read", "read_row_group", "read_row_groups", "iter_batches"):
        monkeypatch.setattr(pq.ParquetFile, name, read)
    assert refuse_unusable_files(None, str(path), [NeededColumn("y", "the label"),
                                                   NeededColumn("x", "a feature", numeric=True)]) == 100
    assert isinstance(HeldOutRefused("x"), refusal_types())


@pytest.mark.e2e  # a DAG run
def test_the_dag_refuses_the_file_at_verify_once_and_scores_nothing(
        zoo: dict[str, Any], airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.airflow_runner import run_dag

    data = tmp_path / "no label.parquet"
    zoo["frame"].drop(columns=["y_binary"]).to_parquet(data, index=False)
    _nothing_scored(monkeypatch)  # dag.test() runs the tasks in this process
    row, _ = register_archive(zoo["ctx"], zoo["archive"])
    dag_run = run_dag("model_evaluation", conf={
        "model_name": row.model_name, "model_version": row.version, "dataset": str(data)})
    assert str(dag_run.state) == "failed"
    # one attempt: the refusal was final, verify was not tried again
    _assert_refused_once(zoo["ctx"], f"HeldOutRefused: held-out file {str(data)!r} has no column "
                                     "'y_binary'")


def test_an_s3_dataset_of_another_bucket_is_refused_at_prepare(zoo: dict[str, Any]) -> None:
    # the DAG's path (the CLI cannot hash such data): listing it in verify was a retried ValueError
    ctx = zoo["ctx"]
    row, _ = register_archive(ctx, zoo["archive"])
    with pytest.raises(HeldOutRefused, match="dataset 's3://another-bucket/held/' is not in the "
                                             "configured bucket"):
        prepare_step.prepare(ctx, model_name=row.model_name, version=row.version,
                             dataset_uri="s3://another-bucket/held/", run_key="k")
    _assert_refused_once(ctx, "HeldOutRefused: dataset 's3://another-bucket/held/'")
