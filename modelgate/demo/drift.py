"""The drift part of ``modelgate demo``: later GSS survey years replayed as live intervals."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from modelgate.demo.story import DriftOutcome

UTC = dt.UTC


def simulated_labels(labels_dir: Path, dates: Sequence[dt.date], out_dir: Path, *,
                     flip_share: float, seed: int = 0) -> Path:
    """Copies of the label partitions of ``dates`` with ``flip_share`` of the labels flipped
    (seeded): a world whose relation between features and label changed."""
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    for day in dates:
        table = pq.read_table(labels_dir / f"dt={day.isoformat()}" / "part-0.parquet")
        frame = table.to_pandas()
        flip = rng.random(len(frame)) < flip_share
        frame.loc[flip, "high_income"] = 1 - frame.loc[flip, "high_income"]
        target = out_dir / f"dt={day.isoformat()}"
        target.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(target / "part-0.parquet", index=False)
    return out_dir


def replay(ctx: Any, build: Any, dates: Sequence[dt.date], *, labels_dir: Path, log_path: Path,
           say: Callable[[str], None], simulated: bool = False) -> list[DriftOutcome]:
    """Monitor the demo model (``modelgate monitor set``'s code, its held-out set as the
    reference) and run the drift_monitoring DAG once per survey-year partition, oldest
    first, as a deployment's manual runs would; task logs go to ``log_path``. Returns what
    each recorded run found."""
    from modelgate.airflow_runner import run_dag
    from modelgate.demo.data import MODEL_NAME
    from modelgate.pipelines.drift.monitor import set_monitor
    from modelgate.pipelines.drift.names import shown_feature
    from modelgate.store import models
    from modelgate.store.summaries import drift_interval

    production = models.get_production(ctx.db_url, MODEL_NAME)
    if production is None:
        say("      no model in production (the gate blocked every candidate); nothing to monitor")
        return []
    outcomes: list[DriftOutcome] = []
    # the held-out set the model was evaluated on, not its training rows: the performance
    # estimates are calibrated on the reference, and on training rows the model is too sure
    # (README, "Estimated performance"; bench/bench_demo_reference.py counts them)
    set_monitor(ctx, MODEL_NAME, live=str(build.live_dir), labels=str(labels_dir),
                reference=str(build.heldout_path), sample_rows=5000)
    for day in dates:
        # a manual run reads the last whole daily interval before its logical date: ``day``
        dagrun = run_dag("drift_monitoring", log_path=log_path,
                         logical_date=dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), UTC))
        record = drift_interval(ctx.db_url, production.model_version_id,
                                dt.datetime.combine(day, dt.time(), UTC))
        if record is None:
            say(f"      {day}: DAG run {dagrun.state}, no drift run recorded")
            continue
        run_id, status, rows, breached = (record.drift_run_id, record.status, record.rows_sampled,
                                          record.n_features_breached)
        reason, changes = record.failure_reason, record.change_points
        names = tuple(shown_feature(n) for n in record.breached_features)
        detail = reason or (f"{breached} feature(s) breached" + (f" ({', '.join(names)})" if names else "")
                            + f", {changes} ADWIN change point(s)")
        say(f"      {day}: run {run_id} {status.upper()} on {rows} sampled rows; {detail}")
        outcomes.append(DriftOutcome(
            day, run_id, status, names,
            None if record.worst_feature is None else shown_feature(record.worst_feature),
            record.worst_ratio, changes, simulated))
    return outcomes
