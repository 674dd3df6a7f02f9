"""docs/deploying.md's deployment steps agree with the code they describe: the results database's
roles are those compose creates, the DAGs it unpauses exist, and the REST API body it sends to
clear a manual run is one Airflow accepts (and does not leave as a dry run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPLOYING = (REPO / "docs" / "deploying.md").read_text()
SECTION = DEPLOYING.split("### The results database and the first runs", 1)[1].split("\n## ", 1)[0]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", SECTION, flags=re.S)


def test_the_roles_are_the_ones_compose_creates() -> None:
    (sql,) = _blocks("sql")
    script = (REPO / "docker" / "postgres" / "init-databases.sh").read_text()
    compose = {re.sub(r"PASSWORD :'\w+'", "PASSWORD '...'", line.strip())
               for line in script.splitlines() if "modelgate" in line and line.strip().endswith(";")}
    assert {line.strip() for line in sql.strip().splitlines()} == compose


def test_the_owner_migrates_and_the_app_role_runs_the_tasks() -> None:
    first = _blocks("sh")[0]
    assert re.search(r"^MODELGATE_DATABASE_URL=postgresql://modelgate_owner:\S+ modelgate db upgrade$",
                     first, flags=re.M)
    assert "export MODELGATE_DATABASE_URL=postgresql://modelgate_app:" in first
    assert "ALTER VIEW analytics.model_versions OWNER TO modelgate_writer" in (
        REPO / "sql" / "migrations" / "0004_analyst_views_and_roles.sql").read_text()


def test_the_unpaused_dags_exist() -> None:
    named = set(re.findall(r"^airflow dags unpause (\w+)$", _blocks("sh")[1], flags=re.M))
    defined = {m for f in (REPO / "dags").glob("*.py")
               for m in re.findall(r'dag_id="(\w+)"', f.read_text())}
    assert named == defined == {"model_evaluation", "drift_monitoring"}


def test_the_clear_request_is_one_airflow_accepts() -> None:
    from airflow.api_fastapi.core_api.datamodels.task_instances import ClearTaskInstancesBody

    curl = _blocks("sh")[2]
    assert "/api/v2/dags/drift_monitoring/clearTaskInstances" in curl and "/auth/token" in curl
    body = json.loads(re.findall(r"-d '(\{.*?\})'", curl)[-1])
    parsed = ClearTaskInstancesBody.model_validate(body)
    assert parsed.dry_run is False and parsed.dag_run_id and parsed.only_failed
    assert ClearTaskInstancesBody.model_validate({}).dry_run is True  # why the doc sets it


def test_the_result_backend_url_names_psycopg2() -> None:
    assert "db+postgresql+psycopg2://USER:PASSWORD@HOST:5432/airflow" in DEPLOYING
    assert "No module named\n  'psycopg'" in DEPLOYING or "No module named 'psycopg'" in DEPLOYING


def test_the_executor_is_the_one_the_scheduler_tests_run(tmp_path: Path) -> None:
    from support.airflow_deployment import deployment_env

    without_docker = DEPLOYING.split("### Airflow without Docker", 1)[1].split("\n### ", 1)[0]
    (named,) = re.findall(r"AIRFLOW__CORE__EXECUTOR=(\S+)", without_docker)
    assert named == deployment_env(tmp_path, "unused", [], {})["AIRFLOW__CORE__EXECUTOR"]
    module, _, name = named.rpartition(".")
    assert name in vars(__import__(module, fromlist=[name]))
