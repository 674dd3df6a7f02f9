"""The modules every task of both DAGs imports, imported ahead in the process its tasks fork from.

Airflow runs each task in a process forked from a long-lived one: a Celery worker (its task
supervisor forks per task), or, with the LocalExecutor, a worker process forked from the
scheduler. What that process has imported before the fork, each task has for free. Without it
each ``score`` task and each step after it imports pandas, pyarrow, ONNX Runtime and the
pipeline anew, about a CPU-second a task on the 2-core test machine (``bench/RESULTS.md``,
"Evaluation on Celery workers"). :mod:`modelgate.celery_worker` calls :func:`preload` on
Celery's ``import_modules`` signal, :class:`modelgate.local_executor.PreloadingLocalExecutor`
before it forks its workers.
"""

from __future__ import annotations

import importlib
import logging
import time

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


def preload(logger_name: str) -> None:
    """Import :data:`PRELOADED` in this process. A module that fails to import is logged (on
    ``logger_name``) and left to the task that needs it, which then fails with the error in
    its own log."""
    log = logging.getLogger(logger_name)
    start = time.monotonic()
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # the task importing it reports the same error where it is read
            log.exception("could not preload %s", name)
    log.info("preloaded %d modules in %.1f s", len(PRELOADED), time.monotonic() - start)
