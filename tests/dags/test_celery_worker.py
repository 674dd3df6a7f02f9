"""modelgate's Celery settings: Airflow's own, and a preload that imports the task modules."""

from __future__ import annotations

import subprocess
import sys

import pytest
from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG
from support.celery_deployment import celery_env

from modelgate import celery_worker


def test_the_settings_are_airflows_own() -> None:
    assert celery_worker.CELERY_CONFIG == DEFAULT_CELERY_CONFIG
    assert celery_worker.CELERY_CONFIG is not DEFAULT_CELERY_CONFIG


def test_the_deployment_settings_name_them() -> None:
    assert celery_env()["AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS"] == "modelgate.celery_worker.CELERY_CONFIG"


@pytest.mark.e2e  # a fresh interpreter importing Airflow and every task module: 5-6 s
def test_celerys_import_modules_signal_imports_every_task_module() -> None:
    """In a fresh interpreter: importing the settings imports none of the task modules (the
    scheduler imports the settings too); the worker's signal imports all of them."""
    code = (
        "import sys\n"
        "from celery.signals import import_modules\n"
        "from modelgate import celery_worker\n"
        "late = [m for m in celery_worker.PRELOADED if m.startswith('modelgate.pipelines')]\n"
        "assert not [m for m in late if m in sys.modules], [m for m in late if m in sys.modules]\n"
        "import_modules.send(sender=None)\n"
        "missing = [m for m in celery_worker.PRELOADED if m not in sys.modules]\n"
        "assert not missing, missing\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
