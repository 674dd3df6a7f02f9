"""Soak: many small evaluations and drift intervals back to back against the real PostgreSQL
and S3 server, bounded in count and time. Nothing may grow: open connections, memory, files.

Run with ``-s`` to see the figures (they are copied into bench/RESULTS.md);
``MODELGATE_TEST_SOAK_ROUNDS`` sets the number of rounds (default 8).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.runner import run_drift
from modelgate.pipelines.evaluation.runner import run_evaluation
from modelgate.store import models
from modelgate.store.db import transaction

pytestmark = pytest.mark.e2e  # the slow tier: `pytest -m 'not e2e'` leaves it out

ROUNDS = int(os.environ.get("MODELGATE_TEST_SOAK_ROUNDS", "8"))
# Memory is measured in a fresh interpreter: in the middle of the whole suite the process
# carries every earlier test's heap, and its growth says nothing about these rounds.
IN_CHILD = os.environ.get("MODELGATE_TEST_SOAK_CHILD") == "1"
TIME_LIMIT_S = 240.0
UTC = dt.UTC


def _connections(url: str) -> int:
    with transaction(url) as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid()")
        return int(cur.fetchone()[0])


def _files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def _evaluate(ctx: Context, heldout: Path, i: int) -> str:
    done = run_evaluation(ctx, model_name="gss-high-income", version="2", dataset_uri=str(heldout),
                          run_key=f"soak-{i}")
    return done.ref.run_key


def _drift(ctx: Context, build: Any, day: dt.date) -> str:
    start = dt.datetime.combine(day, dt.time(), UTC)
    spec = feature_steps.MonitorSpec("gss-high-income", str(build.live_dir), str(build.labels_dir),
                             str(build.reference_path), 500, {}, feature_steps.DEFAULT_ADWIN_DELTA)
    try:
        return run_drift(ctx, spec.as_dict(), start, start + dt.timedelta(days=1))
    except feature_steps.DriftBreached:
        return "drift"  # stored like any other verdict


def test_soak_in_a_fresh_process() -> None:
    if IN_CHILD:
        pytest.skip("this is the child")
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
         f"{__file__}::test_soak_no_growth"],
        env={**os.environ, "MODELGATE_TEST_SOAK_CHILD": "1"}, capture_output=True, text=True,
        timeout=900, cwd=Path(__file__).resolve().parents[2])
    print(child.stdout[-3000:])
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    assert "soak:" in child.stdout and " passed" in child.stdout


def test_soak_no_growth(settings: Settings, demo_builds: dict[str, Any], tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    if not IN_CHILD:
        pytest.skip("measured in a fresh interpreter by test_soak_in_a_fresh_process")
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))  # only our own temp files count
    tmp_root = private_tmp
    ctx = Context.open(settings)
    for build in demo_builds.values():
        register_archive(ctx, build.archive_path)
    v1 = models.get(ctx.db_url, "gss-high-income", "1")
    models.promote(ctx.db_url, v1.model_version_id, expected_champion_id=None)
    process = psutil.Process()
    days = list(demo_builds["1"].live_dates)
    # warm-up round: imports, ONNX Runtime arenas, the reference sketch
    _evaluate(ctx, demo_builds["2"].heldout_path, 0)
    _drift(ctx, demo_builds["1"], days[0])
    before = {"connections": _connections(ctx.db_url), "rss_mb": process.memory_info().rss / 2**20,
              "tmp_entries": len(os.listdir(tmp_root)), "work_files": _files(settings.home / "work")}
    started, done, rss = time.monotonic(), 0, []
    for i in range(1, ROUNDS + 1):
        if time.monotonic() - started > TIME_LIMIT_S:
            break
        _evaluate(ctx, demo_builds["2"].heldout_path, i)
        _drift(ctx, demo_builds["1"], days[i % len(days)])
        done += 1
        rss.append(round(process.memory_info().rss / 2**20))
    after = {"connections": _connections(ctx.db_url), "rss_mb": process.memory_info().rss / 2**20,
             "tmp_entries": len(os.listdir(tmp_root)), "work_files": _files(settings.home / "work")}
    elapsed = time.monotonic() - started
    print(f"\nsoak: {done} evaluation + {done} drift rounds in {elapsed:.1f} s; before {before}; "
          f"after {after}; RSS MB after each round {rss}")
    assert done >= 2, "the soak must complete at least two rounds within its time limit"
    assert after["connections"] <= before["connections"]
    assert after["tmp_entries"] <= before["tmp_entries"]
    assert after["work_files"] <= before["work_files"]  # each run removes its scratch files
    assert after["rss_mb"] - before["rss_mb"] < 150, "resident memory kept growing"
    half = len(rss) // 2
    assert rss[-1] - rss[half - 1] < 40, f"resident memory still growing in the second half: {rss}"
    with transaction(ctx.db_url) as cur:
        cur.execute("SELECT count(*) FROM evaluation_run")
        assert cur.fetchone()[0] == done + 1
        cur.execute("SELECT count(DISTINCT interval_start) = count(*) FROM drift_run")
        assert cur.fetchone()[0]
