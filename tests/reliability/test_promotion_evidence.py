"""Issue #22 item 1: the evidence a promotion rests on survives every later run.

A re-run of the promoted version, interrupted (an injected failure in its metrics step) or
completed, is a run of its own (its key names the comparison: ``vs-self``); the promoting
run keeps its status, champion, gate decision and results. The database refuses any change
to a promoting run and its result rows, whoever asks (migration 0020).
Real PostgreSQL, moto's S3 server and ONNX Runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation import metrics_step, run_refs
from modelgate.store import models, runs
from modelgate.store.db import fetch_all, transaction
from modelgate.store.runs import EVALUATION_RESULT_TABLES

MODEL = "gss-high-income"
SMALL_ROWS = 300



@pytest.fixture()
def data(small_heldout: Callable[[int], Path]) -> Path:
    return small_heldout(SMALL_ROWS)



def _evidence(url: str, run_id: int) -> tuple[Any, ...]:
    """Everything a promotion rests on: the run row and every result row, in a stable order."""
    (row,) = fetch_all(url, "SELECT * FROM evaluation_run WHERE evaluation_run_id = %s", (run_id,))
    results = tuple(
        tuple(sorted(map(repr, fetch_all(url, f"SELECT * FROM {t} WHERE evaluation_run_id = %s",
                                          (run_id,)))))
        for t in EVALUATION_RESULT_TABLES)
    return row, results


def _promote_v1_then_v2(data: Path, lenient: Path, builds: dict[str, Any]) -> dict[str, Any]:
    run_evaluation_locally(builds["1"].archive_path, data, lenient, promote=True,
                           allow_looser_policy=True)  # warn-only checks: looser than the default
    second = run_evaluation_locally(builds["2"].archive_path, data, lenient, promote=True,
                                    allow_looser_policy=True).payload
    assert second["promoted"] and second["champion_deltas"] is not None
    return second


def _fail_metrics(ctx: Context, ref: run_refs.RunRef) -> str:
    raise RuntimeError("injected failure in the metrics step")


@pytest.mark.e2e
def test_reruns_of_the_promoted_version_keep_its_promotion_evidence(
    env: Settings, demo_builds: dict[str, Any], data: Path, lenient: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = str(env.database_url)
    promoting = _promote_v1_then_v2(data, lenient, demo_builds)
    run_id = promoting["evaluation_run_id"]
    assert promoting["run_key"].endswith("__vs-v1-" + fetch_all(
        url, "SELECT archive_sha256 FROM model_version WHERE version = '1'")[0][0][:8])
    before = _evidence(url, run_id)
    assert fetch_all(url, "SELECT promoted_at IS NOT NULL, status FROM evaluation_run "
                          "WHERE evaluation_run_id = %s", (run_id,)) == [(True, "passed")]

    with monkeypatch.context() as patched:  # the interrupted re-run
        patched.setattr(metrics_step, "compute_metrics", _fail_metrics)
        with pytest.raises(RuntimeError, match="injected failure"):
            run_evaluation_locally(demo_builds["2"].archive_path, data, lenient)
    assert _evidence(url, run_id) == before
    (failed_key, reason), = fetch_all(url, "SELECT run_key, failure_reason FROM evaluation_run "
                                           "WHERE status = 'failed'")
    assert failed_key.endswith("__vs-self") and "injected failure" in reason

    rerun = run_evaluation_locally(demo_builds["2"].archive_path, data, lenient).payload  # completed
    assert rerun["run_key"] == failed_key and rerun["evaluation_run_id"] != run_id
    assert rerun["champion_deltas"] is None and rerun["status"] == "passed"
    assert _evidence(url, run_id) == before
    assert fetch_all(url, """SELECT ch.version, d.had_champion FROM evaluation_run r
                             JOIN model_version ch ON ch.model_version_id = r.champion_version_id
                             JOIN gate_decision d USING (evaluation_run_id)
                             WHERE r.evaluation_run_id = %s""", (run_id,)) == [("1", True)]
    assert fetch_all(url, "SELECT version, stage FROM model_version ORDER BY version") == [
        ("1", "archived"), ("2", "production")]


def _promoted_run(env: Settings, demo_builds: dict[str, Any]) -> tuple[str, int, str]:
    """A promoted run with a gate decision and one metric, written through the store."""
    ctx = Context.open(env)
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    key = "hand__gss__vs-none"
    run_id = runs.start_evaluation_run(ctx.db_url, run_key=key, model_version_id=row.model_version_id,
                                       champion_version_id=None, dataset_uri="d.parquet",
                                       archive_sha256=row.archive_sha256)
    rows = runs.EvaluationRows(
        metrics=[{"model_role": "candidate", "metric_name": "roc_auc", "value": 0.8, "ci_lower": 0.7,
                  "ci_upper": 0.9, "n": 10, "undefined_reason": None}],
        gate={"passed": True, "summary": "passed", "policy_sha256": "0" * 64, "had_champion": False})
    runs.write_evaluation_results(ctx.db_url, run_id, rows, status="passed", report_key=None,
                                  report_uri=None)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None, evaluation_run_id=run_id)
    return ctx.db_url, run_id, key


@pytest.mark.parametrize("sql", [
    "DELETE FROM evaluation_run WHERE evaluation_run_id = %s",
    "UPDATE evaluation_run SET status = 'failed', failure_reason = 'x' WHERE evaluation_run_id = %s",
    "UPDATE evaluation_run SET champion_version_id = NULL, promoted_at = NULL WHERE evaluation_run_id = %s",
    "DELETE FROM gate_decision WHERE evaluation_run_id = %s",
    "UPDATE evaluation_metric SET value = 0.99 WHERE evaluation_run_id = %s",
    "INSERT INTO gate_check (evaluation_run_id, check_id, kind, metric_name, threshold_text, verdict, "
    "severity, reason) VALUES (%s, 'x', 'value', 'roc_auc', 't', 'pass', 'warn', 'r')",
], ids=["delete-run", "fail-run", "unpromote", "delete-decision", "edit-metric", "add-check"])
def test_the_database_refuses_to_touch_a_promoting_run(
    env: Settings, demo_builds: dict[str, Any], sql: str,
) -> None:
    url, run_id, _ = _promoted_run(env, demo_builds)
    before = _evidence(url, run_id)
    with (pytest.raises(psycopg2.IntegrityError, match="promotion evidence|promoted its version"),
          transaction(url) as cur):
        cur.execute(sql, (run_id,))
    assert _evidence(url, run_id) == before


def test_a_promoting_run_key_is_never_reset_or_failed(env: Settings, demo_builds: dict[str, Any]) -> None:
    url, run_id, key = _promoted_run(env, demo_builds)
    before = _evidence(url, run_id)
    (version_id, sha), = fetch_all(url, "SELECT model_version_id, archive_sha256 FROM model_version")
    with pytest.raises(runs.PromotionEvidenceKept, match="promoted its version"):
        runs.start_evaluation_run(url, run_key=key, model_version_id=version_id, champion_version_id=None,
                                  dataset_uri="d.parquet", archive_sha256=sha)
    runs.fail_evaluation_run(url, run_id, "a step after the promotion failed")
    assert _evidence(url, run_id) == before
    # the failure is recorded beside the decision it follows (issue #37)
    assert fetch_all(url, "SELECT step, reason FROM evaluation_step_failure") == [
        ("after_decision", "a step after the promotion failed")]
