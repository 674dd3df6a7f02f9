"""What the deployment benchmarks share: a results database, moto's S3 server, the demo model
registered, seeded held-out files under an ``s3://`` prefix, a blocking policy, and
``modelgate evaluate`` on that prefix in one process (the side a DAG run is compared with).

Used by ``bench_celery`` and ``bench_small_dag``; tests/conftest.py provides the PostgreSQL and
S3 plumbing, so the caller puts ``tests`` on ``sys.path`` first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Blocks every candidate (no model meets it), so each run evaluates the same candidate with no
#: champion and ends at its gate after storing everything.
BLOCKING_POLICY = "fairness:\n  default:\n    equalized_odds_difference: {upper: 0.0001}\n"


def machine_cpu_s() -> float:
    """CPU-seconds this machine's CPUs have been busy since boot, every process counted
    (``/proc/stat``: user, nice, system, irq, softirq, steal). The difference over a run is its
    whole cost on a quiet machine: the evaluation, moto's S3 server, PostgreSQL and, for a DAG
    run, the scheduler, api-server, workers and their task processes."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class BenchData:
    """One benchmark's evaluation: where its files are and how to run it."""

    root: Path
    archive: Path
    model_name: str
    dataset: str
    policy: Path
    files: int
    parquet_bytes: int
    generated_s: float
    uploaded_s: float
    #: ``MODELGATE_*`` settings a CLI run or a deployment needs (no credentials are printed).
    env: dict[str, str]

    def conf(self) -> dict[str, Any]:
        """The ``model_evaluation`` DAG's params for this evaluation."""
        return {"model_name": self.model_name, "model_version": "1", "policy": str(self.policy),
                "dataset": self.dataset}


@contextmanager
def bench_data(prefix: str, rows: int, rows_per_file: int, *, keep_on_error: bool = False
               ) -> Iterator[BenchData]:
    """Set up a results database, an S3 server and ``rows`` seeded demo rows in files of
    ``rows_per_file`` under ``s3://BUCKET/datasets/bench/``; tear them down after."""
    import conftest

    from bench.bench_evaluate_scale import _generate
    from modelgate.config import S3Settings, Settings
    from modelgate.demo.data import build_demo
    from modelgate.pipelines.context import Context, register_archive
    from modelgate.store import db

    root = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    name = f"{prefix.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    conftest._admin(f"CREATE DATABASE {name}")
    url = conftest.database_url(conftest.pg_admin_url(), name)
    db.upgrade(url)
    s3_server = conftest.S3Server()
    s3_server.start()
    s3 = S3Settings(endpoint=s3_server.endpoint, access_key="bench", secret_key="bench-secret",
                    bucket=f"bench-{uuid.uuid4().hex[:8]}")
    failed = True
    try:
        build = build_demo(root / "demo", version="1", variant="baseline")
        ctx = Context.open(Settings(home=root / "home", database_url=url, db_conn_id="-", s3=s3,
                                    s3_conn_id="-", presign_expiry_s=600))
        row, _ = register_archive(ctx, build.archive_path)
        data = root / "data"
        data.mkdir()
        start = time.monotonic()
        files = _generate(build.heldout_path, data, rows, rows_per_file, seed=0)
        generated_s = time.monotonic() - start
        parquet_bytes = 0
        for path in sorted(data.glob("*.parquet")):
            parquet_bytes += path.stat().st_size
            ctx.store.put_file(f"datasets/bench/{path.name}", path,
                               content_type="application/vnd.apache.parquet")
            path.unlink()  # the object store holds it now
        uploaded_s = time.monotonic() - start - generated_s
        say(f"{files} files, {parquet_bytes / 2**20:.0f} MiB: generated in {generated_s:.0f} s, "
            f"uploaded in {uploaded_s:.0f} s")
        policy = root / "block.yaml"
        policy.write_text(BLOCKING_POLICY)
        (root / "no-overrides").mkdir()
        env = {"MODELGATE_DATABASE_URL": url, "MODELGATE_HOME": str(root / "cli-home"),
               "MODELGATE_S3_ENDPOINT": s3.endpoint, "MODELGATE_S3_ACCESS_KEY": s3.access_key,
               "MODELGATE_S3_SECRET_KEY": s3.secret_key, "MODELGATE_S3_BUCKET": s3.bucket,
               "MODELGATE_POLICY_DIR": str(root / "no-overrides"), "MODELGATE_DAG_RETRIES": "0"}
        yield BenchData(root=root, archive=build.archive_path, model_name=row.model_name,
                        dataset=f"s3://{s3.bucket}/datasets/bench/", policy=policy, files=files,
                        parquet_bytes=parquet_bytes, generated_s=round(generated_s, 1),
                        uploaded_s=round(uploaded_s, 1), env=env)
        failed = False
    finally:
        s3_server.stop()
        conftest._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if failed and keep_on_error:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def one_process(data: BenchData, timeout_s: float = 3600) -> dict[str, Any]:
    """``modelgate evaluate`` on the benchmark's prefix in a child process: wall and CPU seconds."""
    load = os.getloadavg()[0]
    before, machine_before = os.times(), machine_cpu_s()
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "modelgate.cli", "evaluate", "--model",
                           str(data.archive), "--data", data.dataset, "--policy", str(data.policy),
                           "--format", "json"], env={**os.environ, **data.env},
                          capture_output=True, text=True, timeout=timeout_s)
    seconds = time.monotonic() - start
    after, machine = os.times(), machine_cpu_s() - machine_before
    if done.returncode != 3:  # 3: the policy blocks the candidate, by design
        raise RuntimeError(f"modelgate evaluate failed ({done.returncode}): {done.stderr[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    return {"seconds": round(seconds, 1), "cpu_s": round(cpu, 1),
            "machine_cpu_s": round(machine, 1), "exit": done.returncode,
            "load1_before": round(load, 2)}
