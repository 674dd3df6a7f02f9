"""The evaluation pipeline's steps one at a time, in-process, on a local context.

No S3 server and no Airflow: the context stores objects under the test's temp dir (the
product's local object store) and rows in the test's PostgreSQL database. These are the
fast-tier tests of each step's contract; the DAG and the CLI run the same steps end to end
(``tests/dags/test_dag_evaluation.py``, ``tests/reliability``).
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from modelgate.config import Settings
from modelgate.pipelines import tasks
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation import (
    explain_step,
    fairness_step,
    gate_step,
    metrics_step,
    prepare_step,
    report_step,
    run_refs,
    score_step,
    store_step,
)
from modelgate.store import runs
from modelgate.store.db import fetch_all
from modelgate.store.objects import LocalObjectStore

MODEL = "gss-high-income"
ROWS = 400


@pytest.fixture()
def local_ctx(clean_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Context:
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(tmp_path))  # the default policy only
    # tasks.run_step opens its context from the environment, as inside an Airflow task
    monkeypatch.setenv("MODELGATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MODELGATE_DATABASE_URL", clean_db)
    for name in ("MODELGATE_S3_ENDPOINT", "AIRFLOW_CTX_DAG_ID", "AIRFLOW_CONN_MODELGATE_S3"):
        monkeypatch.delenv(name, raising=False)
    ctx = Context.open(Settings.from_env())
    assert isinstance(ctx.store, LocalObjectStore)
    return ctx


@pytest.fixture()
def data(demo_builds: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "heldout.parquet"
    pd.read_parquet(demo_builds["1"].heldout_path).iloc[:ROWS].to_parquet(path, index=False)
    return path


def _prepared(ctx: Context, demo_builds: dict[str, Any], data: Path) -> run_refs.RunRef:
    register_archive(ctx, demo_builds["1"].archive_path)
    return prepare_step.prepare(ctx, model_name=MODEL, version="1", dataset_uri=str(data), run_key="steps")


def _stored(ctx: Context, key: str) -> bytes:
    """The stored object; a partition's pickle without its timing, plus its scores file."""
    value = run_refs.get_pickle(ctx, key)
    if isinstance(value, score_step.PartitionResult):
        return pickle.dumps(dataclasses.replace(value, seconds=0.0)) + ctx.store.get_bytes(value.scores_key)
    return ctx.store.get_bytes(key)


def _status(ctx: Context, ref: run_refs.RunRef) -> tuple[str, str | None]:
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    return run.status, run.failure_reason


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_each_step_run_twice_stores_the_same_bytes(
    local_ctx: Context, demo_builds: dict[str, Any], data: Path,
) -> None:
    """An Airflow retry runs a step again: it must store exactly what the first try stored."""
    ctx = local_ctx
    ref = _prepared(ctx, demo_builds, data)
    assert _status(ctx, ref) == ("running", None)
    (uri,) = score_step.list_dataset(ctx, ref)
    scored = score_step.score_partition(ctx, ref, 0, uri)
    steps: list[tuple[str, Any, tuple[Any, ...]]] = [
        ("score", score_step.score_partition, (0, uri)),
        ("merge", score_step.merge_partitions, ([scored],)),
        ("metrics", metrics_step.compute_metrics, ()),
        ("fairness", fairness_step.compute_fairness, ()),
        ("explain", explain_step.explain, ()),
        ("decide", gate_step.decide, ()),
    ]
    for name, step, args in steps:
        first_key = step(ctx, ref, *args)
        first = _stored(ctx, first_key)
        again_key = step(ctx, ref, *args)
        assert again_key == first_key, name
        assert _stored(ctx, again_key) == first, f"step {name} stored something else on a retry"
    # what the steps stored is what the run reports: the candidate's AUC on these rows
    from sklearn.metrics import roc_auc_score

    scores = pd.read_parquet(ctx.store.download(f"{ref.prefix()}/scores/part-00000.parquet",
                                                ctx.scratch("check") / "scores.parquet"))
    held = pd.read_parquet(data)
    metrics = run_refs.get_pickle(ctx, f"{ref.prefix()}/metrics.pkl")
    assert metrics.candidate.by_name()["roc_auc"].value == pytest.approx(
        roc_auc_score(held["high_income"] == 1, scores["score"]), abs=1e-12)
    # The default policy blocks an equalized-odds gap above 0.03 on any sensitive feature;
    # by age group these rows have a gap far above it (fairlearn, at the manifest's 0.5
    # threshold, over the groups of 30 rows or more that the gate compares).
    from fairlearn.metrics import equalized_odds_difference

    big = held["age_group"].map(held["age_group"].value_counts()) >= 30
    gap = equalized_odds_difference(held["high_income"][big] == 1, scores["score"][big] >= 0.5,
                                    sensitive_features=held["age_group"][big])
    assert gap > 0.3
    report_step.render_report(ctx, ref)
    status = store_step.store_results(ctx, ref)
    assert status == "blocked" and _status(ctx, ref) == (status, None)
    counted = fetch_all(ctx.db_url, "SELECT count(*) FROM evaluation_metric WHERE evaluation_run_id = %s",
                        (ref.evaluation_run_id,))
    assert store_step.store_results(ctx, ref) == status  # a retried store replaces, never adds
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM evaluation_metric WHERE evaluation_run_id = %s",
                     (ref.evaluation_run_id,)) == counted


def _dead_udp_port() -> int:
    """A loopback UDP port that nothing listens on: bound, then closed."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_a_metrics_backend_that_is_down_never_fails_a_run(
    local_ctx: Context, demo_builds: dict[str, Any], data: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """modelgate/gauges.py: metrics are sent after the results are stored, best effort."""
    from modelgate.pipelines.evaluation.runner import run_evaluation

    ctx = local_ctx
    register_archive(ctx, demo_builds["1"].archive_path)
    for key, value in {"STATSD_ON": "True", "STATSD_HOST": "127.0.0.1",
                       "STATSD_PORT": str(_dead_udp_port())}.items():
        monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", value)
    done = run_evaluation(ctx, model_name=MODEL, version="1", dataset_uri=str(data), run_key="down")
    assert done.status == "blocked" and _status(ctx, done.ref) == ("blocked", None)
    # a StatsD host that does not resolve: the client cannot even be made (Airflow logs it
    # and falls back to no metrics); storing again, as a retry does, still succeeds
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_HOST", "statsd.invalid")
    assert store_step.store_results(ctx, done.ref) == "blocked"
    assert _status(ctx, done.ref) == ("blocked", None)


def test_a_step_whose_input_is_missing_fails_the_run_and_says_which_step_to_run(
    local_ctx: Context, demo_builds: dict[str, Any], data: Path,
) -> None:
    ctx = local_ctx
    ref = _prepared(ctx, demo_builds, data)
    with pytest.raises(Exception) as caught:
        tasks.run_step(ref, run_refs.fail, store_step.store_results)  # nothing computed yet
    status, reason = _status(ctx, ref)
    assert status == "failed" and reason is not None
    assert reason.startswith(type(caught.value).__name__)
    assert "decision.pkl" in reason or "decide" in reason, reason


def test_ctrl_c_after_the_run_row_exists_records_the_run_failed(
    local_ctx: Context, demo_builds: dict[str, Any], data: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Interrupted while ``prepare`` checks the policy (the row already exists), or while the
    runner sets up before its first step: either way the run says failed, never running."""
    from modelgate.pipelines.evaluation import runner

    ctx = local_ctx
    register_archive(ctx, demo_builds["1"].archive_path)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(prepare_step, "load_policy_for_run", interrupted)
        with pytest.raises(KeyboardInterrupt):
            prepare_step.prepare(ctx, model_name=MODEL, version="1", dataset_uri=str(data),
                             run_key="interrupted-in-prepare")
    assert fetch_all(ctx.db_url, "SELECT status, failure_reason FROM evaluation_run") == [
        ("failed", "KeyboardInterrupt: interrupted")]

    with monkeypatch.context() as patched:
        patched.setattr("modelgate.pipelines.liveness.heartbeat", interrupted)
        with pytest.raises(KeyboardInterrupt):
            runner.run_evaluation(ctx, model_name=MODEL, version="1",
                                             dataset_uri=str(data), run_key="interrupted-in-setup")
    assert fetch_all(ctx.db_url, "SELECT status, failure_reason FROM evaluation_run "
                                 "WHERE run_key LIKE %s", ("interrupted-in-setup%",)) == [
        ("failed", "KeyboardInterrupt: interrupted")]
