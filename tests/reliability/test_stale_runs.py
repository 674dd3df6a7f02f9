"""``MODELGATE_STALE_RUN_MINUTES`` at its boundary: a run silent for just less than it is left
running, one silent for just more is marked abandoned by the model's next run (evaluation and
drift alike).

Heartbeats are backdated relative to the database's ``now()``. The run just outside the
boundary is outside whatever time passes before the sweep; the one just inside stays inside
as long as the sweep comes within a minute of the backdating (it comes within milliseconds).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.evaluation import prepare_step
from modelgate.store import drift_runs, models
from modelgate.store.db import fetch_all, transaction

MODEL = "gss-high-income"
STALE_MINUTES = 45  # not the default (30), so the variable is seen to be read
# the age of the last heartbeat: just inside and just outside the boundary
INSIDE = f"{STALE_MINUTES - 1} minutes"
OUTSIDE = f"{STALE_MINUTES} minutes 1 second"


@pytest.fixture()
def ctx(settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Context:
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(tmp_path))  # the default policy only
    monkeypatch.setenv("MODELGATE_STALE_RUN_MINUTES", str(STALE_MINUTES))
    settings = Settings.from_env()
    assert settings.stale_run_minutes == STALE_MINUTES
    return Context.open(settings)


def _backdate(ctx: Context, table: str, ages: dict[int, str]) -> None:
    with transaction(ctx.db_url) as cur:
        for run_id, age in ages.items():
            cur.execute(f"UPDATE {table} SET started_at = now() - interval '3 hours', "
                        f"heartbeat_at = now() - %s::interval WHERE {table}_id = %s", (age, run_id))


def _statuses(ctx: Context, table: str) -> dict[int, str]:
    return dict(fetch_all(ctx.db_url, f"SELECT {table}_id, status FROM {table}"))


def test_evaluation_runs_at_the_stale_boundary(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    register_archive(ctx, demo_builds["1"].archive_path)
    data = tmp_path / "rows.parquet"
    pd.read_parquet(demo_builds["1"].heldout_path).iloc[:50].to_parquet(data, index=False)

    def prepare(key: str) -> int:
        ref = prepare_step.prepare(ctx, model_name=MODEL, version="1", dataset_uri=str(data), run_key=key)
        return ref.evaluation_run_id

    inside, outside = prepare("inside"), prepare("outside")
    _backdate(ctx, "evaluation_run", {inside: INSIDE, outside: OUTSIDE})
    following = prepare("next")
    assert _statuses(ctx, "evaluation_run") == {
        inside: "running", outside: "abandoned", following: "running"}


def test_drift_runs_at_the_stale_boundary(ctx: Context, demo_builds: dict[str, Any]) -> None:
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    day = [dt.datetime(2024, 3, d, tzinfo=dt.UTC) for d in (1, 2, 3, 4)]
    inside, outside = (drift_runs.start_drift_run(ctx.db_url, model_version_id=row.model_version_id,
                                                  interval_start=a, interval_end=b)
                       for a, b in ((day[0], day[1]), (day[1], day[2])))
    _backdate(ctx, "drift_run", {inside: INSIDE, outside: OUTSIDE})
    with pytest.raises(LookupError, match="no reference sketch"):  # the model's next run
        feature_steps.prepare(ctx, model_name=MODEL, interval_start=day[2], interval_end=day[3])
    statuses = _statuses(ctx, "drift_run")
    assert (statuses[inside], statuses[outside]) == ("running", "abandoned")
