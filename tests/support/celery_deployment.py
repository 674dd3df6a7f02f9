"""A real Airflow 3.3 CeleryExecutor deployment on one host, for the distributed tier.

What runs: a Redis of its own (``/usr/bin/redis-server`` on a free port, no persistence,
so a test may restart it; the machine's shared Redis on 6379 is never touched), a fresh
PostgreSQL metadata database (also Celery's result backend), ``airflow api-server``,
``dag-processor``, ``scheduler`` and Celery workers, each with its own hostname (as
``task_instance.hostname`` records it, see ``tests/support/worker_hostname.py``), its own
``MODELGATE_HOME`` and its own log folder: workers share nothing but PostgreSQL and the
object store. The executor settings are read from ``docker/celery.env``, the file
docker-compose.yml loads, so the test and the compose deployment run alike.

Each worker reaches the object store through an :class:`S3Gate`, a small HTTP proxy the
test controls: it can hold a partition's download open (the response trickles one byte a
second, so no client timeout fires) until the test releases it. Faults are caused on
events seen there or in the metadata database, never after a fixed sleep.

The process helpers are copied from tests/e2e/test_e2e_scheduler.py rather than imported:
that module's helpers are being changed in parallel and importing it would also collect
its test.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg2
from conftest import REPO, _admin, _free_port, database_url, pg_admin_url

CELERY_ENV = REPO / "docker" / "celery.env"
REDIS_SERVER = "/usr/bin/redis-server"
AIRFLOW = [sys.executable, "-m", "airflow"]
POLL_S = 0.5
# Settings of the test tier that differ from docker/celery.env, each with its reason. The tier's
# Redis keeps nothing on disk, so a broker restart loses the queued messages; the scheduler must
# re-send them within the test's minutes, not after production's slot-wait allowance.
TEST_TIER_SETTINGS = {"AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "120"}


def read_env_file(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of a Compose env file (comments and blanks skipped)."""
    values = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def celery_env() -> dict[str, str]:
    """The shared executor settings of ``docker/celery.env``."""
    return read_env_file(CELERY_ENV)


def wait_for(what: str, check: Callable[[], Any], timeout_s: float,
             alive: Callable[[], None] = lambda: None) -> Any:
    """Poll ``check`` until it returns something truthy; ``alive`` raises when a process died."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive()
        found = check()
        if found:
            return found
        time.sleep(POLL_S)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _wait_port(port: int, timeout_s: float) -> None:
    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    wait_for(f"port {port}", listening, timeout_s)


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (task supervisors start process groups of their own)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> None:
    for one in _descendants(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(one, sig)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process (a Celery worker's warm shutdown); after 30 s, SIGKILL it and
    whatever is left below it (collected first: orphans are re-parented)."""
    below = _descendants(proc.pid)
    if proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    for one in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(one, signal.SIGKILL)
    proc.wait(timeout=10)


class RedisBroker:
    """A private redis-server with no persistence: a restart loses every queued message."""

    def __init__(self, root: Path) -> None:
        self.port = _free_port()
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if not Path(REDIS_SERVER).exists():
            raise RuntimeError(f"{REDIS_SERVER} is missing: install Debian's redis-server package")
        self.starts += 1
        log = open(self.root / f"redis-{self.starts}.log", "wb")  # noqa: SIM115 - the server keeps it
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(self.root)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_port(self.port, 30)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


class S3Gate:
    """An HTTP proxy in front of the S3 server that can hold partition downloads.

    With ``holding`` set, a GET of an object whose path holds :attr:`pattern` (default a
    held-out partition under ``datasets/``) sets :attr:`seen` and its response trickles one
    byte a second until :meth:`release`; everything else is forwarded as it is (moto does
    not check signatures; the Host header is kept).
    """

    def __init__(self, upstream: str, name: str) -> None:
        self.upstream = upstream
        self.name = name
        self.holding = False
        self.pattern = "/datasets/"
        self.seen = threading.Event()
        self.released = threading.Event()
        self.held_paths: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.endpoint = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hold(self, pattern: str = "/datasets/") -> None:
        self.pattern = pattern
        self.seen.clear()
        self.released.clear()
        self.holding = True

    def release(self) -> None:
        self.holding = False
        self.released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        gate = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                host, port = gate.upstream.rsplit(":", 1)
                conn = http.client.HTTPConnection(host, int(port), timeout=300)
                try:
                    conn.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                    response = conn.getresponse()
                    data = response.read()
                finally:
                    conn.close()
                self.send_response_only(response.status, response.reason)
                for name, value in response.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                if self.command == "HEAD":
                    self.send_header("Content-Length", response.getheader("Content-Length") or "0")
                    self.end_headers()
                    return
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                held = (gate.holding and self.command == "GET"
                        and gate.pattern in self.path.split("?", 1)[0] and response.status == 200)
                sent = 0
                if held:
                    gate.held_paths.append(self.path.split("?", 1)[0])
                    gate.seen.set()
                    while not gate.released.is_set() and sent < len(data) - 1:
                        self.wfile.write(data[sent:sent + 1])
                        self.wfile.flush()
                        sent += 1
                        gate.released.wait(1.0)
                self.wfile.write(data[sent:])

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        return Handler


@dataclass
class Worker:
    """One Celery worker: its name is its Celery hostname and its task instances' hostname."""

    name: str
    env: dict[str, str]
    logs: Path
    queues: str = "default"
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        self.starts += 1
        with open(self.logs / f"worker-{self.name}-{self.starts}.log", "wb") as sink:
            self.proc = subprocess.Popen(
                [*AIRFLOW, "celery", "worker", "--celery-hostname", self.name, "--queues", self.queues,
                 "--skip-serve-logs", "--without-mingle", "--without-gossip"],
                env=self.env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)

    def kill9(self) -> None:
        """kill -9 of the worker and every process below it (its running tasks too)."""
        assert self.proc is not None
        kill_tree(self.proc.pid)
        self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


@dataclass
class Deployment:
    """Airflow with the CeleryExecutor, a private Redis broker and two or more workers."""

    root: Path
    dag_files: tuple[str, ...]
    base_env: dict[str, str]
    s3_endpoint: str
    worker_names: tuple[str, ...] = ("worker-a", "worker-b")
    meta_url: str = ""
    broker: RedisBroker | None = None
    env: dict[str, str] = field(default_factory=dict)
    services: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: dict[str, Worker] = field(default_factory=dict)
    gates: dict[str, S3Gate] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # made before start(), so a test can hold downloads of a run the scheduler starts at once
        self.gates = {worker: S3Gate(self.s3_endpoint, worker) for worker in self.worker_names}

    def start(self) -> None:
        name = f"airflow_celery_{uuid.uuid4().hex[:10]}"
        _admin(f"CREATE DATABASE {name}")
        self.meta_url = database_url(pg_admin_url(), name)
        self.logs = self.root / "logs"
        self.logs.mkdir(parents=True)
        self.broker = RedisBroker(self.root)
        self.broker.start()
        self.env = self._env(name)
        subprocess.run([*AIRFLOW, "db", "migrate"], env=self.env, check=True, capture_output=True,
                       timeout=600)
        port = self.env["AIRFLOW__API__PORT"]
        for command in (["api-server", "--host", "127.0.0.1", "--port", port, "--workers", "1"],
                        ["dag-processor"], ["scheduler"]):
            with open(self.logs / f"{command[0]}.log", "wb") as sink:
                self.services.append(subprocess.Popen(
                    [*AIRFLOW, *command], env=self.env, stdout=sink, stderr=subprocess.STDOUT,
                    start_new_session=True))
        for worker in self.worker_names:
            self.workers[worker] = Worker(worker, self.worker_env(worker), self.logs)
            self.workers[worker].start()
        _wait_port(int(port), 300)
        wait_for("both DAGs parsed", self._dags_parsed, 300, self.check_alive)
        wait_for("workers ready", self._workers_ready, 300, self.check_alive)

    def _env(self, meta_db: str) -> dict[str, str]:
        base = database_url(pg_admin_url(), meta_db).split("://", 1)[1]
        dags = self.root / "dags"
        dags.mkdir()
        for dag in self.dag_files:
            (dags / dag).symlink_to(REPO / "dags" / dag)
        assert self.broker is not None
        return {**self.base_env, **celery_env(), **TEST_TIER_SETTINGS,
                "AIRFLOW_HOME": str(self.root / "airflow"),
                "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://{base}",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": f"postgresql+asyncpg://{base}",
                "AIRFLOW__CELERY__BROKER_URL": self.broker.url,
                "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql+psycopg2://{base}",
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex,
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
                "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO"} | self._api_port()

    @staticmethod
    def _api_port() -> dict[str, str]:
        port = _free_port()
        return {"AIRFLOW__API__PORT": str(port),
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/"}

    def worker_env(self, worker: str, **overrides: str) -> dict[str, str]:
        """A worker's own home, log folder, hostname and way to the object store."""
        home = self.root / worker
        return {**self.env,
                "MODELGATE_HOME": str(home / "modelgate"),
                "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
                "AIRFLOW__CORE__HOSTNAME_CALLABLE": "support.worker_hostname.hostname",
                "MODELGATE_TEST_WORKER_HOSTNAME": worker,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "tests"),
                                                            self.env.get("PYTHONPATH")])),
                "MODELGATE_S3_ENDPOINT": self.gates[worker].endpoint,
                **overrides}

    def restart_worker(self, worker: str, **overrides: str) -> None:
        self.workers[worker].stop()
        self.workers[worker].env = self.worker_env(worker, **overrides)
        self.workers[worker].start()
        wait_for(f"{worker} ready", self._workers_ready, 300, self.check_alive)

    def check_alive(self) -> None:
        dead = [p.args for p in self.services if p.poll() is not None]
        dead += [w.name for w in self.workers.values() if w.proc is not None and w.proc.poll() is not None]
        if dead:
            raise RuntimeError(f"deployment processes exited: {dead}\n{self.log_tails()}")

    def log_tails(self, chars: int = 2500) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-chars:]}"
                         for f in sorted(self.logs.iterdir()))

    def stop(self) -> None:
        for worker in self.workers.values():
            worker.stop()
        for proc in self.services:
            stop_process(proc)
        for gate in self.gates.values():
            gate.close()
        if self.broker is not None:
            self.broker.stop()
        if self.meta_url:
            _admin(f"DROP DATABASE IF EXISTS {self.meta_url.rsplit('/', 1)[1].split('?')[0]} WITH (FORCE)")

    # --- the metadata database ------------------------------------------------------------

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = psycopg2.connect(self.meta_url)
        try:
            with conn, conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def _dags_parsed(self) -> bool:
        rows = self.query("SELECT dag_id FROM serialized_dag")
        return {r[0] for r in rows} >= {f.removesuffix(".py") for f in self.dag_files}

    def _workers_ready(self) -> bool:
        """Every started worker's log says Celery is ready (it consumes its queues)."""
        return all(w.proc is None or " ready." in (self.logs / f"worker-{w.name}-{w.starts}.log")
                   .read_text(errors="replace") for w in self.workers.values())

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> str:
        run_id = f"celery__{uuid.uuid4().hex[:12]}"
        subprocess.run([*AIRFLOW, "dags", "trigger", dag_id, "--run-id", run_id, "--conf",
                        json.dumps(conf)], env=self.env, check=True, capture_output=True, timeout=300)
        return run_id

    def run_state(self, run_id: str) -> str | None:
        rows = self.query("SELECT state FROM dag_run WHERE run_id = %s", (run_id,))
        return str(rows[0][0]) if rows else None

    def wait_run(self, run_id: str, timeout_s: float = 600) -> str:
        done = wait_for(f"DAG run {run_id}", lambda: self.run_state(run_id) in ("success", "failed"),
                        timeout_s, self.check_alive)
        assert done
        return str(self.run_state(run_id))

    def tries(self, run_id: str, task_id: str | None = None) -> list[tuple[Any, ...]]:
        """(task_id, map_index, try_number, state, hostname) of every try, retried ones included."""
        where = "run_id = %s" + (" AND task_id = %s" if task_id else "")
        args = (run_id, task_id) if task_id else (run_id,)
        cols = "task_id, map_index, try_number, state, hostname"
        return self.query(f"SELECT {cols} FROM task_instance WHERE {where} UNION ALL "
                          f"SELECT {cols} FROM task_instance_history WHERE {where} ORDER BY 1, 2, 3",
                          args + args)

    def running_on(self, run_id: str, task_id: str, worker: str) -> list[tuple[Any, ...]]:
        return self.query("SELECT map_index FROM task_instance WHERE run_id = %s AND task_id = %s "
                          "AND state = 'running' AND hostname = %s", (run_id, task_id, worker))

    def try_logs(self, worker: str) -> Iterator[Path]:
        yield from (self.root / worker / "logs").rglob("*.log")
