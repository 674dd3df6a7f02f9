"""modelgate's LocalExecutor: Airflow loads it from the executor setting, and it imports the
task modules before it forks its workers, so every task forked from them has them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.airflow_deployment import deployment_env

from modelgate.task_preload import PRELOADED

EXECUTOR = "modelgate.local_executor.PreloadingLocalExecutor"


@pytest.mark.e2e  # a fresh interpreter starting Airflow's executor and its workers: 6-7 s
def test_airflow_loads_it_and_it_preloads_before_forking_its_workers(tmp_path: Path) -> None:
    """In a fresh interpreter: Airflow's loader resolves the setting to the class; loading it
    imports no pipeline module; each worker, once forked, already holds every preloaded module
    (a worker reports its own ``sys.modules`` through a pipe before it takes work; a worker
    that dies first, or none that reports within a minute, fails the test with what is known)."""
    code = f"""
import os, select, sys
from airflow.executors import local_executor
from airflow.executors.executor_loader import ExecutorLoader
cls, _ = ExecutorLoader.import_default_executor_cls()
assert cls.__module__ + "." + cls.__name__ == {EXECUTOR!r}, cls
assert issubclass(cls, local_executor.LocalExecutor)
preloaded = {PRELOADED!r}
assert not [m for m in preloaded if m.startswith("modelgate.pipelines") and m in sys.modules]
read, write = os.pipe()
original = local_executor._run_worker
def reporting_worker(*args, **kwargs):
    missing = [m for m in preloaded if m not in sys.modules]
    os.write(write, (repr(missing) + "\\n").encode())
    return original(*args, **kwargs)
local_executor._run_worker = reporting_worker
executor = cls(parallelism=2)
assert executor.is_mp_using_fork
executor.start()
os.close(write)  # the workers hold the pipe open now: if every one dies unheard, read sees its end
ready, _, _ = select.select([read], [], [], 60)
if not ready:
    sys.exit("no worker reported within 60 s; alive: " + repr([w.is_alive() for w in executor.workers]))
report = os.fdopen(read).readline().strip()  # the first worker's ('' when every worker died first)
print("worker reports:", report)
assert report == "[]", report or "every worker died before it reported"
assert len(executor.workers) == 2
executor.end()
"""
    env = {**deployment_env(tmp_path / "home", "unused", [], {"AIRFLOW__CORE__EXECUTOR": EXECUTOR}),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180,
                          env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "worker reports: []" in done.stdout
