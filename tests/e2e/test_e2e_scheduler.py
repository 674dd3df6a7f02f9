"""drift_monitoring under a real Airflow deployment, not ``dag.test()``
(:mod:`airflow_deployment`: LocalExecutor, api-server, dag-processor and scheduler on a
PostgreSQL metadata database of its own, the DAG's default task retries).

Two production models are configured with ``modelgate monitor set`` and the scheduler catches
up over three daily intervals:

- 2024-03-01: live rows; model A's labels repeat some ids (quarantined), model B's are fine
- 2024-03-02: no live partition (``no_data``)
- 2024-03-03: live rows and labels for both
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support.airflow_deployment import airflow_env, run_scheduler

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

UTC = dt.UTC
DAYS = (dt.date(2024, 3, 1), dt.date(2024, 3, 2), dt.date(2024, 3, 3))
MODEL_A, MODEL_B = "gss-high-income", "gss-income-b"
DUPLICATED_IDS = 7
WAIT_S = 1200


def _renamed_archive(archive: Path, name: str, out: Path) -> Path:
    """The same model packaged under another model name (a second monitored model)."""
    from modelgate.onnx.artifact import package

    work = out / "unpacked"
    work.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    manifest = json.loads((work / "manifest.json").read_text())
    (work / "manifest.json").write_text(json.dumps({**manifest, "name": name}))
    return package(work / "model.onnx", work / "manifest.json", out / "model")


def _partitions(build: Any, root: Path) -> tuple[Path, Path, Path]:
    """Live and label partitions of DAYS copied from two demo survey years."""
    live, labels_a, labels_b = root / "live", root / "labels-a", root / "labels-b"
    source = {DAYS[0]: build.live_dates[-1], DAYS[2]: build.live_dates[-2]}
    for day, year in source.items():
        for src, dst in ((build.live_dir, live), (build.labels_dir, labels_b)):
            shutil.copytree(src / f"dt={year}", dst / f"dt={day}")
        frame = pd.read_parquet(build.labels_dir / f"dt={year}" / "part-0.parquet")
        if day == DAYS[0]:  # a bad delivery: some ids twice
            frame = pd.concat([frame, frame.head(DUPLICATED_IDS)], ignore_index=True)
        (labels_a / f"dt={day}").mkdir(parents=True)
        frame.to_parquet(labels_a / f"dt={day}" / "part-0.parquet", index=False)
    return live, labels_a, labels_b


def _configure(ctx: Context, demo_builds: dict[str, Any], root: Path) -> None:
    from modelgate.cli import main

    archive_b = _renamed_archive(demo_builds["2"].archive_path, MODEL_B, root / "b")
    for archive in (demo_builds["1"].archive_path, archive_b):
        row, _ = register_archive(ctx, archive)
        models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    live, labels_a, labels_b = _partitions(demo_builds["1"], root)
    for model, labels, build in ((MODEL_A, labels_a, demo_builds["1"]),
                                 (MODEL_B, labels_b, demo_builds["2"])):
        assert main(["monitor", "set", model, "--live", str(live), "--labels", str(labels),
                     "--reference", str(build.reference_path), "--sample-rows", "800"]) == 0


def _drift_runs(url: str) -> list[tuple[Any, ...]]:
    return fetch_all(url, """SELECT model_name, interval_start, interval_end, status, light,
                                    degraded_reason, rows_labelled
                             FROM analytics.drift_runs ORDER BY model_name, interval_start""")


def test_scheduler_catches_up_every_monitored_model(
    settings_env: Settings, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    ctx = Context.open(settings_env)
    _configure(ctx, demo_builds, tmp_path / "data")
    expected = len(DAYS) * 2
    rows: list[tuple[Any, ...]] = []

    def finished() -> bool:
        rows[:] = _drift_runs(ctx.db_url)
        return len(rows) == expected and all(r[3] != "running" for r in rows)

    with airflow_env(tmp_path, DAYS[0], DAYS[-1], retries=None) as env:
        dead, tails = run_scheduler(env, tmp_path / "logs", finished, WAIT_S)
    assert not dead, f"Airflow processes exited early: {dead}\n{tails}"
    assert len(rows) == expected and all(r[3] != "running" for r in rows), (rows, tails)

    # one run per model and daily interval, with exact interval bounds
    starts = [dt.datetime.combine(d, dt.time(), UTC) for d in DAYS]
    for model in (MODEL_A, MODEL_B):
        mine = [r for r in rows if r[0] == model]
        assert [(r[1], r[2]) for r in mine] == [(s, s + dt.timedelta(days=1)) for s in starts]
        assert mine[1][3:5] == ("no_data", "amber")  # no live partition on DAYS[1]
    a = {r[1].date(): r for r in rows if r[0] == MODEL_A}
    b = {r[1].date(): r for r in rows if r[0] == MODEL_B}
    # model A: the bad labels partition degraded its run, with a one-line reason and no ids
    reason = a[DAYS[0]][5]
    assert a[DAYS[0]][3] == "degraded" and a[DAYS[0]][4] in ("amber", "red")  # red: also drift
    assert f"labels partition dt={DAYS[0]}" in reason and "\n" not in reason
    assert f"{2 * DUPLICATED_IDS} rows share" in reason
    quarantined = fetch_all(ctx.db_url, "SELECT model_name, interval_start FROM "
                                        "analytics.quarantined_partitions")
    assert quarantined == [(MODEL_A, starts[0])]
    # ... and the next interval with data was processed: its labels fed, not the quarantined ones
    # 2016 and 2018 drift far from the 1974-1990 reference (2018: age W1/std 0.37, scipy)
    assert a[DAYS[2]][3] == "drift" and a[DAYS[2]][6] > 0, (a[DAYS[2]], tails)
    labelled = fetch_all(ctx.db_url, """SELECT mv.model_name, s.interval_start, s.labels_consumed_at
                                        IS NOT NULL FROM scored_interval s JOIN model_version mv
                                        USING (model_version_id) ORDER BY 1, 2""")
    assert labelled == [(MODEL_A, starts[0], False), (MODEL_A, starts[2], True),
                        (MODEL_B, starts[0], True), (MODEL_B, starts[2], True)]
    # model B (clean labels) was not held back by model A's failure
    assert b[DAYS[0]][3] == "drift" and b[DAYS[0]][6] > 0, (b[DAYS[0]], tails)
    # is_drifting follows the last interval with data; the no_data interval left it alone
    flags = dict(fetch_all(ctx.db_url, "SELECT model_name, is_drifting FROM model_version"))
    assert flags == {MODEL_A: a[DAYS[2]][3] == "drift", MODEL_B: b[DAYS[2]][3] == "drift"}
