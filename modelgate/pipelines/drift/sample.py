"""Where a drift run's live sample lives and how it is drawn, shared by the per-feature
steps (``pipelines.drift.feature_steps``) and the joint steps (``pipelines.drift.joint``) so neither
imports the other for it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Protocol

from modelgate.pipelines.context import Context, safe_key_part


class IntervalRun(Protocol):
    """What these helpers read of a ``DriftRef``."""

    @property
    def drift_run_id(self) -> int: ...

    @property
    def interval_start(self) -> str: ...

    def start(self) -> dt.datetime: ...


def interval_seed(ref: IntervalRun) -> int:
    """Sampling seed derived from the interval, so a re-run samples the same rows."""
    return int(ref.start().timestamp()) % (2**32)


def sample_path(ctx: Context, ref: IntervalRun, key: str) -> Path:
    """The run's stored live sample (object ``key``), downloaded to the scratch folder."""
    work = ctx.settings.home.resolve() / "work" / "drift-sample" / safe_key_part(ref.interval_start)
    work.mkdir(parents=True, exist_ok=True)
    return ctx.store.download(key, work / f"{ref.drift_run_id}-sample.parquet")
