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

Run: ``.venv/bin/python -m bench.bench_small_dag --files 7 --rows-per-file 600 [--mapped-too]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC {message}", file=sys.stderr, flush=True)


def _one_process(env: dict[str, str], archive: Path, dataset: str, policy: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "modelgate.cli", "evaluate", "--model", str(archive),
                           "--data", dataset, "--policy", str(policy), "--format", "json"],
                          env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - start
    if done.returncode != 3:  # 3: the policy blocks the candidate, by design
        raise RuntimeError(f"modelgate evaluate failed ({done.returncode}): {done.stderr[-3000:]}")
    return {"seconds": round(seconds, 1), "exit": done.returncode, "load1_before": round(load, 2)}


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-file", type=int, default=600)
    parser.add_argument("--files", type=int, default=7)
    parser.add_argument("--mapped-too", action="store_true",
                        help="after the second one-process run, the DAG again with one_task_max_mb "
                             "0 (the mapped path: one score task per file, a task per step)")
    args = parser.parse_args(argv)
    for sig in (signal.SIGTERM, signal.SIGINT):  # stop the deployment through ``finally``
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    sys.path.insert(0, str(REPO / "tests"))
    import conftest  # sets AIRFLOW_* for this process; the deployment gets its own
    from support.airflow_deployment import deployment_env, meta_rows, metadata_database, running, wait_for

    from bench.bench_evaluate_scale import _generate
    from modelgate.config import S3Settings, Settings
    from modelgate.demo.data import build_demo
    from modelgate.pipelines.context import Context, register_archive
    from modelgate.store import db

    root = Path(tempfile.mkdtemp(prefix="bench-small-dag-"))
    name = f"bench_small_{uuid.uuid4().hex[:8]}"
    conftest._admin(f"CREATE DATABASE {name}")
    url = conftest.database_url(conftest.pg_admin_url(), name)
    db.upgrade(url)
    s3_server = conftest.S3Server()
    s3_server.start()
    s3 = S3Settings(endpoint=s3_server.endpoint, access_key="bench", secret_key="bench-secret",
                    bucket=f"bench-{uuid.uuid4().hex[:8]}")
    try:
        build = build_demo(root / "demo", version="1", variant="baseline")
        ctx = Context.open(Settings(home=root / "home", database_url=url, db_conn_id="-", s3=s3,
                                    s3_conn_id="-", presign_expiry_s=600))
        row, _ = register_archive(ctx, build.archive_path)
        data = root / "data"
        data.mkdir()
        files = _generate(build.heldout_path, data, args.rows_per_file * args.files,
                          args.rows_per_file, seed=0)
        for path in sorted(data.glob("*.parquet")):
            ctx.store.put_file(f"datasets/small/{path.name}", path,
                               content_type="application/vnd.apache.parquet")
        dataset = f"s3://{s3.bucket}/datasets/small/"
        policy = root / "block.yaml"
        policy.write_text("fairness:\n  default:\n    equalized_odds_difference: {upper: 0.0001}\n")
        (root / "no-overrides").mkdir()
        env = {**os.environ, "MODELGATE_DATABASE_URL": url, "MODELGATE_HOME": str(root / "cli-home"),
               "MODELGATE_S3_ENDPOINT": s3.endpoint, "MODELGATE_S3_ACCESS_KEY": s3.access_key,
               "MODELGATE_S3_SECRET_KEY": s3.secret_key, "MODELGATE_S3_BUCKET": s3.bucket,
               "MODELGATE_POLICY_DIR": str(root / "no-overrides"), "MODELGATE_DAG_RETRIES": "0"}
        conf = {"model_name": row.model_name, "model_version": "1", "policy": str(policy),
                "dataset": dataset}
        with metadata_database() as metadata:
            # only the MODELGATE_* settings: this process's AIRFLOW_* (set by conftest) would
            # replace the deployment's own
            denv = deployment_env(root / "deploy", metadata, ["model_evaluation.py"],
                                  {k: v for k, v in env.items() if k.startswith("MODELGATE_")})
            logs = root / "logs"
            with running(denv, logs) as procs:
                meta = f"postgresql://{metadata}"
                wait_for(lambda: meta_rows(meta, "SELECT count(*) FROM dag WHERE dag_id = "
                                                 "'model_evaluation'")[0][0] == 1, "the DAG parsed",
                         procs, logs)
                _say("deployment up")
                warm_up = _dag_run(denv, meta, {"dataset": dataset}, procs, logs)
                _say(f"warm-up run {warm_up['dag_run_s']} s")
                before = _one_process(env, build.archive_path, dataset, policy)
                _say(f"one process {before['seconds']} s")
                dag = _dag_run(denv, meta, conf, procs, logs)
                _say(f"DAG run {dag['dag_run_s']} s")
                after = _one_process(env, build.archive_path, dataset, policy)
                _say(f"one process {after['seconds']} s")
                mapped = None
                if args.mapped_too:
                    mapped = _dag_run(denv, meta, {**conf, "one_task_max_mb": 0}, procs, logs)
                    _say(f"DAG run, mapped path {mapped['dag_run_s']} s")
        print(json.dumps({"rows": args.rows_per_file * args.files, "files": files,
                          "warm_up": warm_up, "one_process": [before, after], "dag": dag,
                          "dag_mapped": mapped,
                          "ratio": round(dag["dag_run_s"] / min(before["seconds"], after["seconds"]), 2),
                          "nproc": os.cpu_count()}, indent=1))
    finally:
        s3_server.stop()
        conftest._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
