"""Celery settings for the workers of Airflow's CeleryExecutor that run modelgate's DAGs.

Airflow's own settings (``DEFAULT_CELERY_CONFIG``), and modelgate's heavy modules imported
once in each worker before it starts its pool (:mod:`modelgate.task_preload`). Every task is
a process forked from its worker (Airflow's task supervisor), so what the worker has imported
each task has for free; Airflow preloads its own operators and numpy the same way, on the
same Celery signal (``celery_executor_utils.on_celery_import_modules``).

Set ``AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS=modelgate.celery_worker.CELERY_CONFIG`` on
every Airflow service (``docker/celery.env``). The scheduler builds the same Celery app to
send tasks but never sends ``import_modules``, so it imports none of them.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG
from celery.signals import import_modules

from modelgate.task_preload import PRELOADED
from modelgate.task_preload import preload as preload_task_modules

__all__ = ["CELERY_CONFIG", "PRELOADED", "preload"]

#: Airflow's Celery settings, unchanged: this module only adds the preload below.
CELERY_CONFIG: dict[str, Any] = dict(DEFAULT_CELERY_CONFIG)


@import_modules.connect
def preload(*args: Any, **kwargs: Any) -> None:
    """Import :data:`PRELOADED` in this worker (Celery's ``import_modules`` signal, sent once
    when a worker starts, before its pool); :func:`modelgate.task_preload.preload`."""
    preload_task_modules("modelgate.celery_worker")
