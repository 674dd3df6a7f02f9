"""Wall time of the model_evaluation DAG on the CeleryExecutor with 2 workers, then 1.

Starts the distributed test tier's deployment (tests/celery_deployment.py: Airflow
api-server, dag-processor, scheduler, a private Redis broker, Celery workers with their
own homes; executor settings from docker/celery.env) against a fresh results database on
``--pg`` and moto's S3 server (``.venv-moto``). The demo model (baseline) is evaluated on
``--files`` parquet files of ``--rows-per-file`` rows resampled from its held-out set,
under an ``s3://`` prefix, with a policy that blocks it (so both runs evaluate the same
candidate, no champion). The first run has two workers; one worker is then stopped and the
same evaluation runs again. Times come from the metadata database: the DAG run's start to
end, and per task the sum of try durations.

Run: ``.venv/bin/python -m bench.bench_celery --rows-per-file 250000 --files 8``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _task_seconds(deployment: Any, run_id: str) -> dict[str, float]:
    rows = deployment.query("SELECT task_id, sum(extract(epoch FROM end_date - start_date)) "
                            "FROM task_instance WHERE run_id = %s GROUP BY task_id", (run_id,))
    return {str(task): round(float(s or 0.0), 1) for task, s in rows}


def _run(deployment: Any, conf: dict[str, Any], workers: int) -> dict[str, Any]:
    run_id = deployment.trigger("model_evaluation", conf)
    started = time.monotonic()
    state = deployment.wait_run(run_id, timeout_s=3600)
    (span,) = deployment.query("SELECT extract(epoch FROM end_date - start_date) FROM dag_run "
                               "WHERE run_id = %s", (run_id,))
    hosts = deployment.query("SELECT DISTINCT hostname FROM task_instance WHERE run_id = %s "
                             "AND task_id = 'score'", (run_id,))
    return {"workers": workers, "state": state, "dag_run_s": round(float(span[0]), 1),
            "observed_s": round(time.monotonic() - started, 1),
            "score_hosts": sorted(h[0] for h in hosts), "task_s": _task_seconds(deployment, run_id)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-file", type=int, default=250_000)
    parser.add_argument("--files", type=int, default=8)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "tests"))
    import conftest  # sets AIRFLOW_* for this process; the deployment gets its own
    from celery_deployment import Deployment

    from bench.bench_evaluate_scale import _generate
    from modelgate.config import S3Settings, Settings
    from modelgate.demo_data import build_demo
    from modelgate.pipelines.context import Context, register_archive
    from modelgate.store import db

    root = Path(tempfile.mkdtemp(prefix="bench-celery-"))
    name = f"bench_celery_{uuid.uuid4().hex[:8]}"
    conftest._admin(f"CREATE DATABASE {name}")
    url = conftest.database_url(conftest.pg_admin_url(), name)
    db.upgrade(url)
    s3_server = conftest.S3Server()
    s3_server.start()
    s3 = S3Settings(endpoint=s3_server.endpoint, access_key="bench", secret_key="bench-secret",
                    bucket=f"bench-{uuid.uuid4().hex[:8]}")
    deployment = None
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
            ctx.store.put_file(f"datasets/bench/{path.name}", path,
                               content_type="application/vnd.apache.parquet")
        policy = root / "block.yaml"
        policy.write_text("fairness:\n  default:\n    equalized_odds_difference: {upper: 0.0001}\n")
        (root / "no-overrides").mkdir()
        env = {**os.environ, "MODELGATE_DATABASE_URL": url,
               "MODELGATE_S3_ACCESS_KEY": s3.access_key, "MODELGATE_S3_SECRET_KEY": s3.secret_key,
               "MODELGATE_S3_BUCKET": s3.bucket, "MODELGATE_POLICY_DIR": str(root / "no-overrides"),
               "MODELGATE_DAG_RETRIES": "0"}
        deployment = Deployment(root / "deployment", ("model_evaluation.py",), env, s3.endpoint)
        deployment.start()
        conf = {"model_name": row.model_name, "model_version": "1", "policy": str(policy),
                "dataset": f"s3://{s3.bucket}/datasets/bench/"}
        results = [_run(deployment, conf, 2)]
        deployment.workers["worker-b"].stop()
        results.append(_run(deployment, conf, 1))
        print(json.dumps({"rows": args.rows_per_file * args.files, "files": files,
                          "runs": results}, indent=1))
    finally:
        if deployment is not None:
            deployment.stop()
        s3_server.stop()
        conftest._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
