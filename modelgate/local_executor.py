"""Airflow's LocalExecutor with modelgate's task modules imported before it forks its workers.

The LocalExecutor runs each task in a process forked from one of its workers, and forks the
workers from the scheduler when it starts (Linux's ``fork`` start method). Importing the task
modules (:data:`modelgate.task_preload.PRELOADED`: pandas, pyarrow, ONNX Runtime and the
pipeline steps) in the scheduler just before that gives every task them for free, as
:mod:`modelgate.celery_worker` does for Celery workers; without it each task imports them anew,
1-1.5 s a task on 2 cores (``bench/RESULTS.md``, "The LocalExecutor with the task modules
preloaded"). The scheduler then holds those modules too (about 180 MB, shared with its workers
until written to).

Set ``AIRFLOW__CORE__EXECUTOR=modelgate.local_executor.PreloadingLocalExecutor`` on every
Airflow process (docs/deploying.md). Everything else is the LocalExecutor's own: the same
workers, parallelism, log serving and callbacks. Where workers are not forked (the ``spawn``
start method) each starts a fresh interpreter, and nothing is preloaded.
"""

from __future__ import annotations

from airflow.executors.local_executor import LocalExecutor

from modelgate.task_preload import preload

__all__ = ["PreloadingLocalExecutor"]


class PreloadingLocalExecutor(LocalExecutor):
    """:class:`~airflow.executors.local_executor.LocalExecutor` that imports
    :data:`~modelgate.task_preload.PRELOADED` before it forks its workers."""

    def start(self) -> None:
        """Preload the task modules (when workers are forked), then start as the LocalExecutor."""
        if self.is_mp_using_fork:
            preload("modelgate.local_executor")
        super().start()
