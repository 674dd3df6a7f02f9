"""A refused input fails once, before any scoring, and leaves one refusal (issue #37).

The DAG tasks' own path without a scheduler: ``prepare_step.prepare`` (the ``verify`` task's
step) and ``feature_steps.monitor_specs`` (``plan``'s) inside ``tasks.refusals_are_final`` with an
Airflow task context whose try Airflow would retry, against the real PostgreSQL and S3
server. The model is ``tiny_graphs``' one-feature logistic graph; nothing is scored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.tiny_graphs import archive, binary_graph

from modelgate.config import ConfigError, Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.monitor_checks import MonitorConfigError
from modelgate.pipelines.evaluation import prepare_step
from modelgate.pipelines.refusals import InputRefused
from modelgate.pipelines.tasks import refusals_are_final
from modelgate.store.db import fetch_all


class _TaskInstance:
    try_number, max_tries = 1, 1  # the first of two tries: a plain failure would be retried


@pytest.fixture
def in_airflow_task() -> Iterator[None]:
    from airflow.sdk.execution_time.context import set_current_context

    with set_current_context({"ti": _TaskInstance()}):  # type: ignore[typeddict-item]
        yield


@pytest.fixture
def ctx(settings_env: Settings, tmp_path: Path) -> Context:
    ctx = Context.open(settings_env)
    register_archive(ctx, archive(tmp_path / "tiny", binary_graph("FLOAT")).path)
    return ctx


def _refusals(ctx: Context) -> list[tuple[Any, ...]]:
    return fetch_all(ctx.db_url, "SELECT run_key, version, dataset_uri, reason FROM evaluation_refusal "
                                 "ORDER BY evaluation_refusal_id")


def _verify(ctx: Context, *, version: str = "1", dataset: str, key: str = "model_evaluation__r1") -> None:
    """What the ``verify`` task does once its model name is known."""
    with refusals_are_final():
        prepare_step.prepare(ctx, model_name="tiny", version=version, dataset_uri=dataset, run_key=key,
                         promote=True)


CASES = {  # the dataset the tester's DAG run left at its default, and its relatives
    "empty": ("", "InputRefused: dataset: expected a parquet file, a directory of them or "
                  "s3://bucket/prefix; got ''"),
    "blank": ("  ", "got '  '"),
    "missing": ("/nowhere/heldout.parquet", "got '/nowhere/heldout.parquet', which does not exist "
                                            "on this machine"),
    "no-bucket": ("s3:///key", "(no bucket)"),
    "newline": ("d.parquet\nforged", "which holds the control character '\\n'"),
}


@pytest.mark.parametrize(("dataset", "reason"), CASES.values(), ids=CASES.keys())
def test_a_dataset_that_names_nothing_is_refused_once_before_any_run(
        ctx: Context, in_airflow_task: None, dataset: str, reason: str) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException) as caught:  # failed for good: no retry
        _verify(ctx, dataset=dataset)
    assert isinstance(caught.value.__cause__, InputRefused)
    ((key, version, uri, stored),) = _refusals(ctx)
    assert (key, version, uri) == ("model_evaluation__r1", "1", dataset)
    assert reason in stored
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM evaluation_run") == [(0,)]


def test_an_unknown_version_is_refused_once(ctx: Context, in_airflow_task: None,
                                            tmp_path: Path) -> None:
    """Retried by Airflow's default retries, it left two refusal rows for one DAG run."""
    from airflow.sdk.exceptions import AirflowFailException

    data = tmp_path / "d.parquet"
    data.write_bytes(b"")  # exists; nothing reads it before the version is looked up
    with pytest.raises(AirflowFailException, match="RegistryError"):
        _verify(ctx, version="9", dataset=str(data))
    ((_, version, _, reason),) = _refusals(ctx)
    assert version == "9" and reason.startswith("RegistryError")


def test_a_malformed_policy_fails_the_run_once(ctx: Context, in_airflow_task: None,
                                              tmp_path: Path) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    data, policy = tmp_path / "d.parquet", tmp_path / "p.yaml"
    data.write_bytes(b"")
    policy.write_text("fairness:\n  min_positives_per_group: %s\n" % ("9" * 400))
    with pytest.raises(AirflowFailException, match="PolicyError"), refusals_are_final():
        prepare_step.prepare(ctx, model_name="tiny", version="1", dataset_uri=str(data),
                         run_key="model_evaluation__r2", policy_path=str(policy))
    ((status, reason),) = fetch_all(ctx.db_url, "SELECT status, failure_reason FROM evaluation_run")
    assert status == "failed" and "'fairness.min_positives_per_group': expected a whole number " \
                                  "from 0 to 9,223,372,036,854,775,807" in reason


def test_malformed_scoring_settings_are_refused_before_any_run(
        ctx: Context, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "d.parquet"
    data.write_bytes(b"")
    monkeypatch.setenv("MODELGATE_ORT_INTRA_OP_THREADS", "many")
    with pytest.raises(InputRefused, match="scoring settings: MODELGATE_ORT_INTRA_OP_THREADS"):
        _verify(ctx, dataset=str(data))  # outside Airflow: the error itself
    assert len(_refusals(ctx)) == 1
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM evaluation_run") == [(0,)]


def test_a_presign_expiry_past_seven_days_stops_before_any_work(
        settings_env: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """It was accepted at start; the run scored everything, then failed at the report link."""
    monkeypatch.setenv("MODELGATE_PRESIGN_EXPIRY_S", "864000")  # 10 days
    with pytest.raises(ConfigError, match="MODELGATE_PRESIGN_EXPIRY_S must be a whole number "
                                          "from 1 to 604,800, got '864000'"):
        Context.open(migrate=False)  # what every task opens first


@pytest.mark.parametrize("param", ["live", "labels", "reference"])
def test_a_drift_override_that_names_nothing_is_refused_by_plan(
        ctx: Context, in_airflow_task: None, param: str) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    params = {"model_name": "tiny", "live": "", "labels": "", param: "/nowhere/partitions"}
    with pytest.raises(AirflowFailException) as caught, refusals_are_final():
        feature_steps.monitor_specs(ctx, params)
    assert isinstance(caught.value.__cause__, MonitorConfigError)
    assert (f"drift_monitoring param {param!r} '/nowhere/partitions' does not exist on this "
            "machine") in str(caught.value)


def test_a_drift_thresholds_param_past_the_limits_is_refused_by_plan(ctx: Context,
                                                                     in_airflow_task: None) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match="JsonInputError: drift_monitoring param "
                                                   "'thresholds': the value of key 'relative' must "
                                                   "be an integer within"), refusals_are_final():
        feature_steps.monitor_specs(ctx, {"model_name": "tiny", "thresholds": {"relative": 10**400}})


def test_a_policy_param_naming_no_file_fails_the_run_once(ctx: Context, in_airflow_task: None,
                                                          tmp_path: Path) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    data = tmp_path / "d.parquet"
    data.write_bytes(b"")
    with pytest.raises(AirflowFailException, match="PolicyError: policy file '/nowhere/p.yaml' "
                                                   "does not exist"), refusals_are_final():
        prepare_step.prepare(ctx, model_name="tiny", version="1", dataset_uri=str(data),
                         run_key="model_evaluation__r3", policy_path="/nowhere/p.yaml")
    assert fetch_all(ctx.db_url, "SELECT status FROM evaluation_run") == [("failed",)]


def test_the_pipelines_own_refusals_are_refusals() -> None:
    """A looser policy without leave, a monitoring location that cannot work and a dataset too
    large are refusals (no retry) through :class:`InputRefused`, so ``refusal_types`` names
    neither pipeline; ``ValueError`` they stay, as callers catch."""
    from modelgate.pipelines.evaluation.model_tasks import EvaluationTooLarge
    from modelgate.pipelines.evaluation.policy_provenance import LooserPolicyRefused
    from modelgate.pipelines.refusals import refusal_types

    for refused in (LooserPolicyRefused("p.yaml", ["auc >= 0.8"]), MonitorConfigError("--live: no"),
                    EvaluationTooLarge("9 GiB")):
        assert isinstance(refused, refusal_types()) and isinstance(refused, ValueError)
    assert not isinstance(RuntimeError("working, then failed"), refusal_types())


def test_rows_scoring_refused_are_refusals_without_importing_scoring_on_other_failures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring's refused rows are a refusal; a task that fails before it loaded the feeds
    (pandas, ONNX Runtime) cannot have raised one, and its failure does not import them."""
    import sys

    from modelgate.onnx.feeds import UnscorableRows
    from modelgate.pipelines.refusals import refusal_types

    assert isinstance(UnscorableRows("column 'x': 1 row is NaN (first: row 0)"), refusal_types())
    monkeypatch.delitem(sys.modules, "modelgate.onnx.feeds")
    assert UnscorableRows not in refusal_types()
    assert "modelgate.onnx.feeds" not in sys.modules


def test_held_out_rows_the_model_cannot_score_fail_the_score_task_once(
        ctx: Context, in_airflow_task: None, tmp_path: Path) -> None:
    """Infinite values in a feature (which no footer counts) were retried by Airflow and
    refused alike on every try: the score step now fails for good, naming the partition, the
    column and the first row by its id, and the run is recorded failed with that reason."""
    import numpy as np
    import pandas as pd
    from airflow.sdk.exceptions import AirflowFailException

    from modelgate.onnx.feeds import UnscorableRows
    from modelgate.pipelines.evaluation import run_refs, score_step
    from modelgate.pipelines.tasks import run_step

    frame = pd.DataFrame({"row_id": np.arange(10, 30, dtype=np.int64), "x": np.linspace(-1, 1, 20),
                          "y": np.arange(20) % 2})
    frame.loc[[3, 5], "x"] = np.inf
    data = tmp_path / "heldout.parquet"
    frame.to_parquet(data, index=False)
    ref = prepare_step.prepare(ctx, model_name="tiny", version="1", dataset_uri=str(data),
                               run_key="model_evaluation__r5")
    with pytest.raises(AirflowFailException, match=r"^UnscorableRows: held-out partition "
                                                   r"'heldout.parquet': column 'x': 2 rows .*"
                                                   r"\(first: row_id 13\)$") as caught:
        run_step(ref, run_refs.fail, score_step.score)
    assert isinstance(caught.value.__cause__, UnscorableRows)
    ((status, reason),) = fetch_all(ctx.db_url, "SELECT status, failure_reason FROM evaluation_run")
    assert status == "failed" and reason.startswith("UnscorableRows: held-out partition") and "x" in reason
