"""Wall time of the model_evaluation DAG on the CeleryExecutor with 2 workers, then 1.

Starts the distributed test tier's deployment (tests/support/celery_deployment.py: Airflow
api-server, dag-processor, scheduler, a private Redis broker, Celery workers with their
own homes; executor settings from docker/celery.env, except the scheduler's
``task_queued_timeout``, see :func:`_deployment_class`) against a fresh results database on
``--pg`` and moto's S3 server (``.venv-moto``). The demo model (baseline) is evaluated on
``--files`` parquet files of ``--rows-per-file`` rows resampled from its held-out set,
under an ``s3://`` prefix, with a policy that blocks it (so both runs evaluate the same
candidate, no champion; each run ends ``failed`` at its ``gate`` task, after ``store``).
``modelgate evaluate`` on the same prefix runs in one process before the deployment starts and
again after it stops (the side the DAG runs are compared with: the ratio uses the faster). The
first DAG run has two workers; one worker is then stopped and the same evaluation runs again
(``--no-one-worker`` skips it). Before them two runs that name no model are refused at their
first task: the first pays the deployment's start-up, and the second's time
(``refused_run_s``) is the least a DAG run costs on this deployment. Times come from the
metadata database: the DAG run's start to end, the span of the ``score`` tasks (first start
to last end), and per task the sum of try durations; ``machine_cpu_s`` is every CPU-second
the machine spent during a run (``/proc/stat``: meaningful on a quiet machine only), the
one-process runs' too.

Run: ``.venv/bin/python -m bench.bench_celery --rows-per-file 250000 --files 8`` (the DAG's
default path for 19 MiB: one task; ``--one-task-max-mb 0`` for the mapped path)
(100M rows: ``--rows-per-file 5000000 --files 20 --timeout-s 3000``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _task_seconds(deployment: Any, run_id: str) -> dict[str, float]:
    rows = deployment.query("SELECT task_id, sum(extract(epoch FROM end_date - start_date)) "
                            "FROM task_instance WHERE run_id = %s GROUP BY task_id", (run_id,))
    return {str(task): round(float(s or 0.0), 1) for task, s in rows}


def _run(deployment: Any, conf: dict[str, Any], workers: int, timeout_s: float) -> dict[str, Any]:
    from bench.deployment_data import machine_cpu_s, say

    load_before, cpu_before = os.getloadavg(), machine_cpu_s()
    run_id = deployment.trigger("model_evaluation", conf)
    started = time.monotonic()
    say(f"run {run_id} with {workers} worker(s) triggered")
    state = deployment.wait_run(run_id, timeout_s=timeout_s)
    machine_cpu = machine_cpu_s() - cpu_before
    say(f"run {run_id} {state} after {time.monotonic() - started:.0f} s")
    (span,) = deployment.query("SELECT extract(epoch FROM end_date - start_date) FROM dag_run "
                               "WHERE run_id = %s", (run_id,))
    hosts = deployment.query("SELECT DISTINCT hostname FROM task_instance WHERE run_id = %s "
                             "AND task_id = 'score'", (run_id,))
    (score,) = deployment.query(
        "SELECT extract(epoch FROM max(end_date) - min(start_date)), min(extract(epoch FROM "
        "end_date - start_date)), max(extract(epoch FROM end_date - start_date)) FROM task_instance "
        "WHERE run_id = %s AND task_id = 'score'", (run_id,))
    return {"workers": workers, "state": state, "dag_run_s": round(float(span[0]), 1),
            "score_span_s": round(float(score[0] or 0.0), 1),
            "score_task_min_max_s": [round(float(x or 0.0), 1) for x in score[1:]],
            "observed_s": round(time.monotonic() - started, 1),
            "machine_cpu_s": round(machine_cpu, 1),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "score_hosts": sorted(h[0] for h in hosts), "task_s": _task_seconds(deployment, run_id)}


def _deployment_class(base: Any, queued_timeout_s: int) -> Any:
    """The test tier's deployment with the scheduler's ``task_queued_timeout`` replaced.

    docker/celery.env sets it to 120 s so that tasks whose broker message was lost are sent
    again; but a mapped ``score`` task waiting in the broker for a free worker slot is also
    "queued", and at 5M rows per file a slot frees only every few minutes: on 2026-12-01 the
    100M-row run with those settings had 8 of its 20 ``score`` tasks requeued twice and then
    failed without ever starting. Benchmarks with more files than slots need it above the
    longest queue wait (default here: the broker's visibility timeout, 6 h). Its workers
    read the S3 server directly, not through the test tier's per-worker proxy.
    """

    class Bench(base):
        def _env(self, meta_db: str) -> dict[str, str]:
            return {**super()._env(meta_db),
                    "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": str(queued_timeout_s)}

        def worker_env(self, worker: str, **overrides: str) -> dict[str, str]:
            # straight to the S3 server, as `modelgate evaluate` reads it: the test tier's
            # per-worker proxy (S3Gate, a fault-injection device) copies every response
            # through this process's Python threads
            return super().worker_env(worker, **{"MODELGATE_S3_ENDPOINT": self.s3_endpoint,
                                                 **overrides})

    return Bench


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-file", type=int, default=250_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--timeout-s", type=float, default=3600,
                        help="longest wait for one DAG run, in seconds")
    parser.add_argument("--one-task-max-mb", type=int, default=None,
                        help="the DAG's one_task_max_mb param (default: the DAG's own, 32 MiB, "
                             "so 2M rows, about 19 MiB, run in one task as a user's would; 0: one "
                             "score task per file, the mapped path's scale-out)")
    parser.add_argument("--queued-timeout-s", type=int, default=21600,
                        help="the scheduler's task_queued_timeout for this run (see below)")
    parser.add_argument("--no-one-worker", action="store_true",
                        help="skip the run with one worker")
    args = parser.parse_args(argv)
    # SIGTERM (and SIGINT, which a shell ignores in background jobs) stops the deployment
    # through the ``finally`` below: its services run in sessions of their own, so killing
    # this process group alone would leave them running.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))
    sys.path.insert(0, str(REPO / "tests"))
    import conftest  # noqa: F401  (sets AIRFLOW_* for this process; the deployment gets its own)
    from support.celery_deployment import Deployment

    from bench.deployment_data import bench_data, one_process, say

    rows = args.rows_per_file * args.files
    with bench_data("bench-celery", rows, args.rows_per_file, keep_on_error=True) as data:
        # the deployment routes each worker's S3 traffic itself and gives each its own home
        env = {**os.environ, **{k: v for k, v in data.env.items()
                                if k not in ("MODELGATE_S3_ENDPOINT", "MODELGATE_HOME")}}
        deployment = None
        try:
            before = one_process(data, args.timeout_s)
            say(f"one process {before['seconds']} s")
            deployment = _deployment_class(Deployment, args.queued_timeout_s)(
                data.root / "deployment", ("model_evaluation.py",), env,
                data.env["MODELGATE_S3_ENDPOINT"])
            deployment.start()
            say("deployment started")
            conf = data.conf() if args.one_task_max_mb is None else {
                **data.conf(), "one_task_max_mb": args.one_task_max_mb}
            # A run naming no model is refused in its first task (recorded, no retry). The
            # first pays the fresh deployment's start-up, which one in service paid long ago;
            # the second's time is the least any DAG run costs here (one near-empty task and
            # the scheduler's hand-overs).
            refused = {**conf, "model_name": None}
            _run(deployment, refused, 2, args.timeout_s)
            floor = _run(deployment, refused, 2, args.timeout_s)
            say(f"a run refused at its first task: DAG run {floor['dag_run_s']} s")
            results = [_run(deployment, conf, 2, args.timeout_s)]
            if not args.no_one_worker:
                deployment.workers["worker-b"].stop()
                results.append(_run(deployment, conf, 1, args.timeout_s))
            deployment.stop()
            deployment = None
            after = one_process(data, args.timeout_s)
            say(f"one process {after['seconds']} s")
        finally:
            if deployment is not None:
                deployment.stop()
        fastest = min(before["seconds"], after["seconds"])
        print(json.dumps({"rows": rows, "files": data.files,
                          "parquet_mib": round(data.parquet_bytes / 2**20),
                          "generated_s": data.generated_s, "uploaded_s": data.uploaded_s,
                          "one_process": [before, after], "runs": results,
                          "refused_run_s": floor["dag_run_s"],
                          "ratio_to_one_process": {str(r["workers"]): round(r["dag_run_s"] / fastest, 2)
                                                   for r in results}}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
