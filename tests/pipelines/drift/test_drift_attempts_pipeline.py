"""Re-runs of a drifted interval through the in-process drift runner (issue #39 point 1), against
the real PostgreSQL and S3 servers and a real ONNX model (scikit-learn's logistic regression on
x1..x3): a re-run whose live partition is gone, or holds one row, is recorded beside the verdict
made on data and raises no alarm; a re-run with data replaces it; every attempt stays on record.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from support.model_zoo import FEATURES, build
from support.model_zoo import frame as zoo_frame

from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.runner import run_drift
from modelgate.store import models
from modelgate.store.db import fetch_all

# Four whole drift runs in process: seconds, kept out of the fast tier (the store-level cases
# are in tests/store/test_drift_attempts.py).
pytestmark = pytest.mark.e2e

UTC = dt.UTC
NAME = "zoo-binary_classification"
DAY = dt.date(2026, 3, 1)
START, END = dt.datetime(2026, 3, 1, tzinfo=UTC), dt.datetime(2026, 3, 2, tzinfo=UTC)


def _write_day(live: Path, labels: Path, part: pd.DataFrame) -> None:
    for root in (live, labels):
        shutil.rmtree(root / f"dt={DAY}", ignore_errors=True)
        (root / f"dt={DAY}").mkdir(parents=True)
    part = part.assign(event_time=pd.Timestamp(DAY, tz="UTC") + pd.to_timedelta(np.arange(len(part)), "s"))
    part[[*FEATURES, "row_id", "event_time"]].to_parquet(live / f"dt={DAY}" / "part-0.parquet")
    part[["row_id", "y_binary"]].to_parquet(labels / f"dt={DAY}" / "part-0.parquet")


def _run(ctx: Context, reference: Path, live: Path, labels: Path) -> str:
    spec = feature_steps.MonitorSpec(NAME, str(live), str(labels), str(reference), 100_000, {},
                             feature_steps.DEFAULT_ADWIN_DELTA)
    try:
        return run_drift(ctx, spec.as_dict(), START, END)
    except feature_steps.DriftBreached:
        return "drift (raised)"


def _attempts(ctx: Context) -> list[tuple[Any, ...]]:
    return fetch_all(ctx.db_url, """SELECT attempt, is_current, status, verdict, rows_sampled,
                                           n_features_breached, report_uri
                                    FROM analytics.drift_attempts ORDER BY attempt""")


def _current(ctx: Context) -> tuple[Any, ...]:
    (row,) = fetch_all(ctx.db_url, """SELECT r.status, r.verdict, r.rows_sampled, r.current_attempt,
                                             r.attempt, v.is_drifting,
                                             (SELECT count(*) FROM feature_drift f
                                              WHERE f.drift_run_id = r.drift_run_id AND f.verdict = 'drift')
                                      FROM analytics.drift_runs r JOIN model_version v
                                        ON v.model_name = r.model_name AND v.version = r.version""")
    return row


def test_a_rerun_without_live_rows_keeps_the_drift_verdict_and_a_rerun_with_data_replaces_it(
        settings: Settings, tmp_path: Path) -> None:
    zoo = build("sklearn-no-zipmap")
    data = zoo_frame(n=2200, seed=11).assign(row_id=np.arange(2200, dtype=np.int64))
    archive = package(*zoo.write(tmp_path / "src", id_column="row_id"), tmp_path / "out")
    reference, live, labels = tmp_path / "reference.parquet", tmp_path / "live", tmp_path / "labels"
    data.iloc[:1000].to_parquet(reference)
    ctx = Context.open(settings)
    row, _ = register_archive(ctx, archive)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)

    # attempt 1: x2 moved by 3 (three reference standard deviations): drift, judged on 600 rows
    _write_day(live, labels, data.iloc[1000:1600].assign(x2=lambda f: f["x2"] + 3.0))
    assert _run(ctx, reference, live, labels) == "drift (raised)"
    (first,) = _attempts(ctx)
    assert first[:5] == (1, True, "drift", "drift", 600)
    status, verdict, sampled, current, attempt, drifting, breached = _current(ctx)
    assert (status, verdict, sampled, current, attempt, drifting) == ("drift", "drift", 600, 1, 1, True)
    assert breached >= 1

    # attempt 2: the live partition is gone: no_data, recorded beside; no alarm raised
    shutil.rmtree(live / f"dt={DAY}")
    assert _run(ctx, reference, live, labels) == "no_data"
    assert _attempts(ctx)[0] == first  # attempt 1 exactly as it was, still the current one
    assert _attempts(ctx)[1][:5] == (2, False, "no_data", "no_data", 0)
    assert _current(ctx) == ("drift", "drift", 600, 1, 2, True, breached)
    # attempt 1's report is still where its record points, beside attempt 2's own
    reports = [r[6] for r in _attempts(ctx)]
    assert len(set(reports)) == 2
    assert all(ctx.store.get_bytes(r.split("/", 3)[3]) for r in reports)

    # attempt 3: one row: insufficient_data, recorded beside as well
    _write_day(live, labels, data.iloc[1600:1601].assign(x2=lambda f: f["x2"] + 3.0))
    assert _run(ctx, reference, live, labels) == "insufficient_data"
    assert [a[:4] for a in _attempts(ctx)] == [(1, True, "drift", "drift"), (2, False, "no_data", "no_data"),
                                               (3, False, "insufficient_data", "insufficient_data")]
    assert _current(ctx) == ("drift", "drift", 600, 1, 3, True, breached)
    # its one scored row went under a key of its own: the interval's scored sample (what late
    # labels are joined to) is still attempt 1's 600 rows
    ((key, scored),) = fetch_all(ctx.db_url, "SELECT scores_key, rows_scored FROM scored_interval")
    assert key.endswith("/scored-sample.parquet") and scored == 600
    assert pq.read_table(io.BytesIO(ctx.store.get_bytes(key))).num_rows == 600
    assert pq.read_table(io.BytesIO(ctx.store.get_bytes(
        key.replace("scored-sample.parquet", "scored-sample-attempt3.parquet")))).num_rows == 1

    # attempt 4: unshifted data: ok replaces the verdict and clears the flag; 1 stays on record
    _write_day(live, labels, data.iloc[1600:2200])
    assert _run(ctx, reference, live, labels) == "ok"
    assert _current(ctx) == ("ok", "ok", 600, 4, 4, False, 0)
    assert _attempts(ctx)[0] == (first[0], False, *first[2:])
    assert [a[:3] for a in _attempts(ctx)] == [(1, False, "drift"), (2, False, "no_data"),
                                               (3, False, "insufficient_data"), (4, True, "ok")]
