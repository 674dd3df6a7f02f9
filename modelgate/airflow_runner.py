"""Run modelgate's DAGs in-process with Airflow's own ``dag.test()`` (no scheduler needed).

Used by ``modelgate demo`` and the tests. Airflow reads its configuration when first
imported, so :func:`prepare_airflow` must run before anything imports ``airflow``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from modelgate.resources import shipped_dir

log = logging.getLogger("modelgate.airflow")

DAGS_FOLDER = shipped_dir("dags")


def prepare_airflow(airflow_home: Path) -> None:
    """Point Airflow at a private home with a SQLite metadata DB and migrate it once.

    Settings the caller already exported (``AIRFLOW_HOME`` and friends) win.
    """
    os.environ.setdefault("AIRFLOW_HOME", str(airflow_home))
    Path(os.environ["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(DAGS_FOLDER))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
    home = Path(os.environ["AIRFLOW_HOME"])
    os.environ.setdefault("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{home}/airflow.db")
    marker = home / ".modelgate-migrated"
    if not marker.exists():
        log.info("initialising Airflow's metadata database in %s", home)
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True,
                       capture_output=True, env=os.environ.copy())
        marker.touch()


def load_dag(dag_id: str) -> Any:
    """Import ``dags/<dag_id>.py`` and return its DAG object."""
    path = DAGS_FOLDER / f"{dag_id}.py"
    spec = importlib.util.spec_from_file_location(f"modelgate_dags_{dag_id}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"DAG file {path} not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for value in vars(module).values():
        if getattr(value, "dag_id", None) == dag_id and hasattr(value, "test"):
            return value
    raise LookupError(f"{path} defines no DAG with dag_id {dag_id!r}")


@contextlib.contextmanager
def _output_to(log_path: Path | None) -> Iterator[None]:
    """Send everything written to stdout/stderr (Airflow's task logs) to ``log_path``."""
    if log_path is None:
        yield
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run_dag(dag_id: str, *, conf: dict[str, Any] | None = None,
            logical_date: dt.datetime | None = None, log_path: Path | None = None) -> Any:
    """Run one DAG run to the end with ``dag.test()`` and return the DagRun.

    With ``log_path``, Airflow's task logs go to that file instead of the terminal.
    """
    dag = load_dag(dag_id)
    kwargs: dict[str, Any] = {"run_conf": conf or {}}
    if logical_date is not None:
        kwargs["logical_date"] = logical_date
    with _output_to(log_path):
        return dag.test(**kwargs)
