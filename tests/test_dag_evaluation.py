"""The model_evaluation DAG end to end with Airflow's dag.test(), real PostgreSQL and S3, and
the gate gauges it sends through Airflow's StatsD client to a UDP listener on loopback."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from statsd_lines import gauges, received

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import transaction


def _run(version: str, dataset: Path, policy: str = "", *, allow_looser: bool = False) -> Any:
    from modelgate.airflow_runner import run_dag

    return run_dag("model_evaluation", conf={
        "model_name": "gss-high-income", "model_version": version,
        "dataset": str(dataset), "policy": policy, "allow_looser_policy": allow_looser,
    })


def _gate_rows(url: str, version: str) -> list[tuple[Any, ...]]:
    with transaction(url) as cur:
        cur.execute(
            """SELECT c.check_id, c.verdict, c.severity, c.reason FROM gate_check c
               JOIN evaluation_run r USING (evaluation_run_id)
               JOIN model_version mv ON mv.model_version_id = r.model_version_id
               WHERE mv.version = %s ORDER BY c.check_id""",
            (version,),
        )
        return cur.fetchall()


def _assert_gate_gauges(sock: socket.socket, url: str, version: str, *, passed: bool) -> None:
    """The run's two gate gauges arrived once each, tagged with its version, and say what the
    stored gate rows say."""
    lines = [ln for ln in received(sock) if ln.startswith("airflow.modelgate.")]
    assert len(lines) == 2 and all(f",model=gss-high-income,version={version}:" in ln for ln in lines)
    n_failed = sum(r[1] not in ("pass", "skipped") for r in _gate_rows(url, version))
    assert gauges(lines, "gss-high-income") == {
        "modelgate.gate.passed": float(passed), "modelgate.gate.checks_breached": float(n_failed)}


@pytest.mark.e2e
def test_dag_promotes_a_passing_candidate_then_blocks_an_unfair_one(
    settings_env: Settings, airflow_db: Path, demo_builds: dict[str, Any], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, statsd_listener: socket.socket,
) -> None:
    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "0")
    ctx = Context.open(settings_env)
    for build in demo_builds.values():
        register_archive(ctx, build.archive_path)
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("fairness:\n  default:\n    equalized_odds_difference: {upper: 0.95}\n")
    refused = _run("1", demo_builds["1"].heldout_path, str(lenient))  # looser than the model's own
    assert str(refused.state) == "failed"
    first = _run("1", demo_builds["1"].heldout_path, str(lenient), allow_looser=True)
    assert str(first.state) == "success"
    assert models.get(ctx.db_url, "gss-high-income", "1").stage == "production"
    _assert_gate_gauges(statsd_listener, ctx.db_url, "1", passed=True)

    strict = tmp_path / "strict.yaml"
    strict.write_text("fairness:\n  default:\n    equalized_odds_difference: {upper: 0.0001}\n")
    second = _run("2", demo_builds["2"].heldout_path, str(strict))
    assert str(second.state) == "failed"
    assert models.get(ctx.db_url, "gss-high-income", "2").stage == "candidate"
    assert models.get(ctx.db_url, "gss-high-income", "1").stage == "production"
    failed = [r for r in _gate_rows(ctx.db_url, "2") if r[1] == "breach"]
    assert any(r[0].startswith("fairness:gender:equalized_odds_difference") for r in failed)
    _assert_gate_gauges(statsd_listener, ctx.db_url, "2", passed=False)
    with transaction(ctx.db_url) as cur:
        cur.execute("""SELECT r.status, r.provider, r.rows_scored, r.report_key, r.champion_version_id
                       FROM evaluation_run r JOIN model_version mv USING (model_version_id)
                       WHERE mv.version = '2'""")
        status, provider, rows, report_key, champion = cur.fetchone()
    assert status == "blocked" and provider == "CPUExecutionProvider"
    with transaction(ctx.db_url) as cur:  # migration 0010: why that provider, TF32 not allowed
        cur.execute("SELECT provider_reason, tf32_allowed FROM evaluation_run "
                    "WHERE rows_scored IS NOT NULL ORDER BY evaluation_run_id")
        assert cur.fetchall() == [("auto: CPU, ONNX Runtime offers no CUDA provider", False)] * 2
    with transaction(ctx.db_url) as cur:  # migration 0014: the refusal and the allowance, recorded
        cur.execute("SELECT status, policy_source, policy_looser_than_model, looser_policy_allowed, "
                    "split_part(failure_reason, ':', 1) FROM evaluation_run ORDER BY evaluation_run_id")
        assert cur.fetchall() == [("failed", "ad_hoc", True, False, "LooserPolicyRefused"),
                                  ("passed", "ad_hoc", True, True, None),
                                  ("blocked", "ad_hoc", False, False, None)]
    assert rows == demo_builds["2"].n_heldout and champion is not None
    html = ctx.store.get_bytes(report_key).decode()
    assert "BLOCKED" in html and "equalized_odds_difference" in html and "data:image/png;base64," in html


def test_model_name_is_required_but_has_a_default_that_validates() -> None:
    """A run must name its model (verify refuses one that does not, see
    test_monitor_manual_runs), but the params validate without one: Airflow validates them
    when it builds a failed run's callback context, where a Param without a default raised
    ParamValidationError."""
    from modelgate.airflow_runner import load_dag

    dag = load_dag("model_evaluation")
    assert dag.params.validate()["model_name"] is None
    assert dag.on_failure_callback is not None and dag.on_failure_callback.__name__ == "_record_lost_run"
