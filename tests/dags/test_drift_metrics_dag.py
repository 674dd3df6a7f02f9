"""Multivariate and attribution drift in a real drift_monitoring run, and the metrics it sends
through Airflow's StatsD client to a UDP listener on loopback (dag.test(), real PG and S3)."""

from __future__ import annotations

import datetime as dt
import socket
from pathlib import Path
from typing import Any

import pytest
from support.statsd_lines import gauges as _gauges
from support.statsd_lines import received as _received

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

UTC = dt.UTC


@pytest.fixture()
def production(settings_env: Settings, airflow_db: Path, demo_builds: dict[str, Any],
               monkeypatch: pytest.MonkeyPatch) -> Context:
    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "0")
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    return ctx


@pytest.mark.e2e  # a DAG run
def test_drift_run_stores_joint_drift_and_sends_documented_metrics(
    production: Context, demo_builds: dict[str, Any], statsd_listener: socket.socket,
) -> None:
    from modelgate.airflow_runner import run_dag

    build = demo_builds["1"]
    # 1993: clear drift from the 1974-1990 reference, per feature (age W1/std 0.128 over 0.1,
    # occupation JS 0.017 over 0.01; scipy) and jointly (sliced W2 0.125 over its threshold
    # 0.092; 1991 would be 0.1005 over 0.0968, too close to call a clear case)
    day = list(build.live_dates)[1]
    conf = {"model_name": "gss-high-income", "live": str(build.live_dir), "labels": str(build.labels_dir),
            "reference": str(build.reference_path), "sample_size": 2000}
    # a manual run reads the last whole daily interval before its logical date: ``day``
    dagrun = run_dag("drift_monitoring", conf=conf,
                     logical_date=dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), UTC))
    assert str(dagrun.state) == "failed"  # drift found: decide fails the run
    url = production.db_url
    ((run_id, n_breached, verdict, report_key),) = fetch_all(
        url, "SELECT drift_run_id, n_features_breached, verdict, report_key FROM drift_run")
    ((mv_value, mv_threshold, mv_verdict, n_features),) = fetch_all(
        url, "SELECT statistic_value, threshold, verdict, n_features FROM multivariate_drift")
    ((at_value, at_threshold, n_explained),) = fetch_all(
        url, "SELECT statistic_value, threshold, n_current FROM attribution_drift")
    shares = fetch_all(url, "SELECT feature, reference_share, current_share FROM attribution_drift_share")
    assert verdict == "drift" and n_breached >= 2
    assert n_features == 3 and mv_verdict == "drift" and n_explained == 50
    assert len(shares) == 7
    assert sum(r[1] for r in shares) == pytest.approx(1.0) and sum(r[2] for r in shares) == pytest.approx(1.0)
    # the distance stored is the one the stored shares give
    assert at_value == pytest.approx(0.5 * sum(abs(r[1] - r[2]) for r in shares), rel=1e-9)
    analyst = fetch_all(url, "SELECT count(*) FROM analytics.attribution_drift_by_interval "
                             "WHERE drift_run_id = %s", (run_id,))
    assert analyst == [(7,)]
    html = production.store.get_bytes(report_key).decode()
    assert "Multivariate and attribution drift" in html and "Attribution profile" in html

    lines = _received(statsd_listener)
    gauges = _gauges(lines, "gss-high-income")
    changes = fetch_all(url, "SELECT count(*) FROM concept_drift_change WHERE drift_run_id = %s", (run_id,))
    assert gauges == pytest.approx({
        "modelgate.drift.drifting": float(verdict == "drift"),
        "modelgate.drift.features_breached": float(n_breached),
        "modelgate.drift.adwin_change_points": float(changes[0][0]),
        "modelgate.drift.multivariate": mv_value,
        "modelgate.drift.multivariate_threshold": mv_threshold,
        "modelgate.drift.attribution": at_value,
        "modelgate.drift.attribution_threshold": at_threshold,
        "modelgate.drift.insufficient_data": 0.0,
        "modelgate.drift.features_insufficient": 0.0,
        "modelgate.drift.rows_set_aside": 0.0,
    }, rel=1e-9)
    ours = [line for line in lines if line.startswith("airflow.modelgate.")]
    assert len(ours) == 10 and all(",model=gss-high-income,version=1:" in line for line in ours)


def test_gate_metrics_reach_a_statsd_listener(statsd_listener: socket.socket) -> None:
    from modelgate.gauges import emit, gate_metrics

    emit(gate_metrics("churn", "7", passed=False, checks_breached=2))
    lines = [ln for ln in _received(statsd_listener) if "modelgate" in ln]
    assert lines == ["airflow.modelgate.gate.passed,model=churn,version=7:0.0|g",
                     "airflow.modelgate.gate.checks_breached,model=churn,version=7:2.0|g"]


def test_metrics_are_not_sent_when_no_backend_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.gauges import emit, gate_metrics

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_ON", "False")
    monkeypatch.setenv("AIRFLOW__METRICS__STATSD_PORT", str(sock.getsockname()[1]))
    emit(gate_metrics("churn", "7", passed=True, checks_breached=0))
    assert _received(sock) == []
    sock.close()


@pytest.mark.parametrize(("environ", "cfg", "on"), [
    ({}, None, False),
    ({"AIRFLOW__METRICS__STATSD_ON": "True"}, None, True),
    ({"AIRFLOW__METRICS__OTEL_ON": "true"}, None, True),
    ({}, "[metrics]\nstatsd_on = True\n", True),
    ({"AIRFLOW__METRICS__STATSD_ON": "False"}, "[metrics]\nstatsd_on = True\n", False),
    ({}, "[metrics]\nstatsd_on = False\n", False),
    ({"AIRFLOW__METRICS__STATSD_ON_CMD": "echo True"}, None, True),
], ids=["nothing", "statsd-env", "otel-env", "cfg", "env-over-cfg", "cfg-off", "cmd"])
def test_a_process_without_airflow_imports_it_only_when_a_backend_may_be_on(
    environ: dict[str, str], cfg: str | None, on: bool, tmp_path: Path,
) -> None:
    """The CLI emits gate metrics too; importing Airflow to learn that nothing listens cost
    about 4 s of every `modelgate evaluate`."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__METRICS__")}
    env.update(environ, AIRFLOW_HOME=str(tmp_path))
    env.pop("AIRFLOW_CONFIG", None)
    if cfg is not None:
        (tmp_path / "airflow.cfg").write_text(cfg)
    script = ("import json, sys\nfrom modelgate.gauges import _backend_may_be_on\n"
              "print(json.dumps([_backend_may_be_on(), 'airflow' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == [on, False]
