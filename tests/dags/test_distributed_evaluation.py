"""model_evaluation on a real CeleryExecutor deployment with two workers, faults included.

One deployment (tests/support/celery_deployment.py) serves every test of this module, in order:
a clean run, a worker killed (kill -9) in the middle of a ``score`` task, a broker restart
during a run, and a worker that cannot reach the object store. The held-out set is the
demo's, cut into 8 parquet files under an ``s3://`` prefix; every run's stored numbers are
compared with ``modelgate evaluate``'s one-process run of the same files
(:func:`run_evaluation_locally`, the command's code), which is computed before any Airflow
process starts. A strict policy blocks the candidate, so it stays a candidate and every run
evaluates the same pair (the DAG run ends red at ``gate``, as a blocked run should).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import _free_port, _truncate_all
from support.celery_deployment import Deployment, wait_for
from test_dag_evaluation_partitions import _results

from modelgate.config import S3Settings, Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = [pytest.mark.e2e, pytest.mark.distributed, pytest.mark.timeout(1800)]

FILES = 8
A, B = "worker-a", "worker-b"
RUN_S = 900


@dataclass
class Stack:
    deployment: Deployment
    ctx: Context
    conf: dict[str, Any]
    expected: dict[str, list[tuple[Any, ...]]]
    n_rows: int


def _partitions(heldout: Path, root: Path) -> list[Path]:
    """FILES files of unequal size, some in hive-style sub-directories."""
    frame = pd.read_parquet(heldout)
    cuts = [round(len(frame) * (i / FILES) ** 1.3) for i in range(FILES + 1)]
    paths = []
    for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        path = root / (f"day={i % 3}" if i % 2 else "") / f"part-{i}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.iloc[lo:hi].to_parquet(path, index=False)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def stack(pg_url: str, s3_server: Any, demo_builds: dict[str, Any],
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    from modelgate.cli.runs import run_evaluation_locally

    root = tmp_path_factory.mktemp("celery")
    s3 = S3Settings(endpoint=s3_server.endpoint, access_key="modelgate-test",
                    secret_key="modelgate-test-secret", bucket=f"mg-{uuid.uuid4().hex[:12]}")
    env = {"MODELGATE_HOME": str(root / "cli-home"), "MODELGATE_DATABASE_URL": pg_url,
           "MODELGATE_S3_ENDPOINT": s3.endpoint, "MODELGATE_S3_ACCESS_KEY": s3.access_key,
           "MODELGATE_S3_SECRET_KEY": s3.secret_key, "MODELGATE_S3_BUCKET": s3.bucket,
           "MODELGATE_POLICY_DIR": str(root / "no-overrides"), "MODELGATE_DAG_RETRIES": "1"}
    (root / "no-overrides").mkdir()
    deployment = None
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        ctx = Context.open(Settings.from_env())
        try:
            champion, _ = register_archive(ctx, demo_builds["1"].archive_path)
            register_archive(ctx, demo_builds["2"].archive_path)
            models.promote(ctx.db_url, champion.model_version_id, expected_champion_id=None)
            strict = root / "strict.yaml"
            strict.write_text("fairness:\n  default:\n    equalized_odds_difference: {upper: 0.0001}\n")
            local = root / "heldout"
            for path in _partitions(demo_builds["2"].heldout_path, local):
                ctx.store.put_file(f"datasets/heldout/{path.relative_to(local).as_posix()}", path,
                                   content_type="application/vnd.apache.parquet")
            one_process = run_evaluation_locally(demo_builds["2"].archive_path, local, strict)
            expected = _results(ctx.db_url, one_process.payload["evaluation_run_id"])
            assert one_process.payload["status"] == "blocked"
            deployment = Deployment(root / "deployment", ("model_evaluation.py",), dict(os.environ),
                                    s3.endpoint)
            deployment.start()
            yield Stack(deployment, ctx, {
                "model_name": "gss-high-income", "model_version": "2", "policy": str(strict),
                "dataset": f"s3://{s3.bucket}/datasets/heldout/",
                "one_task_max_mb": 0}, expected,  # one score task per file, not one task in all
                demo_builds["2"].n_heldout)
        finally:
            if deployment is not None:
                deployment.stop()
            _truncate_all(pg_url)


def _check_run(stack: Stack, run_id: str) -> list[tuple[Any, ...]]:
    """The DAG run ended blocked at ``gate`` with one process's numbers; its score tries."""
    state = stack.deployment.wait_run(run_id, RUN_S)
    tries = stack.deployment.tries(run_id)
    final = {(t[0], t[1]): t[3] for t in stack.deployment.tries(run_id) if t[2] == max(
        u[2] for u in tries if u[:2] == t[:2])}
    assert state == "failed" and final.pop(("gate", -1)) == "failed", (tries, stack.deployment.log_tails())
    assert final.pop(("reference_sketch", -1)) == final.pop(("promote", -1)) == "upstream_failed"
    assert final.pop(("evaluate_in_one_task", -1)) == "skipped"  # the mapped path ran
    assert set(final.values()) == {"success"}, tries
    (row,) = fetch_all(stack.ctx.db_url, "SELECT evaluation_run_id, status, rows_scored FROM "
                                         "evaluation_run WHERE run_key LIKE %s",
                       (f"model_evaluation__{run_id}__%",))  # the key adds the model's identity
    assert row[1:] == ("blocked", stack.n_rows)
    assert _results(stack.ctx.db_url, row[0]) == stack.expected  # exactly, intervals included
    score = [t for t in tries if t[0] == "score"]
    # every partition was scored and merged once: one successful try per file
    assert sorted(t[1] for t in score if t[3] == "success") == list(range(FILES))
    return score


def test_mapped_score_tasks_run_on_both_workers_and_give_one_process_numbers(stack: Stack) -> None:
    deployment = stack.deployment
    for gate in deployment.gates.values():  # each worker's downloads wait until both score
        gate.hold()
    run_id = deployment.trigger("model_evaluation", stack.conf)
    for worker, gate in deployment.gates.items():
        wait_for(f"a partition download on {worker}", gate.seen.is_set, RUN_S, deployment.check_alive)
    for worker in (A, B):  # both workers run a score task at the same moment
        assert deployment.running_on(run_id, "score", worker), deployment.tries(run_id, "score")
    for gate in deployment.gates.values():
        gate.release()
    score = _check_run(stack, run_id)
    assert {t[4] for t in score} == {A, B}
    assert all(t[2] == 1 for t in score), score  # no retries were needed


def test_worker_killed_mid_score_is_retried_on_the_other_worker(stack: Stack) -> None:
    deployment = stack.deployment
    deployment.gates[A].hold()
    run_id = deployment.trigger("model_evaluation", stack.conf)
    wait_for("a partition download on worker-a", deployment.gates[A].seen.is_set, RUN_S,
             deployment.check_alive)
    (killed,) = wait_for("worker-a's score task running", lambda: deployment.running_on(
        run_id, "score", A), 60, deployment.check_alive)[:1]
    deployment.workers[A].kill9()
    deployment.gates[A].release()
    try:
        score = _check_run(stack, run_id)
    finally:
        deployment.restart_worker(A)
    mine = [t for t in score if t[1] == killed[0]]
    assert [(t[2], t[4]) for t in mine] == [(1, A), (2, B)] and mine[-1][3] == "success", mine
    assert mine[0][3] != "success"


def test_broker_restart_during_a_run_loses_no_task(stack: Stack) -> None:
    deployment = stack.deployment
    assert deployment.broker is not None
    deployment.gates[B].hold()  # keeps the run in its score fan-out until the broker is back
    run_id = deployment.trigger("model_evaluation", stack.conf)
    wait_for("a partition download on worker-b", deployment.gates[B].seen.is_set, RUN_S,
             deployment.check_alive)
    deployment.broker.restart()
    deployment.gates[B].release()
    _check_run(stack, run_id)
    assert deployment.broker.starts == 2


def test_worker_without_the_object_store_fails_with_the_reason_and_the_retry_succeeds(
        stack: Stack) -> None:
    deployment = stack.deployment
    nowhere = f"127.0.0.1:{_free_port()}"  # nothing listens there
    deployment.workers[B].stop()
    deployment.restart_worker(A, MODELGATE_S3_ENDPOINT=nowhere)
    run_id = deployment.trigger("model_evaluation", stack.conf)
    (failed,) = wait_for("a failed try on worker-a", lambda: deployment.query(
        "SELECT task_id, map_index FROM task_instance WHERE run_id = %s AND hostname = %s "
        "AND state IN ('up_for_retry', 'failed')", (run_id, A)), RUN_S, deployment.check_alive)[:1]
    deployment.workers[A].stop()  # the retry can only go to the healthy worker
    deployment.workers[B].start()
    _check_run(stack, run_id)
    tries = [t for t in deployment.tries(run_id) if t[:2] == failed]
    assert [(t[2], t[4]) for t in tries] == [(1, A), (2, B)] and tries[-1][3] == "success", tries
    logs = [p.read_text(errors="replace") for p in deployment.try_logs(A) if run_id in str(p)]
    assert any(f"object store at {nowhere} could not" in text for text in logs), logs
