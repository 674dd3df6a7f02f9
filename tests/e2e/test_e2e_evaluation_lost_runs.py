"""The ``model_evaluation`` DAG's failures on a real Airflow 3.3 deployment with the DEFAULT
retries (``MODELGATE_DAG_RETRIES`` unset: one retry), issue #21 item 6:

0. a trigger with an empty ``dataset`` is refused by Airflow itself: no DAG run (issue #37);
1. a trigger without ``model_name``, or with a version that is not registered, fails at
   ``verify`` on its first try, naming the param or version, and is recorded once in
   ``analytics.evaluation_refusals`` (no run row);
2. SIGKILL to both tries of ``score``: the DAG run fails and its failure callback (run by the
   dag-processor) records the evaluation run ``failed`` at once, naming the task and the try,
   in ``evaluation_run`` and in ``analytics.evaluation_runs``; no later run is needed.

One deployment (``airflow_deployment``); the tasks reach the object store through an
``S3Gate`` (``celery_deployment``), which holds the held-out partition's download open while
the test looks. The fault is caused on events, never after a delay: once the gate holds a
download, the process holding a connection to the gate is found by its TCP port (it must be
the ``score`` task instance's own process, as the metadata database records its pid) and
sent SIGKILL; the retry is found and killed the same way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from support.airflow_deployment import (
    AIRFLOW,
    deployment_env,
    finished_state,
    log_tails,
    meta_rows,
    metadata_database,
    running,
    trigger,
    wait_for,
)
from support.celery_deployment import S3Gate

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

NAME = "gss-high-income"


@pytest.fixture()
def deployment(settings_env: Settings, demo_builds: dict[str, Any], tmp_path: Path
               ) -> Iterator[tuple[Context, dict[str, str], str, S3Gate, list[Any], Path, str]]:
    assert settings_env.s3 is not None
    ctx = Context.open(settings_env)
    champion, _ = register_archive(ctx, demo_builds["1"].archive_path)
    register_archive(ctx, demo_builds["2"].archive_path)
    models.promote(ctx.db_url, champion.model_version_id, expected_champion_id=None)
    ctx.store.put_file("datasets/heldout/part-0.parquet", demo_builds["2"].heldout_path,
                       content_type="application/vnd.apache.parquet")
    gate = S3Gate(settings_env.s3.endpoint, "deployment")
    try:
        with metadata_database() as metadata:
            env = deployment_env(tmp_path / "deploy", metadata, ["model_evaluation.py"],
                                 {"MODELGATE_S3_ENDPOINT": gate.endpoint})
            env.pop("MODELGATE_DAG_RETRIES", None)  # the default: one retry
            logs = tmp_path / "logs"
            with running(env, logs) as procs:
                yield (ctx, env, f"postgresql://{metadata}", gate, procs, logs,
                       f"s3://{settings_env.s3.bucket}/datasets/heldout/")
    finally:
        gate.close()





def _tries(meta: str, run_id: str, task_id: str) -> list[tuple[Any, ...]]:
    return meta_rows(meta, """SELECT map_index, try_number, state, pid FROM task_instance
                          WHERE run_id = %s AND task_id = %s ORDER BY map_index""", (run_id, task_id))


def _callback_log(env: dict[str, str]) -> str:
    """What the dag-processor logged while it processed the DAG file (callbacks included)."""
    logs = Path(env["AIRFLOW_HOME"], "logs", "dag_processor")
    return "".join(p.read_text(errors="replace") for p in logs.rglob("model_evaluation.py.log"))


def _gate_clients(gate: S3Gate, killed: list[int]) -> list[int]:
    """Live processes (not killed before) with a TCP connection to the gate."""
    port = int(gate.endpoint.rsplit(":", 1)[1])
    return sorted({c.pid for c in psutil.net_connections(kind="tcp")
                   if c.pid and c.pid not in killed and c.raddr and c.raddr.port == port
                   and c.status == psutil.CONN_ESTABLISHED})


def test_a_run_without_a_model_and_a_killed_last_try_are_recorded(
    deployment: tuple[Context, dict[str, str], str, S3Gate, list[Any], Path, str],
) -> None:
    ctx, env, meta, gate, procs, logs, dataset = deployment

    def wait(condition: Any, what: str) -> Any:
        return wait_for(condition, what, procs, logs)

    wait(lambda: meta_rows(meta, "SELECT count(*) FROM dag WHERE dag_id = 'model_evaluation'")[0][0] == 1,
         "the DAG parsed")

    # 0. an empty dataset (issue #37: it passed verify, then scored the worker's folder) is
    # refused by Airflow when the run is triggered: no DAG run, no task, no refusal row
    refused = subprocess.run([*AIRFLOW, "dags", "trigger", "model_evaluation", "--run-id", "no-data",
                              "--conf", json.dumps({"model_name": NAME, "dataset": ""})],
                             env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "dataset" in refused.stdout + refused.stderr
    assert meta_rows(meta, "SELECT count(*) FROM dag_run WHERE run_id = 'no-data'") == [(0,)]

    # 1. no model_name: refused at verify, without a retry, and recorded
    trigger(env, "model_evaluation", "no-model", {"dataset": dataset})
    assert wait(lambda: finished_state(meta, "no-model"), "no-model") == "failed", log_tails(logs)
    assert [t[:3] for t in _tries(meta, "no-model", "verify")] == [(-1, 1, "failed")]
    ((model_name, reason),) = fetch_all(ctx.db_url, """SELECT model_name, reason FROM
                                                        analytics.evaluation_refusals
                                                        WHERE run_key = 'model_evaluation__no-model'""")
    assert model_name == "" and reason.startswith("ValueError: param 'model_name' is missing")
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM evaluation_run") == [(0,)]
    # the DAG's failure callback ran on it (its context validates the params) and said why it
    # had nothing to record
    wait(lambda: "evaluation DAG run no-model failed; it named no model_name" in _callback_log(env),
         "the failure callback of no-model")

    # 1b. an unknown version: refused at verify once (it was retried, leaving two refusals)
    trigger(env, "model_evaluation", "no-version", {"model_name": NAME, "model_version": "9",
                                                    "dataset": dataset})
    assert wait(lambda: finished_state(meta, "no-version"), "no-version") == "failed", log_tails(logs)
    assert [t[:3] for t in _tries(meta, "no-version", "verify")] == [(-1, 1, "failed")]
    ((reason,),) = fetch_all(ctx.db_url, "SELECT reason FROM analytics.evaluation_refusals "
                                         "WHERE run_key = 'model_evaluation__no-version'")
    assert reason.startswith("RegistryError")

    # 2. SIGKILL to both tries of score, each while it downloads its partition
    killed: list[int] = []
    gate.hold("/datasets/")
    trigger(env, "model_evaluation", "sigkill",  # the mapped path: score, a task of its own
            {"model_name": NAME, "model_version": "2", "dataset": dataset, "one_task_max_mb": 0})
    for attempt in (1, 2):
        wait(lambda n=attempt: len(gate.held_paths) >= n, f"score's download, try {attempt}")
        (pid,) = wait(lambda: _gate_clients(gate, killed), f"the process of try {attempt}")
        assert _tries(meta, "sigkill", "score") == [(0, attempt, "running", pid)]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    gate.release()
    assert wait(lambda: finished_state(meta, "sigkill"), "sigkill") == "failed", log_tails(logs)
    assert [t[:3] for t in _tries(meta, "sigkill", "score")] == [(0, 2, "failed")]

    query = ("SELECT status, failure_reason FROM {} "
             "WHERE left(run_key, 27) = 'model_evaluation__sigkill__'")
    status, reason = wait(lambda: (r := fetch_all(ctx.db_url, query.format("evaluation_run")))
                          and r[0][0] != "running" and r[0], "the failure callback")
    assert (status, reason) == (
        "failed", "lost: the last try of task score[0], try 2 ended without recording why (its "
        "process was killed, e.g. SIGKILL or out of memory, or it failed outside a pipeline step) "
        "and Airflow DAG run model_evaluation__sigkill failed; see that task's log"), log_tails(logs)
    assert fetch_all(ctx.db_url, query.format("analytics.evaluation_runs")) == [(status, reason)]
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM evaluation_run") == [(1,)]  # no later run
    assert models.get(ctx.db_url, NAME, "2").stage == "candidate"
