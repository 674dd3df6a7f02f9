"""A small evaluation as a DAG run against one process, back to back, with each task's cost.

Starts the e2e tier's real Airflow deployment (tests/support/airflow_deployment.py: LocalExecutor,
api-server, dag-processor, scheduler, a PostgreSQL metadata database of its own) against a
fresh results database and moto's S3 server (``.venv-moto``). The demo model (baseline) is
evaluated on ``--files`` parquet files of ``--rows-per-file`` rows resampled from its held-out
set under an ``s3://`` prefix, with a policy that blocks it (so every run evaluates the same
candidate with no champion, ending ``failed`` at ``gate`` after ``store``, or at
``evaluate_in_one_task``), first by ``modelgate evaluate`` in one process, then as a
``model_evaluation`` DAG run with the DAG's defaults (held-out data this small takes the
one-task path), then again in one process (the two one-process figures bracket the load the
DAG run met); with ``--mapped-too``, then the DAG again on the mapped path
(``one_task_max_mb`` 0).

Before any of them, a warm-up DAG run that names no model (refused at ``verify``): the first
task of a fresh deployment pays its executor's start-up (26 s of ``verify`` at load 19, 6 s in
the next run), which a deployment in service paid long ago.

Per task instance, from the metadata database: the wait from queued to start (the scheduler
and executor) and the run (task process start to end: the task's imports, DB connections, S3
round trips and its work). Which tasks are serial follows from the DAG: every task but the
mapped ``score`` ones.

``--executors`` runs all of it once per executor, one fresh deployment after the other (the
deployment's own, :class:`modelgate.local_executor.PreloadingLocalExecutor`, by default; name
``LocalExecutor`` beside it to see what the preload saves a task).

Run: ``.venv/bin/python -m bench.bench_small_dag --files 7 --rows-per-file 600 [--mapped-too]
[--executors LocalExecutor modelgate.local_executor.PreloadingLocalExecutor]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PRELOADING = "modelgate.local_executor.PreloadingLocalExecutor"


def _dag_run(env: dict[str, str], meta: str, conf: dict[str, Any], procs: list[Any], logs: Path
             ) -> dict[str, Any]:
    from support.airflow_deployment import finished_state, meta_rows, trigger, wait_for

    run_id = f"small-{uuid.uuid4().hex[:6]}"
    load = os.getloadavg()[0]
    trigger(env, "model_evaluation", run_id, conf)
    state = wait_for(lambda: finished_state(meta, run_id), run_id, procs, logs, timeout_s=1800)
    ((span,),) = meta_rows(meta, "SELECT extract(epoch FROM end_date - start_date) FROM dag_run "
                                 "WHERE run_id = %s", (run_id,))
    rows = meta_rows(meta, """SELECT task_id, map_index, extract(epoch FROM start_date - queued_dttm),
                                     extract(epoch FROM end_date - start_date), state,
                                     extract(epoch FROM start_date - (SELECT start_date FROM dag_run
                                                                      WHERE run_id = %s))
                              FROM task_instance WHERE run_id = %s ORDER BY start_date""",
                     (run_id, run_id))
    tasks = [{"task": t if m < 0 else f"{t}[{m}]", "queued_s": round(float(q or 0), 2),
              "run_s": round(float(r or 0), 2), "state": s, "started_at_s": round(float(a or 0), 2)}
             for t, m, q, r, s, a in rows]
    serial = [t for t in tasks if not t["task"].startswith("score")]
    return {"state": state, "dag_run_s": round(float(span), 1), "load1_before": round(load, 2),
            "serial_run_s": round(sum(t["run_s"] for t in serial), 1),
            "serial_queued_s": round(sum(t["queued_s"] for t in serial), 1), "tasks": tasks}


def _one_deployment(args: argparse.Namespace, data: Any, executor: str) -> dict[str, Any]:
    """Warm-up, one process, the DAG, one process (and the mapped DAG) on a fresh deployment
    of ``executor``."""
    from support.airflow_deployment import deployment_env, meta_rows, metadata_database, running, wait_for

    from bench.deployment_data import one_process, say

    conf = data.conf()
    with metadata_database() as metadata:
        # only the MODELGATE_* settings: this process's AIRFLOW_* (set by conftest) would
        # replace the deployment's own
        denv = deployment_env(data.root / f"deploy-{executor}", metadata, ["model_evaluation.py"],
                              {**data.env, "AIRFLOW__CORE__EXECUTOR": executor})
        logs = data.root / f"logs-{executor}"
        with running(denv, logs) as procs:
            meta = f"postgresql://{metadata}"
            wait_for(lambda: meta_rows(meta, "SELECT count(*) FROM dag WHERE dag_id = "
                                             "'model_evaluation'")[0][0] == 1, "the DAG parsed",
                     procs, logs)
            say(f"{executor}: deployment up")
            warm_up = _dag_run(denv, meta, {"dataset": data.dataset}, procs, logs)
            say(f"warm-up run {warm_up['dag_run_s']} s")
            before = one_process(data)
            say(f"one process {before['seconds']} s")
            dag = _dag_run(denv, meta, conf, procs, logs)
            say(f"DAG run {dag['dag_run_s']} s")
            after = one_process(data)
            say(f"one process {after['seconds']} s")
            mapped = None
            if args.mapped_too:
                mapped = _dag_run(denv, meta, {**conf, "one_task_max_mb": 0}, procs, logs)
                say(f"DAG run, mapped path {mapped['dag_run_s']} s")
    return {"executor": executor, "warm_up": warm_up, "one_process": [before, after], "dag": dag,
            "dag_mapped": mapped,
            "ratio": round(dag["dag_run_s"] / min(before["seconds"], after["seconds"]), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-file", type=int, default=600)
    parser.add_argument("--files", type=int, default=7)
    parser.add_argument("--mapped-too", action="store_true",
                        help="after the second one-process run, the DAG again with one_task_max_mb "
                             "0 (the mapped path: one score task per file, a task per step)")
    parser.add_argument("--executors", nargs="+", default=[PRELOADING],
                        help="one deployment each, one after the other (e.g. LocalExecutor "
                             f"{PRELOADING})")
    args = parser.parse_args(argv)
    for sig in (signal.SIGTERM, signal.SIGINT):  # stop the deployment through ``finally``
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    sys.path.insert(0, str(REPO / "tests"))
    import conftest  # noqa: F401  (sets AIRFLOW_* for this process; the deployment gets its own)

    from bench.deployment_data import bench_data

    rows = args.rows_per_file * args.files
    with bench_data("bench-small-dag", rows, args.rows_per_file) as data:
        runs = [_one_deployment(args, data, executor) for executor in args.executors]
        print(json.dumps({"rows": rows, "files": data.files, "deployments": runs,
                          "nproc": os.cpu_count()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
