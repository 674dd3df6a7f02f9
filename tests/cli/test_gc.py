"""Issue #22 item 8: ``runs/`` intermediates of ended runs are deleted, never what a stored
row points to; against moto's S3 server and the local-directory store."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from modelgate import cli
from modelgate.cli.retention import collect_runs
from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive, safe_key_part
from modelgate.store import runs
from modelgate.store.objects import LocalObjectStore


@pytest.fixture(params=["s3", "local"])
def ctx(request: pytest.FixtureRequest, settings: Settings, tmp_path: Path) -> Context:
    opened = Context.open(settings)
    if request.param == "s3":
        return opened
    return dataclasses.replace(opened, store=LocalObjectStore(tmp_path / "objects"))


def _run(ctx: Context, row: Any, key: str, *, ended: bool) -> str:
    run_id = runs.start_evaluation_run(ctx.db_url, run_key=key, model_version_id=row.model_version_id,
                                       champion_version_id=None, dataset_uri="d.parquet",
                                       archive_sha256=row.archive_sha256)
    folder = f"runs/evaluation/{safe_key_part(key)}"
    for name in ("metrics.pkl", "partitions/part-00000.pkl", "scores/part-00000.parquet"):
        ctx.store.put_bytes(f"{folder}/{name}", b"x", content_type="application/octet-stream")
    runs.record_scoring(ctx.db_url, run_id, provider="cpu", rows=1, seconds=1.0, dataset_sha256="0",
                        scores_uri=ctx.store.uri(f"{folder}/scores"))
    if ended:
        runs.fail_evaluation_run(ctx.db_url, run_id, "ended")
    return folder


def test_gc_deletes_ended_runs_intermediates_and_keeps_what_rows_point_to(
    ctx: Context, demo_builds: dict[str, Any],
) -> None:
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    ended = _run(ctx, row, "ended-run", ended=True)
    running = _run(ctx, row, "running-run", ended=False)
    others = ["runs/evaluation/no-row/metrics.pkl", "reports/gss/1/evaluation-x.html"]
    for key in others:
        ctx.store.put_bytes(key, b"x", content_type="text/plain")
    before = set(ctx.store.list_keys("runs/")) | set(ctx.store.list_keys("reports/"))

    assert collect_runs(ctx, retention=dt.timedelta(days=1)).deleted == 0  # ended just now
    dry = collect_runs(ctx, retention=dt.timedelta(0), dry_run=True)
    assert (dry.runs, dry.deleted, dry.kept_referenced) == (1, 2, 1)
    assert set(ctx.store.list_keys("runs/")) | set(ctx.store.list_keys("reports/")) == before

    done = collect_runs(ctx, retention=dt.timedelta(0))
    assert (done.runs, done.deleted, done.kept_referenced) == (1, 2, 1)
    left = set(ctx.store.list_keys("runs/")) | set(ctx.store.list_keys("reports/"))
    assert left == before - {f"{ended}/metrics.pkl", f"{ended}/partitions/part-00000.pkl"}
    assert f"{ended}/scores/part-00000.parquet" in left and f"{running}/metrics.pkl" in left
    assert collect_runs(ctx, retention=dt.timedelta(0)).deleted == 0  # idempotent
    if isinstance(ctx.store, LocalObjectStore):  # no empty folders left behind
        assert not (ctx.store.root / ended / "partitions").exists()


def test_gc_command_prints_what_it_did(settings_env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gc", "--older-than-days", "0", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"runs": 0, "deleted": 0, "kept_referenced": 0,
                                                   "dry_run": False, "step_failures_retried": 0,
                                                   "step_failures_left": 0}
    assert cli.main(["gc", "--older-than-days", "-1"]) == 2


def test_gc_deletes_an_ended_drift_interval_s_pickles_and_keeps_its_scored_sample(
    ctx: Context, demo_builds: dict[str, Any],
) -> None:
    """A drift interval's pickles go once every run of it ended; its scored sample stays while
    ``scored_interval.scores_key`` points to it (late labels are joined to it), and an
    interval with a run still ``running`` is left alone."""
    from modelgate.pipelines.drift.feature_steps import DriftRef
    from modelgate.store import drift_runs, models

    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    folders = {}
    for day, ended in ((1, True), (2, False)):
        start = dt.datetime(2024, 3, day, tzinfo=dt.UTC)
        end = start + dt.timedelta(days=1)
        run_id = drift_runs.start_drift_run(ctx.db_url, model_version_id=row.model_version_id,
                                            interval_start=start, interval_end=end)
        ref = DriftRef(run_id, row.model_version_id, row.model_name, row.version,
                       start.isoformat(), end.isoformat())
        for name in ("feature-age.pkl", "concept.pkl", "scored-sample.parquet"):
            ctx.store.put_bytes(f"{ref.prefix()}/{name}", b"x", content_type="application/octet-stream")
        drift_runs.upsert_scored_interval(ctx.db_url, model_version_id=row.model_version_id,
                                          interval_start=start, interval_end=end,
                                          scores_key=f"{ref.prefix()}/scored-sample.parquet", rows=1)
        if ended:
            drift_runs.fail_drift_run(ctx.db_url, run_id, "ended")
        folders[day] = ref.prefix()

    done = collect_runs(ctx, retention=dt.timedelta(0))
    assert (done.runs, done.deleted, done.kept_referenced) == (1, 2, 1)
    assert set(ctx.store.list_keys("runs/drift/")) == {
        f"{folders[1]}/scored-sample.parquet",
        *(f"{folders[2]}/{n}" for n in ("feature-age.pkl", "concept.pkl", "scored-sample.parquet"))}
