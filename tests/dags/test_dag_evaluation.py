"""The model_evaluation DAG end to end with Airflow's dag.test(), real PostgreSQL and S3, and
the gate gauges it sends through Airflow's StatsD client to a UDP listener on loopback; the
params both DAGs check when a run is triggered, and refusals that fail a task for good."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from modelgate.evaluation.policy import PolicyError
from support.statsd_lines import gauges, received

from modelgate.config import ConfigError, Settings
from modelgate.json_input import JsonInputError
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation.policy_provenance import LooserPolicyRefused
from modelgate.pipelines.refusals import InputRefused
from modelgate.store import models
from modelgate.store.db import transaction
from modelgate.store.models import RegistryError


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
    ParamValidationError. That context merges the run's conf, which names its dataset (a
    conf without one creates no run, see the next test)."""
    served = _served("model_evaluation")
    assert served.params.deep_merge({"dataset": "d.parquet"}).validate()["model_name"] is None
    dag = _load("model_evaluation")
    assert dag.on_failure_callback is not None and dag.on_failure_callback.__name__ == "_record_lost_run"


def _load(dag_id: str) -> Any:
    from modelgate.airflow_runner import load_dag

    return load_dag(dag_id)


def _served(dag_id: str) -> Any:
    """The DAG as the scheduler and API server hold it (serialized, then read back)."""
    from airflow.serialization.serialized_objects import DagSerialization

    return DagSerialization.from_dict(DagSerialization.to_dict(_load(dag_id)))


GOOD = {"model_name": "m", "model_version": "2", "dataset": "s3://b/heldout/"}
REFUSED_AT_TRIGGER = {  # issue #37: an empty dataset passed verify and scored the worker's folder
    "dataset-missing": {"model_name": "m"},
    "dataset-empty": {**GOOD, "dataset": ""},
    "dataset-blank": {**GOOD, "dataset": "   "},
    "dataset-nul": {**GOOD, "dataset": "d\x00.parquet"},
    "dataset-newline": {**GOOD, "dataset": "d.parquet\nforged log line"},
    "version-empty": {**GOOD, "model_version": ""},
    "version-number": {**GOOD, "model_version": 2},
    "model-name-nul": {**GOOD, "model_name": "m\x00"},
    "policy-control": {**GOOD, "policy": "p.yaml\x1b[2J"},
}


@pytest.mark.parametrize("conf", REFUSED_AT_TRIGGER.values(), ids=REFUSED_AT_TRIGGER.keys())
def test_a_conf_without_a_usable_dataset_creates_no_run(conf: dict[str, Any]) -> None:
    """What ``create_dagrun`` runs on every trigger (API, CLI, UI, ``dag.test()``): the
    served DAG's params merged with the conf, validated; a ParamValidationError creates no
    run, so no task (and no refusal row) ever sees it. The task runner validates the SDK's
    params the same way (``process_params``)."""
    from airflow.exceptions import ParamValidationError
    from airflow.sdk.definitions.param import ParamsDict

    with pytest.raises(ParamValidationError) as caught:
        _served("model_evaluation").params.deep_merge(conf).validate()
    bad = next(k for k in ("dataset", "model_version", "model_name", "policy") if conf.get(k) != GOOD.get(k))
    assert f"param {bad}" in str(caught.value)
    params = ParamsDict(_load("model_evaluation").params)
    with pytest.raises(ParamValidationError):
        params.update(conf)
        params.validate()
    assert _served("model_evaluation").params.deep_merge(GOOD).validate()["dataset"] == GOOD["dataset"]


DRIFT_REFUSED = {
    "sample-size-over-integer": {"sample_size": 2**31},
    "sample-size-negative": {"sample_size": -1},
    "live-nul": {"live": "/data/live\x00"},
    "model-name-newline": {"model_name": "churn\nforged"},
    "thresholds-not-object": {"thresholds": [1]},
    "adwin-delta-one": {"adwin_delta": 1},
}


@pytest.mark.parametrize("conf", DRIFT_REFUSED.values(), ids=DRIFT_REFUSED.keys())
def test_drift_params_are_checked_at_trigger(conf: dict[str, Any]) -> None:
    from airflow.exceptions import ParamValidationError

    served = _served("drift_monitoring")
    assert served.params.validate()  # scheduled: its defaults must validate
    with pytest.raises(ParamValidationError, match=f"param {next(iter(conf))}"):
        served.params.deep_merge(conf).validate()


# --- a refusal is final: no Airflow retry -----------------------------------------------------


class _TaskInstance:
    try_number, max_tries = 1, 1  # the first of two tries: any other failure is retried


@pytest.fixture
def in_airflow_task() -> Any:
    from airflow.sdk.execution_time.context import set_current_context

    with set_current_context({"ti": _TaskInstance()}):  # type: ignore[typeddict-item]
        yield


def test_a_refusal_fails_the_task_without_retries_and_records_the_run_once(
        in_airflow_task: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from modelgate.pipelines import tasks

    recorded: list[BaseException] = []
    monkeypatch.setattr(tasks, "open_context", lambda: "ctx")

    def unknown_version(ctx: Any, ref: Any) -> None:
        raise RegistryError("model 'm' has no version '9'")

    with pytest.raises(AirflowFailException, match="RegistryError: model 'm' has no version '9'") as caught:
        tasks.run_step("ref", lambda ctx, ref, exc: recorded.append(exc), unknown_version)
    assert isinstance(caught.value.__cause__, RegistryError)
    assert recorded == [caught.value.__cause__]  # the last try's record, made by this one

    def flaky(ctx: Any, ref: Any) -> None:
        raise ConnectionError("store unreachable")

    with pytest.raises(ConnectionError):  # not a refusal: Airflow retries, nothing recorded yet
        tasks.run_step("ref", lambda ctx, ref, exc: recorded.append(exc), flaky)
    assert len(recorded) == 1


REFUSALS = {"registry": RegistryError("unknown version"), "policy": PolicyError("bad policy"),
            "config": ConfigError("bad setting"), "dataset": InputRefused("bad dataset"),
            "json": JsonInputError("key given twice"), "looser": LooserPolicyRefused("p.yaml", ["roc_auc"])}


@pytest.mark.parametrize("refusal", REFUSALS.values(), ids=REFUSALS.keys())
def test_every_refusal_is_final_inside_airflow(refusal: Exception, in_airflow_task: None) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from modelgate.pipelines.tasks import refusals_are_final

    with pytest.raises(AirflowFailException, match=type(refusal).__name__), refusals_are_final():
        raise refusal
    with pytest.raises(KeyError), refusals_are_final():  # anything else is left to Airflow
        raise KeyError("x")


@pytest.mark.parametrize("refusal", REFUSALS.values(), ids=REFUSALS.keys())
def test_outside_airflow_a_refusal_is_itself(refusal: Exception) -> None:
    """The CLI and the in-process runner get the error itself (its exit code, its type)."""
    from modelgate.pipelines.tasks import final_failure

    assert final_failure(refusal) is refusal
