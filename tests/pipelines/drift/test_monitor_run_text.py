"""``modelgate monitor run`` prints text a person reads (issue #39): its summary with real line
breaks (not ``\\n``), its logs on stderr only, and "retrying" only for an interval that ran
before. Through the real command in a child process, as a user runs it."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = pytest.mark.e2e  # two whole pipeline runs: seconds

NAME = "gss-high-income"
DAY = dt.date(2024, 3, 1)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelgate.cli", *args], capture_output=True,
                          text=True, check=False, timeout=600)


def test_monitor_run_text_reads_at_a_glance(settings_env: Settings, demo_builds: dict[str, Any],
                                            tmp_path: Path) -> None:
    ctx = Context.open(settings_env)
    build = demo_builds["1"]
    row, _ = register_archive(ctx, build.archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    live, labels = tmp_path / "live", tmp_path / "labels"
    year = sorted(build.live_dates)[0]
    shutil.copytree(build.live_dir / f"dt={year}", live / f"dt={DAY}")
    shutil.copytree(build.labels_dir / f"dt={year}", labels / f"dt={DAY}")
    done = _cli("monitor", "set", NAME, "--live", str(live), "--labels", str(labels),
                "--reference", str(build.heldout_path), "--sample-rows", "300",
                "--thresholds", '{"relative": 0.01, "wasserstein_floor": 0.0, "js_floor": 0.0}')
    assert done.returncode == 0, done.stderr

    first = _cli("monitor", "run", NAME, "--interval", DAY.isoformat())
    assert first.returncode == 3, first.stderr  # features breach a hundredth of their baseline
    lines = first.stdout.splitlines()
    assert len(lines) > 2 and "\\n" not in first.stdout  # one breach a line
    assert lines[0].startswith(f"{NAME} v1: drift in ")
    assert all(" INFO " not in line and " WARNING " not in line for line in lines)  # logs: stderr
    assert " INFO " in first.stderr
    assert "retrying" not in first.stderr and "running gss-high-income" in first.stderr

    again = _cli("monitor", "retry", NAME, "--interval", DAY.isoformat())
    assert again.returncode == 3
    assert "retrying gss-high-income" in again.stderr

    # `monitor list` names the worst feature as the report does: the largest value / threshold
    listed = _cli("monitor", "list")
    assert listed.returncode == 0, listed.stderr
    ((feature, multiple),) = fetch_all(ctx.db_url, """
        SELECT f.feature, f.statistic_value / f.threshold FROM feature_drift f
        WHERE f.drift_run_id = (SELECT max(drift_run_id) FROM drift_run) AND f.threshold > 0
        ORDER BY 2 DESC LIMIT 1""")
    shown = "model score" if feature == "__score__" else feature
    assert f"drift: {shown[:18]} {multiple:.1f}x" in listed.stdout
    # ... and the analyst view's threshold_multiple is the same quotient
    viewed = fetch_all(ctx.db_url, """
        SELECT threshold_multiple, statistic_value, threshold FROM analytics.feature_drift_by_interval
        WHERE drift_run_id = (SELECT max(drift_run_id) FROM drift_run)""")
    assert viewed and all(m == pytest.approx(v / t) for m, v, t in viewed if t)
    assert max(m for m, _, _ in viewed) == pytest.approx(multiple)
