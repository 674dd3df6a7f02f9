"""A drift run leaves no scratch file behind, however it ends (issue #39).

A run copies live rows, its sample and the model archive into ``MODELGATE_HOME/work``. Each
test ends a run one way, through the in-process runner (``run_drift``, what ``modelgate
monitor run/retry`` calls), and lists the scratch folder afterwards: a fault injected at
each step (the real step runs, then the injected error is raised, so the step's own files
exist when the run fails), a bad live partition, bad labels, a breach, and a clean run.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import concept, estimation, feature_steps, joint, report, runner
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = pytest.mark.e2e  # each test runs the monitoring pipeline over the demo model

NAME = "gss-high-income"
DAY = dt.date(2024, 3, 1)
START = dt.datetime.combine(DAY, dt.time(), dt.UTC)
LENIENT = {"relative": 1e9, "wasserstein_floor": 1e9, "js_floor": 1.0,
           "multivariate": {"relative": 1e9, "floor": 1e9}, "attribution": {"relative": 1e9, "floor": 1e9}}
STRICT = {"relative": 0.0, "wasserstein_floor": 0.0, "js_floor": 0.0}


class Injected(RuntimeError):
    """The fault a test injects."""


@pytest.fixture()
def ctx(settings_env: Settings, demo_builds: dict[str, Any]) -> Context:
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    feature_steps.ensure_reference(ctx, models.get_by_id(ctx.db_url, row.model_version_id),
                           str(demo_builds["1"].reference_path))
    return ctx


def _scratch(ctx: Context) -> list[str]:
    work = ctx.settings.home.resolve() / "work"
    return sorted(p.relative_to(work).as_posix() for p in work.rglob("*") if p.is_file())


def _data(build: Any, root: Path) -> tuple[Path, Path]:
    live, labels = root / "live", root / "labels"
    shutil.copytree(build.live_dir / f"dt={build.live_dates[0]}", live / f"dt={DAY}")
    shutil.copytree(build.labels_dir / f"dt={build.live_dates[0]}", labels / f"dt={DAY}")
    return live, labels


def _run(ctx: Context, live: Path, labels: Path, thresholds: dict[str, Any] = LENIENT) -> str:
    spec = feature_steps.MonitorSpec(NAME, str(live), str(labels), "", 100_000, thresholds, 0.002).as_dict()
    return runner.run_drift(ctx, spec, START, START + dt.timedelta(days=1))


def _status(ctx: Context) -> list[str]:
    return [r[0] for r in fetch_all(ctx.db_url, "SELECT status FROM analytics.drift_runs")]


# (module, function, whether the real step runs first) of each step after prepare; store and
# decide fail before doing anything. decide comes after store, which has removed the files.
STEPS = {
    "sample_and_score": (feature_steps, "sample_and_score", True),
    "feature_drift": (feature_steps, "feature_drift", True),
    "concept_drift": (concept, "concept_drift", True),
    "joint_drift": (joint, "joint_drift", True),
    "estimate": (estimation, "estimate_interval", True),
    "report": (report, "render_report", True),
    "store": (feature_steps, "store_results", False),
    "decide": (feature_steps, "decide", False),
}


@pytest.mark.parametrize("step", list(STEPS), ids=list(STEPS))
def test_a_run_failed_at_any_step_leaves_no_scratch_file(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    live, labels = _data(demo_builds["1"], tmp_path)
    module, name, run_first = STEPS[step]
    real: Callable[..., Any] = getattr(module, name)
    seen: list[list[str]] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        if run_first:
            real(*args, **kwargs)
        seen.append(_scratch(ctx))
        raise Injected(f"injected fault in {step}")

    monkeypatch.setattr(module, name, failing)
    with pytest.raises(Injected):
        _run(ctx, live, labels)
    if step != "decide":
        assert seen[0], f"the run had written no scratch file by {step}: nothing was tested"
        assert _status(ctx) == ["failed"]
    assert _scratch(ctx) == []


def test_a_run_with_bad_partitions_leaves_no_scratch_file(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    live, labels = _data(demo_builds["1"], tmp_path)
    (live / f"dt={DAY}" / "part-9.parquet").write_bytes(b"not parquet")
    (labels / f"dt={DAY}" / "part-9.parquet").write_bytes(b"not parquet")
    assert _run(ctx, live, labels) == "degraded"
    assert _scratch(ctx) == []


def test_a_breached_run_and_a_clean_run_leave_no_scratch_file(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    live, labels = _data(demo_builds["1"], tmp_path)
    with pytest.raises(feature_steps.DriftBreached):
        _run(ctx, live, labels, STRICT)
    assert _scratch(ctx) == []
    assert _run(ctx, live, labels) in ("ok", "degraded")
    assert _scratch(ctx) == []
