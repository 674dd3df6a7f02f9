"""Static consistency checks of docker-compose.yml, the Dockerfiles and docker/.

No Docker engine is needed: the compose file is parsed with PyYAML, its ``${VAR}``
references are resolved from docker/.env.example the way Compose would, and the values
are checked against what modelgate and the helper scripts read. The connections are fed
through modelgate's own Airflow-connection readers, and docker/entrypoint.sh is run with a
stand-in ``airflow`` program.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from support.celery_deployment import read_env_file

from modelgate.config import ENV_VARS, Settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / "docker" / ".env.example"
PG_INIT = REPO / "docker" / "postgres" / "init-databases.sh"
MINIO_INIT = REPO / "docker" / "minio" / "init.sh"
DOCKERFILES = {"cpu": REPO / "Dockerfile", "gpu": REPO / "Dockerfile.gpu"}
AIRFLOW_COMMANDS = ("api-server", "scheduler", "dag-processor", "triggerer", "celery")

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, ${NAME?message}; $$ is a "$".
_REF = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
_ESCAPED = re.compile(r"\$\$")
_SECRET_NAME = re.compile(r"(PASSWORD|SECRET|_KEY|TOKEN)$")
# user:password@ in a URL, where the password may be a ${...} reference with spaces in it
_URL_PASSWORD = re.compile(r"://[^:/@\s\"]+:(?P<pw>(?:\$\{[^}]*\}|[^@\s\"$])*)@")


# --- loading and Compose-style interpolation ------------------------------------------------

def _env_example() -> dict[str, str]:
    return read_env_file(ENV_EXAMPLE)


def _resolve(text: str, env: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        value = env.get(name)
        if op in (":-", ":?") and not value:
            value = None
        if value is None and op in ("-", ":-"):
            return arg
        if value is None:
            raise KeyError(f"${{{name}}} is not set and has no default")
        return value

    parts = _ESCAPED.split(text)  # keep "$$" out of the substitution
    return "$".join(_REF.sub(one, part) for part in parts)


def _walk_strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _walk_strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk_strings(value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def _environment(service: dict[str, Any]) -> dict[str, str]:
    """The service's variables as Compose sets them: its env_file, then ``environment``."""
    files = service.get("env_file") or []
    merged = {k: v for f in ([files] if isinstance(files, str) else files)
              for k, v in _env_file(REPO / f).items()}
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {**merged, **{str(k): str(v) for k, v in env.items()}}


def _resolved_env(service: dict[str, Any]) -> dict[str, str]:
    example = _env_example()
    return {k: _resolve(v, example) for k, v in _environment(service).items()}


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return command.split() if isinstance(command, str) else [str(c) for c in command]


def _workers(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in services.items() if _command(s)[:2] == ["celery", "worker"]}


def _airflow_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in services.items() if n.startswith("airflow-")}


# --- structure -----------------------------------------------------------------------------

def test_every_build_dockerfile_exists(services: dict[str, dict[str, Any]]) -> None:
    built = {n: s["build"] for n, s in services.items() if "build" in s}
    assert built, "no service builds an image"
    for name, build in built.items():
        context = REPO / build.get("context", ".")
        assert (context / build.get("dockerfile", "Dockerfile")).is_file(), name


def test_depends_on_names_existing_services_with_the_right_kind(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        deps = service.get("depends_on") or {}
        if isinstance(deps, list):
            deps = dict.fromkeys(deps, {"condition": "service_started"})
        for dep, spec in deps.items():
            assert dep in services, f"{name} depends on unknown service {dep!r}"
            condition = spec["condition"]
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep}'s health: none"
            if condition == "service_completed_successfully":
                assert services[dep].get("restart") == "no", f"{dep} is waited on to finish"


def test_named_volumes_are_declared_and_bind_mounts_exist(compose: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    used = set()
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume["source"]
            if source.startswith((".", "/")):
                assert (REPO / source).exists(), f"{name} mounts missing {source}"
            else:
                used.add(source)
    assert used <= declared, f"undeclared volumes {sorted(used - declared)}"
    assert declared <= used, f"declared but unused volumes {sorted(declared - used)}"


def test_dags_are_mounted_read_only_where_the_image_expects_them(
    services: dict[str, dict[str, Any]],
) -> None:
    assert "AIRFLOW_HOME=/opt/airflow" in DOCKERFILES["cpu"].read_text()
    for name, service in _airflow_services(services).items():
        assert "./dags:/opt/airflow/dags:ro" in service["volumes"], name
    assert (REPO / "dags" / "model_evaluation.py").is_file()


def test_scripts_run_by_containers_are_executable() -> None:
    # The postgres image *sources* a non-executable init script instead of running it.
    for script in (PG_INIT, MINIO_INIT, REPO / "docker" / "entrypoint.sh",
                   REPO / "docker" / "airflow" / "init.sh"):
        assert os.access(script, os.X_OK), f"{script.relative_to(REPO)} lost its x bit"


def test_host_ports_do_not_clash(services: dict[str, dict[str, Any]]) -> None:
    seen: dict[tuple[str, str], str] = {}
    for name, service in services.items():
        ports = service.get("ports", [])
        if ports:
            replicas = (service.get("deploy") or {}).get("replicas", 1)
            assert replicas == 1, f"{name}: {replicas} replicas cannot share host ports"
        for port in ports:
            parts = str(port).split(":")
            assert len(parts) in (2, 3), f"{name}: give host and container port in {port!r}"
            host = (parts[0], parts[1]) if len(parts) == 3 else ("0.0.0.0", parts[0])
            clash = [other for (ip, p), other in seen.items()
                     if p == host[1] and (ip == host[0] or "0.0.0.0" in (ip, host[0]))]
            assert not clash, f"{name} and {clash[0]} both publish host port {host[1]}"
            seen[host] = name


# --- variables and secrets -----------------------------------------------------------------

def test_every_referenced_variable_is_in_env_example_and_vice_versa() -> None:
    text = _ESCAPED.sub("", COMPOSE.read_text())
    referenced = {m["name"] for m in _REF.finditer(text)}
    assert not re.search(r"\$[A-Za-z_]", text), "use ${VAR}, not $VAR (or $$ for a literal $)"
    example = set(_env_example())
    assert referenced <= example, f"missing from .env.example: {sorted(referenced - example)}"
    assert example <= referenced, f"unused in docker-compose.yml: {sorted(example - referenced)}"


def test_env_example_holds_placeholders_only() -> None:
    for name, value in _env_example().items():
        if _SECRET_NAME.search(name) or name in ("MINIO_ROOT_USER", "S3_ACCESS_KEY"):
            assert value == "change-me", f"{name} in .env.example must be change-me"


def _only_references(value: str) -> bool:
    return bool(_REF.search(value)) and not _REF.sub("", value).strip()


def test_no_secret_literal_in_compose(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for key, value in _environment(service).items():
            if _SECRET_NAME.search(key):
                assert _only_references(value), f"{name}.{key} must come from .env"
    strings = list(_walk_strings(compose))
    passwords = [m["pw"] for text in strings for m in _URL_PASSWORD.finditer(text)]
    assert passwords, "no URL with a password found: the check below would pass vacuously"
    for password in passwords:
        assert _only_references(password), f"URL password {password!r} must come from .env"
    connections = [json.loads(t) for t in strings if t.lstrip().startswith("{")]
    assert connections
    for conn in connections:
        for key in ("login", "password"):
            assert _only_references(conn[key]), f"connection {key} must come from .env"


def test_modelgate_variables_are_known_to_modelgate(services: dict[str, dict[str, Any]]) -> None:
    names = {k for s in services.values() for k in _environment(s) if k.startswith("MODELGATE_")}
    for dockerfile in DOCKERFILES.values():
        names |= set(re.findall(r"\b(MODELGATE_[A-Z0-9_]+)=", dockerfile.read_text()))
    assert names, "no MODELGATE_* variable set anywhere"
    unknown = sorted(names - set(ENV_VARS))
    assert not unknown, f"not in modelgate.config.ENV_VARS: {unknown}"
    from modelgate.onnx.scoring import SessionSettings

    for service in services.values():  # and each value is one modelgate accepts
        env = {k: v for k, v in _resolved_env(service).items() if k.startswith("MODELGATE_")}
        Settings.from_env(env)
        SessionSettings.from_env(env)


# --- connections, databases and the bucket ----------------------------------------------------

def _connection_ids(env: dict[str, str]) -> tuple[str, str]:
    settings = Settings.from_env({k: v for k, v in env.items() if k.startswith("MODELGATE_")})
    return settings.db_conn_id, settings.s3_conn_id


def test_airflow_connections_are_the_ones_modelgate_looks_up(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        env = _resolved_env(service)
        expected = {f"AIRFLOW_CONN_{conn_id.upper()}" for conn_id in _connection_ids(env)}
        given = {k for k in env if k.startswith("AIRFLOW_CONN_")}
        assert given <= expected, f"{name}: {sorted(given - expected)} are never read"


@pytest.mark.parametrize("kind", ["db", "s3"])
def test_every_worker_can_reach_the_stores(services: dict[str, dict[str, Any]], kind: str) -> None:
    workers = _workers(services)
    assert workers, "no Celery worker"
    for name, service in workers.items():
        env = _resolved_env(service)
        db_id, s3_id = _connection_ids(env)
        if kind == "db":
            assert "MODELGATE_DATABASE_URL" in env or f"AIRFLOW_CONN_{db_id.upper()}" in env, name
        else:
            direct = {"MODELGATE_S3_ENDPOINT", "MODELGATE_S3_ACCESS_KEY", "MODELGATE_S3_SECRET_KEY"}
            assert direct <= set(env) or f"AIRFLOW_CONN_{s3_id.upper()}" in env, name


def _worker_env(services: dict[str, dict[str, Any]]) -> dict[str, str]:
    return _resolved_env(services["airflow-worker"])


def test_s3_connection_is_read_as_intended(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelgate.store.objects import _airflow_s3_settings

    env = _worker_env(services)
    conn = json.loads(env["AIRFLOW_CONN_MODELGATE_S3"])
    assert conn["conn_type"] == "aws"
    # the extra keys modelgate.store.objects reads (secure is derived from the URL scheme)
    assert {"endpoint_url", "bucket", "region_name"} <= set(conn["extra"])
    monkeypatch.setenv("AIRFLOW_CONN_MODELGATE_S3", env["AIRFLOW_CONN_MODELGATE_S3"])
    s3 = _airflow_s3_settings("modelgate_s3")
    assert s3 is not None
    minio_init = _resolved_env(services["minio-init"])
    assert (s3.endpoint, s3.secure) == (urlsplit(minio_init["S3_ENDPOINT"]).netloc, False)
    assert s3.access_key == minio_init["S3_ACCESS_KEY"]
    assert s3.secret_key == minio_init["S3_SECRET_KEY"]
    assert s3.bucket == minio_init["S3_BUCKET"]


def test_db_connection_is_read_as_intended(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelgate.store.db import _airflow_connection_url

    env = _worker_env(services)
    monkeypatch.setenv("AIRFLOW_CONN_MODELGATE_DB", env["AIRFLOW_CONN_MODELGATE_DB"])
    url = urlsplit(_airflow_connection_url("modelgate_db") or "")
    assert (url.scheme, url.hostname, url.port) == ("postgresql", "postgres", 5432)
    assert (url.username, url.path) == ("modelgate_app", "/modelgate")


def test_minio_init_creates_the_connections_bucket(services: dict[str, dict[str, Any]]) -> None:
    script = MINIO_INIT.read_text()
    assert re.search(r"^mc alias set local \"\$\{S3_ENDPOINT\}\"", script, re.M)
    assert re.search(r"^mc mb --ignore-existing \"local/\$\{S3_BUCKET\}\"", script, re.M)
    assert services["minio-init"]["entrypoint"][-1].endswith("minio-init.sh")
    bucket = _resolved_env(services["minio-init"])["S3_BUCKET"]
    endpoint = urlsplit(_resolved_env(services["minio-init"])["S3_ENDPOINT"])
    assert endpoint.hostname in services, "minio-init talks to a host that is not a service"
    for name, service in services.items():
        env = _resolved_env(service)
        if "MODELGATE_S3_BUCKET" in env:
            assert env["MODELGATE_S3_BUCKET"] == bucket, name
        if "AIRFLOW_CONN_MODELGATE_S3" in env:
            extra = json.loads(env["AIRFLOW_CONN_MODELGATE_S3"])["extra"]
            assert extra["bucket"] == bucket, name
            assert urlsplit(extra["endpoint_url"]).netloc == endpoint.netloc, name


def _pg_roles() -> dict[str, str]:
    """Login role -> the postgres container variable holding its password."""
    script = PG_INIT.read_text()
    psql_vars = dict(re.findall(r"-v (\w+)=\"\$\{(\w+)\}\"", script))
    roles = re.findall(r"CREATE ROLE (\w+) LOGIN PASSWORD :'(\w+)'", script)
    return {role: psql_vars[var] for role, var in roles}


def _reference(value: str) -> str:
    match = _REF.search(value)
    assert match, value
    return match["name"]


def test_postgres_init_creates_both_databases_and_the_roles_the_urls_use(
    services: dict[str, dict[str, Any]],
) -> None:
    script = PG_INIT.read_text()
    owners = dict(re.findall(r"CREATE DATABASE (\w+) OWNER (\w+);", script))
    assert set(owners) == {"airflow", "modelgate"}
    roles = _pg_roles()
    pg_env = _environment(services["postgres"])
    urls = [
        _environment(services["airflow-init"])["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"],
        _environment(services["airflow-init"])["MODELGATE_DATABASE_URL"],
        _environment(services["airflow-worker"])["AIRFLOW_CONN_MODELGATE_DB"],
    ]
    for url in urls:
        userinfo, _, location = url.split("://", 1)[1].rpartition("@")
        user, password = userinfo.split(":", 1)
        host, database = location.split("/", 1)
        assert (host, database in owners) == ("postgres:5432", True), url
        assert user in roles, f"{user} is not created by {PG_INIT.name}"
        # the URL's password is the very .env variable the init script gave that role
        assert _reference(password) == _reference(pg_env[roles[user]]), user


def test_task_role_gets_its_privileges_from_a_migration() -> None:
    script = PG_INIT.read_text()
    groups = re.findall(r"CREATE ROLE modelgate_app LOGIN PASSWORD :'\w+' IN ROLE (\w+);", script)
    assert groups == ["modelgate_writer"]
    migrations = "".join(p.read_text() for p in (REPO / "sql" / "migrations").glob("*.sql"))
    grant = r"GRANT [^;]*\bINSERT\b[^;]*ON ALL TABLES IN SCHEMA public\s+TO modelgate_writer"
    assert re.search(grant, migrations), "no migration lets modelgate_writer write the tables"


# --- Airflow -----------------------------------------------------------------------------------

def test_celery_executor_with_redis_and_two_workers(services: dict[str, dict[str, Any]]) -> None:
    for name, service in _airflow_services(services).items():
        env = _resolved_env(service)
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        assert urlsplit(env["AIRFLOW__CELERY__BROKER_URL"]).hostname == "redis", name
    assert services["redis"]["image"].startswith("redis:")
    assert services["airflow-worker"]["deploy"]["replicas"] == 2
    assert _command(services["airflow-worker-gpu"])[:2] == ["celery", "worker"]


def test_airflow_services_run_the_official_command_set(services: dict[str, dict[str, Any]]) -> None:
    commands = {_command(s)[0] for s in _airflow_services(services).values()}
    assert set(AIRFLOW_COMMANDS) <= commands


@pytest.fixture(scope="module")
def fake_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_dir = tmp_path_factory.mktemp("bin")
    for program in ("airflow", "modelgate"):
        fake = bin_dir / program
        fake.write_text(f'#!/bin/sh\necho "{program} $*"\n')
        fake.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["api-server"], "airflow api-server"), (["celery", "worker"], "airflow celery worker"),
     (["dag-processor"], "airflow dag-processor"), (["db", "migrate"], "airflow db migrate"),
     ([], "airflow --help"), (["modelgate", "db", "upgrade"], "modelgate db upgrade"),
     (["sh", "-c", "echo shell"], "shell")],
    ids=["api-server", "celery-worker", "dag-processor", "db-migrate", "no-args", "modelgate",
         "shell"],
)
def test_entrypoint_dispatch(fake_bin: Path, args: list[str], expected: str) -> None:
    out = subprocess.run(["bash", str(REPO / "docker" / "entrypoint.sh"), *args],
                         env={"PATH": f"{fake_bin}:/usr/bin:/bin"},
                         capture_output=True, text=True, check=False, timeout=30)
    assert (out.returncode, out.stdout.strip()) == (0, expected), out.stderr


def test_gpu_worker_profile_reserves_an_nvidia_device(services: dict[str, dict[str, Any]]) -> None:
    gpu = services["airflow-worker-gpu"]
    assert gpu["profiles"] == ["gpu"]
    assert gpu["build"]["dockerfile"] == "Dockerfile.gpu"
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]
    assert _resolved_env(gpu)["MODELGATE_ORT_PROVIDER"] == "cuda"
    assert all("profiles" not in s for n, s in services.items() if n != "airflow-worker-gpu")


# --- Dockerfiles ------------------------------------------------------------------------------

def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Dockerfile.gpu: one base stage per CUDA line, each naming its pyproject extra.
_GPU_STAGE = re.compile(r"^FROM nvidia/cuda:(?P<cuda>\d+)\.[\w.]*-cudnn-runtime-ubuntu[\d.]+ "
                        r"AS cuda(?P<name>\d+)\nENV ORT_EXTRA=(?P<extra>[\w-]+)$", re.M)


def _gpu_stages() -> dict[int, tuple[int, str]]:
    """Stage's CUDA major -> (major in the base image's tag, extra)."""
    return {int(m["name"]): (int(m["cuda"]), m["extra"])
            for m in _GPU_STAGE.finditer(DOCKERFILES["gpu"].read_text())}


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_each_dockerfile_installs_exactly_its_own_extra(variant: str) -> None:
    text = DOCKERFILES[variant].read_text()
    # the GPU image installs the extra its base stage names (ENV ORT_EXTRA, see below)
    extra = r"[a-z,]+" if variant == "cpu" else r"\$\{ORT_EXTRA\}"
    wanted = variant if variant == "cpu" else "${ORT_EXTRA}"
    installs = re.findall(r"pip install [^\n]*?\"?\.\[(" + extra + r")\]", text)
    assert installs == [wanted], installs
    assert len(re.findall(r"pip install [^\n]*?\"?\.\[", text)) == 1
    helper = re.findall(r"pyproject_requirements\.py pyproject\.toml \"?([\w${}]+)", text)
    assert helper == [wanted]
    assert ".[cpu" not in text if variant == "gpu" else ".[gpu" not in text
    assert "dev]" not in text
    assert "apache-airflow-providers-celery" in text and " redis" in text
    assert re.search(r"check_image\.py \"?" + re.escape(wanted) + r"(?![\w-])", text)


def test_gpu_dockerfile_builds_cuda_13_by_default_and_12_by_build_arg() -> None:
    text = DOCKERFILES["gpu"].read_text()
    stages = _gpu_stages()
    assert stages == {13: (13, "gpu"), 12: (12, "gpu-cu12")}
    assert re.search(r"^ARG CUDA_MAJOR=13$", text, re.M)
    assert re.search(r"^FROM cuda\$\{CUDA_MAJOR\}$", text, re.M)
    assert "ORT_GPU_REQUIREMENT" not in text  # the extras pin the wheels now
    check = _load(REPO / "docker" / "check_image.py")
    assert {extra: major for major, (_, extra) in stages.items()} == check.CUDA_MAJOR


@pytest.mark.parametrize("variant", ["cpu", "gpu", "gpu-cu12"])
def test_pyproject_extra_holds_one_onnxruntime(variant: str) -> None:
    helper = _load(REPO / "docker" / "pyproject_requirements.py")
    names = {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]
             for r in helper.requirements(REPO / "pyproject.toml", variant)}
    ort = {n for n in names if n.startswith("onnxruntime")}
    assert ort == {"onnxruntime" if variant == "cpu" else "onnxruntime-gpu"}
    assert _load(REPO / "docker" / "check_image.py").ORT_DISTRIBUTIONS[variant] in ort
    with pytest.raises(SystemExit, match="extra: expected one of"):
        helper.requirements(REPO / "pyproject.toml", "tpu")


@pytest.mark.parametrize(("extra", "inside", "outside"), [
    ("gpu", ["1.27.0", "1.31.1"], ["1.26.0", "2.0.0"]),
    ("gpu-cu12", ["1.19.0", "1.26.0"], ["1.18.1", "1.27.0"]),
], ids=["cuda13", "cuda12"])
def test_gpu_extras_pin_ort_to_their_cuda_line(extra: str, inside: list[str],
                                               outside: list[str]) -> None:
    # onnxruntime-gpu on PyPI: CUDA 12 + cuDNN 9 wheels for 1.19 to 1.26, CUDA 13 from 1.27.
    helper = _load(REPO / "docker" / "pyproject_requirements.py")
    pins = [r for r in helper.requirements(REPO / "pyproject.toml", extra)
            if r.startswith("onnxruntime-gpu")]
    assert len(pins) == 1
    allowed = SpecifierSet(pins[0].removeprefix("onnxruntime-gpu"))
    assert all(v in allowed for v in inside) and not any(v in allowed for v in outside)
    major = {"gpu": 13, "gpu-cu12": 12}[extra]  # and the stage building it has that CUDA
    assert _gpu_stages()[major] == (major, extra)


@pytest.mark.parametrize(
    ("requires", "major"),
    [(['nvidia-cuda-runtime-cu12~=12.0; extra == "cuda"'], 12),
     (['nvidia-cuda-runtime~=13.0; extra == "cuda"', "numpy"], 13),
     (["numpy>=1.21.6", "protobuf"], None)],
    ids=["ort-1.26-cu12", "ort-1.28-cu13", "no-cuda-extra"],
)
def test_image_check_reads_the_cuda_major(requires: list[str], major: int | None) -> None:
    # requirement strings as published in onnxruntime-gpu 1.26.0 and 1.28.0's metadata
    assert _load(REPO / "docker" / "check_image.py").cuda_major_required(requires) == major


def test_python_version_of_both_images_is_3_11() -> None:
    assert re.search(r"ARG PYTHON_IMAGE=python:3\.11-slim", DOCKERFILES["cpu"].read_text())
    assert "python3.11 -m venv /opt/venv" in DOCKERFILES["gpu"].read_text()


# --- metrics: Airflow -> statsd-exporter -> Prometheus ---------------------------------------

def _flags(service: dict[str, Any]) -> dict[str, str]:
    return dict(arg.removeprefix("--").split("=", 1) for arg in _command(service)
                if arg.startswith("--") and "=" in arg)


def test_airflow_sends_metrics_to_the_statsd_exporter(services: dict[str, dict[str, Any]]) -> None:
    exporter = services["statsd-exporter"]
    assert exporter["image"].startswith("prom/statsd-exporter:")
    udp_port = _flags(exporter)["statsd.listen-udp"].rsplit(":", 1)[1]
    for name, service in _airflow_services(services).items():
        env = _resolved_env(service)
        assert env["AIRFLOW__METRICS__STATSD_ON"] == "True", name
        assert env["AIRFLOW__METRICS__STATSD_HOST"] == "statsd-exporter", name
        assert env["AIRFLOW__METRICS__STATSD_PORT"] == udp_port, name
        # without the InfluxDB tag style the model and version tags never leave Airflow
        assert env["AIRFLOW__METRICS__STATSD_INFLUXDB_ENABLED"] == "True", name
        assert "statsd-exporter" in service["depends_on"], name


def test_exporter_mapping_names_every_documented_metric(services: dict[str, dict[str, Any]]) -> None:
    from modelgate.gauges import drift_metrics, evidence_metrics, gate_metrics

    exporter = services["statsd-exporter"]
    config_path = _flags(exporter)["statsd.mapping-config"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in exporter["volumes"]}
    mapping = yaml.safe_load((REPO / mounts[config_path]).read_text())["mappings"]
    prefix = _resolved_env(services["airflow-worker"])["AIRFLOW__METRICS__STATSD_PREFIX"]
    sent = {m.name for m in gate_metrics("m", "1", passed=True, checks_breached=0)}
    sent |= {m.name for m in drift_metrics("m", "1", drifting=True, features_breached=1,
                                           adwin_change_points=0, multivariate=(1.0, 0.5),
                                           attribution=(0.2, 0.1))}
    sent |= {m.name for m in evidence_metrics("m", "1", insufficient=False, features_insufficient=0,
                                              rows_set_aside=0)}
    assert {rule["match"] for rule in mapping} == {f"{prefix}.{name}" for name in sent}
    readme = "\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
    for rule in mapping:
        assert re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", rule["name"]), rule  # Prometheus name
        assert rule["name"] == rule["match"].removeprefix(f"{prefix}.").replace(".", "_")
        assert rule["help"]
    assert "modelgate_gate_passed" in readme and "9102" in readme
