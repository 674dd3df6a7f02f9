"""docker-compose.yml and the distributed test tier run one set of executor settings.

The settings live in docker/celery.env only: every Airflow service of the compose file
loads it and overrides none of its keys, and tests/support/celery_deployment.py starts its
deployment from the same file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from support.celery_deployment import CELERY_ENV, celery_env

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def airflow_services() -> dict[str, dict[str, Any]]:
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    return {name: s for name, s in services.items() if name.startswith("airflow-")}


def test_the_test_deployment_reads_the_compose_file_env_file(
        airflow_services: dict[str, dict[str, Any]]) -> None:
    assert CELERY_ENV == REPO / "docker" / "celery.env"
    for name, service in airflow_services.items():
        files = service.get("env_file")
        assert files == "docker/celery.env", name


def test_no_service_overrides_a_shared_executor_setting(
        airflow_services: dict[str, dict[str, Any]]) -> None:
    shared = celery_env()
    for name, service in airflow_services.items():
        assert not set(service.get("environment") or {}) & set(shared), name


def test_shared_settings_are_the_celery_executor_with_late_acks() -> None:
    shared = celery_env()
    assert shared["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert shared["AIRFLOW__CELERY__TASK_ACKS_LATE"] == "True"  # a killed worker loses no message
    assert int(shared["AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER"]) == 1
    assert all(not k.startswith("MODELGATE_") and "PASSWORD" not in k for k in shared)


def test_result_backend_names_the_installed_postgresql_driver(
        airflow_services: dict[str, dict[str, Any]]) -> None:
    # SQLAlchemy 2.1's default driver for postgresql:// is psycopg 3, which is not installed:
    # a worker with that URL fails to import its result backend and never starts.
    for name, service in airflow_services.items():
        backend = (service.get("environment") or {})["AIRFLOW__CELERY__RESULT_BACKEND"]
        assert backend.startswith("db+postgresql+psycopg2://"), name
