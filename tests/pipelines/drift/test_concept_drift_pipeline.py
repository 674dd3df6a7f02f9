"""ADWIN in the drift pipeline: late labels, state carried between runs, no double feeding."""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from river.drift import ADWIN

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.runner import run_drift
from modelgate.store import models
from modelgate.store.db import transaction

pytestmark = pytest.mark.e2e  # the slow tier: `pytest -m 'not e2e'` leaves it out

UTC = dt.UTC


def _run(ctx: Context, build: Any, live: Path, labels: Path, day: dt.date) -> str:
    """One interval through the drift runner; the verdict (stored either way)."""
    start = dt.datetime.combine(day, dt.time(), UTC)
    spec = feature_steps.MonitorSpec("gss-high-income", str(live), str(labels), str(build.reference_path),
                             100_000, {}, feature_steps.DEFAULT_ADWIN_DELTA)
    try:
        return run_drift(ctx, spec.as_dict(), start, start + dt.timedelta(days=1))
    except feature_steps.DriftBreached:
        return "drift"


def _flip(labels: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    """Labels of a world that changed: a share of the truths flipped (the model errs more)."""
    rng = np.random.default_rng(seed)
    flipped = labels.copy()
    mask = rng.random(len(flipped)) < share
    flipped.loc[mask, "high_income"] = 1 - flipped.loc[mask, "high_income"]
    return flipped


def test_late_labels_feed_adwin_once_and_a_change_is_recorded(
    settings: Settings, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    build = demo_builds["1"]
    ctx = Context.open(settings)
    row, _ = register_archive(ctx, build.archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    days = list(build.live_dates)[:4]
    live, labels = tmp_path / "live", tmp_path / "labels"
    for day in days:
        shutil.copytree(build.live_dir / f"dt={day}", live / f"dt={day}")
    truth = {d: pd.read_parquet(build.labels_dir / f"dt={d}" / "part-0.parquet") for d in days}
    served = {d: truth[d] if i == 0 else _flip(truth[d], 0.5, i) for i, d in enumerate(days)}

    # the first interval's labels are late: its run feeds nothing
    _run(ctx, build, live, labels, days[0])
    with transaction(ctx.db_url) as cur:
        cur.execute("SELECT rows_labelled FROM drift_run")
        assert cur.fetchone()[0] == 0
    for i, day in enumerate(days):
        (labels / f"dt={day}").mkdir(parents=True)
        served[day].to_parquet(labels / f"dt={day}" / "part-0.parquet")
        if i > 0:
            _run(ctx, build, live, labels, day)  # feeds every interval whose labels arrived
    _run(ctx, build, live, labels, days[-1])  # a re-run must not feed anything twice

    with transaction(ctx.db_url) as cur:
        cur.execute("SELECT elements_seen FROM detector_state")
        seen = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM scored_interval WHERE labels_consumed_at IS NULL")
        pending = cur.fetchone()[0]
        cur.execute("SELECT stream_position, error_rate_before, error_rate_after "
                    "FROM concept_drift_change ORDER BY stream_position")
        changes = cur.fetchall()
    sizes = [len(truth[d]) for d in days]
    assert seen == sum(sizes) and pending == 0
    # independent check: river's own ADWIN, element by element, over the same errors in order
    expected = _expected_positions(ctx, build, days, served)
    assert [c[0] for c in changes] == expected and expected
    assert all(after > before for _, before, after in changes[:1])

    # the second interval's run fed the first two intervals' labels: its report shows their
    # rows and error rate, computed here from the model's own predictions
    errors = np.concatenate(_errors(build, days[:2], served))
    with transaction(ctx.db_url) as cur:
        cur.execute("SELECT report_key FROM drift_run WHERE interval_start = %s",
                    (dt.datetime.combine(days[1], dt.time(), UTC),))
        page = ctx.store.get_bytes(cur.fetchone()[0]).decode()
    table = page.split('<table id="labelled-performance">', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<td class="num">([^<]*)</td>', table)
    assert cells == [f"{len(errors):,}", f"{errors.mean():.4g}", f"{1 - errors.mean():.4g}"]


def _errors(build: Any, days: list[dt.date], served: dict[dt.date, pd.DataFrame]) -> list[Any]:
    """Per interval, 1.0 where the model's prediction misses the served label, in event order."""
    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session

    scorer = open_session(verify(build.archive_path))
    errors = []
    for day in days:
        frame = pd.read_parquet(build.live_dir / f"dt={day}" / "part-0.parquet")
        frame = frame.merge(served[day], on="row_id").sort_values(["event_time", "row_id"],
                                                                  kind="stable")
        predicted = (scorer.predict_proba(frame) >= scorer.manifest.threshold).astype(int)
        errors.append((predicted != frame["high_income"].to_numpy()).astype(float))
    return errors


def _expected_positions(ctx: Context, build: Any, days: list[dt.date],
                        served: dict[dt.date, pd.DataFrame]) -> list[int]:
    detector, positions = ADWIN(delta=0.002), []
    for position, error in enumerate(np.concatenate(_errors(build, days, served))):
        detector.update(error)
        if detector.drift_detected:
            positions.append(position)
    return positions
