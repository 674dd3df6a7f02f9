"""Celery settings for the workers of Airflow's CeleryExecutor that run modelgate's DAGs.

Airflow's own settings (``DEFAULT_CELERY_CONFIG``), and modelgate's heavy modules imported
once in each worker before it starts its pool. Every task is a process forked from its
worker (Airflow's task supervisor), so what the worker has imported each task has for free;
Airflow preloads its own operators and numpy the same way, on the same Celery signal
(``celery_executor_utils.on_celery_import_modules``). Without it each ``score`` task and
each step after it imports pandas, pyarrow, ONNX Runtime and the pipeline anew, about a
CPU-second a task on the 2-core test machine (``bench/RESULTS.md``, "Evaluation on Celery
workers").

Set ``AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS=modelgate.celery_worker.CELERY_CONFIG`` on
every Airflow service (``docker/celery.env``). The scheduler builds the same Celery app to
send tasks but never sends ``import_modules``, so it imports none of them.
"""

from __future__ import annotations

import importlib
import logging
import time
from typing import Any

from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG
from celery.signals import import_modules

#: Airflow's Celery settings, unchanged: this module only adds the preload below.
CELERY_CONFIG: dict[str, Any] = dict(DEFAULT_CELERY_CONFIG)

#: What the tasks of both DAGs import: the libraries, then every step module (each imports
#: its own cores and adapters).
PRELOADED = (
    "pandas",
    "pyarrow.parquet",
    "onnxruntime",
    "modelgate.pipelines.evaluation.prepare_step",
    "modelgate.pipelines.evaluation.runner",
    "modelgate.pipelines.evaluation.score_step",
    "modelgate.pipelines.evaluation.metrics_step",
    "modelgate.pipelines.evaluation.fairness_step",
    "modelgate.pipelines.evaluation.explain_step",
    "modelgate.pipelines.evaluation.gate_step",
    "modelgate.pipelines.evaluation.report_step",
    "modelgate.pipelines.evaluation.store_step",
    "modelgate.pipelines.evaluation.reference_sketch_step",
    "modelgate.pipelines.evaluation.promote_step",
    "modelgate.pipelines.drift.runner",
    "modelgate.pipelines.drift.feature_steps",
    "modelgate.pipelines.tasks",
)


@import_modules.connect
def preload(*args: Any, **kwargs: Any) -> None:
    """Import :data:`PRELOADED` in this worker (Celery's ``import_modules`` signal, sent once
    when a worker starts, before its pool). A module that fails to import is logged and left
    to the task that needs it, which then fails with the error in its own log."""
    log = logging.getLogger("modelgate.celery_worker")
    start = time.monotonic()
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # the task importing it reports the same error where it is read
            log.exception("could not preload %s", name)
    log.info("preloaded %d modules in %.1f s", len(PRELOADED), time.monotonic() - start)
