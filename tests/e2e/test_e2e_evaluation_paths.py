"""The ``model_evaluation`` DAG's two paths on a real Airflow 3.3 deployment (issue #42 item 3).

Small held-out data (under the ``one_task_max_mb`` param) takes the short path: verify (which
plans the partitions) -> evaluate_in_one_task, which runs every later step in one task process; the
same data with ``one_task_max_mb`` 0 takes the mapped path (one ``score`` task per file,
then a task per step). Both runs evaluate the same candidate on the same three files under a
blocking policy: each DAG run fails (at ``evaluate_in_one_task``, at ``gate``), nothing is
promoted, and the stored result rows are identical, intervals included.

One deployment (``airflow_deployment``: LocalExecutor, api-server, dag-processor, scheduler),
moto S3, retries off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support.airflow_deployment import (
    deployment_env,
    finished_state,
    log_tails,
    meta_rows,
    metadata_database,
    running,
    trigger,
    wait_for,
)

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

NAME = "gss-high-income"
#: The stored results compared between the two paths (every row of the run).
RESULTS = {
    "evaluation_metric": "model_role, metric_name, value, ci_lower, ci_upper, n",
    "fairness_metric": "sensitive_feature, metric_name, value, ci_lower, ci_upper",
    "gate_check": "check_id, verdict, severity, reason",
}


def _states(meta: str, run_id: str) -> dict[tuple[str, int], str]:
    rows = meta_rows(meta, "SELECT task_id, map_index, state FROM task_instance WHERE run_id = %s",
                     (run_id,))
    return {(t, m): s for t, m, s in rows}


def _started(meta: str, run_id: str) -> set[tuple[str, int]]:
    """The run's task instances a worker ran a process for (it records its host; the
    scheduler's skips and upstream failures leave none)."""
    rows = meta_rows(meta, "SELECT task_id, map_index FROM task_instance WHERE run_id = %s "
                           "AND coalesce(hostname, '') <> ''", (run_id,))
    return {(t, m) for t, m in rows}


def _evaluation(url: str, run_id: str) -> tuple[str, int, dict[str, list[tuple[Any, ...]]]]:
    ((run, status, rows),) = fetch_all(url, "SELECT evaluation_run_id, status, rows_scored FROM "
                                            "evaluation_run WHERE run_key LIKE %s",
                                       (f"model_evaluation__{run_id}__%",))
    return status, rows, {t: fetch_all(url, f"SELECT {cols} FROM {t} WHERE evaluation_run_id = %s "
                                            "ORDER BY 1, 2", (run,)) for t, cols in RESULTS.items()}


def test_small_data_runs_in_one_task_and_the_mapped_path_gives_the_same_rows(
    settings_env: Settings, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    assert settings_env.s3 is not None
    ctx = Context.open(settings_env)
    champion, _ = register_archive(ctx, demo_builds["1"].archive_path)
    register_archive(ctx, demo_builds["2"].archive_path)
    models.promote(ctx.db_url, champion.model_version_id, expected_champion_id=None)
    frame = pd.read_parquet(demo_builds["2"].heldout_path)
    for i, cut in enumerate((slice(0, 300), slice(300, 700), slice(700, None))):
        path = tmp_path / f"part-{i}.parquet"
        frame.iloc[cut].to_parquet(path, index=False)
        ctx.store.put_file(f"datasets/heldout/{path.name}", path,
                           content_type="application/vnd.apache.parquet")
    strict = tmp_path / "strict.yaml"  # blocks the candidate: both runs fail, nothing is promoted
    strict.write_text("fairness:\n  default:\n    equalized_odds_difference: {upper: 0.0001}\n")
    conf = {"model_name": NAME, "model_version": "2", "policy": str(strict),
            "dataset": f"s3://{settings_env.s3.bucket}/datasets/heldout/"}
    with metadata_database() as metadata:
        env = deployment_env(tmp_path / "deploy", metadata, ["model_evaluation.py"], {})
        env["MODELGATE_DAG_RETRIES"] = "0"
        logs = tmp_path / "logs"
        with running(env, logs) as procs:
            meta = f"postgresql://{metadata}"
            wait_for(lambda: meta_rows(meta, "SELECT count(*) FROM dag WHERE dag_id = "
                                             "'model_evaluation'")[0][0] == 1, "the DAG parsed", procs, logs)
            trigger(env, "model_evaluation", "small", conf)
            assert wait_for(lambda: finished_state(meta, "small"), "small", procs, logs) == "failed"
            trigger(env, "model_evaluation", "mapped", {**conf, "one_task_max_mb": 0})
            assert wait_for(lambda: finished_state(meta, "mapped"), "mapped", procs, logs) == "failed"
            small, mapped = _states(meta, "small"), _states(meta, "mapped")
            started = {run: _started(meta, run) for run in ("small", "mapped")}
    # the short path: two tasks ran, the blocked candidate failed the one task; the mapped
    # path's tasks were skipped without a process (score got no partition)
    ran = {k: s for k, s in small.items() if s != "skipped"}
    assert ran == {("verify", -1): "success", ("evaluate_in_one_task", -1): "failed"}, (
        small, log_tails(logs))
    assert small[("score", -1)] == "skipped"
    # the mapped path: one score task per file, blocked at gate; Airflow skipped the one task
    assert sorted(m for t, m in mapped if t == "score") == [0, 1, 2], mapped
    assert mapped[("gate", -1)] == "failed" and mapped[("evaluate_in_one_task", -1)] == "skipped"
    # no task process for the path not taken (a task skipping itself would have had one):
    # exactly the tasks that succeeded or failed were started by a worker
    for run, states in (("small", small), ("mapped", mapped)):
        assert started[run] == {k for k, s in states.items() if s in ("success", "failed")}, (
            run, states, started[run])
    assert mapped[("promote", -1)] == "upstream_failed"
    assert models.get(ctx.db_url, NAME, "2").stage == "candidate"
    status, rows, results = _evaluation(ctx.db_url, "small")
    assert (status, rows) == ("blocked", len(frame))
    assert any(r[1] == "breach" for r in results["gate_check"])
    assert _evaluation(ctx.db_url, "mapped") == (status, rows, results)
