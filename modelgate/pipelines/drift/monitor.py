"""Setting up drift monitoring of a model: validate the config, build the reference sketch.

The sketch is built here (and when a version of a monitored model is promoted), never by a
scheduled drift run, so a run only reads.
"""

from __future__ import annotations

import logging
from typing import Any

from modelgate.pipelines.context import Context
from modelgate.pipelines.drift.feature_steps import (
    check_threshold_features,
    ensure_reference,
    parse_thresholds,
)
from modelgate.pipelines.drift.monitor_checks import MonitorConfigError, check_dataset, check_partitioned
from modelgate.store import models, monitors

log = logging.getLogger("modelgate.monitor")

#: Most live rows sampled per interval: ``monitor_config.sample_rows`` is a PostgreSQL integer.
MAX_SAMPLE_ROWS = 2**31 - 1


def set_monitor(ctx: Context, model_name: str, *, live: str, labels: str,
                reference: str | None = None, sample_rows: int = 5000,
                thresholds: dict[str, Any] | None = None) -> tuple[monitors.MonitorConfig, bool]:
    """Store the monitoring config of ``model_name`` and build its production version's sketch.

    ``reference`` defaults to the dataset the production version was last evaluated on.
    Each location is checked first (:mod:`~modelgate.pipelines.drift.monitor_checks`: readable,
    ``dt=YYYY-MM-DD`` partitions, the model's columns), whatever the version's sketch state,
    and the sketch is built before the config is written, so a bad location or reference
    leaves nothing half-written. A version's sketch, once built, is kept (evidence is append-only): a
    changed ``reference`` applies to versions promoted later. Returns the config and
    whether it was new.
    """

    production = check_monitor_args(ctx, model_name, live=live, labels=labels,
                                    reference=reference, sample_rows=sample_rows,
                                    thresholds=thresholds)
    if not reference:
        reference = (monitors.latest_evaluation_dataset(ctx.db_url, production.model_version_id)
                     if production else None)
        if not reference:
            raise ValueError(f"monitor set {model_name!r}: pass --reference (no evaluated version "
                             "in production whose held-out data could serve)")
    check_locations(ctx, model_name, production, live=live, labels=labels, reference=reference)
    if production is not None:
        ensure_reference(ctx, production, reference)
    config = monitors.MonitorConfig(model_name, live, labels, reference, sample_rows,
                                    dict(thresholds or {}))
    created = monitors.put(ctx.db_url, config)
    log.info("%s monitoring of %s", "set up" if created else "updated", model_name)
    return config, created


def check_monitor_args(ctx: Context, model_name: str, *, live: str, labels: str,
                       reference: str | None, sample_rows: int,
                       thresholds: dict[str, Any] | None) -> models.ModelVersionRow | None:
    """Refuse a monitoring config before any work, naming the field; returns the model's
    production version (None when it has none yet).

    Texts must not hold NUL (PostgreSQL cannot store it), ``sample_rows`` must fit its
    column, and thresholds may only name known keys and, once a version is in production,
    its features (or the score): a threshold for a feature the model lacks would never apply.
    """

    texts = {"name": model_name, "--live": live, "--labels": labels, "--reference": reference or ""}
    for field, value in texts.items():
        if "\x00" in value:
            raise ValueError(f"monitor set: {field} must not contain a NUL character")
    for name, value in (("live", live), ("labels", labels)):
        if not value:
            raise ValueError(f"monitor set {model_name!r}: --{name} must be a directory or "
                             f"s3://bucket/prefix of dt=YYYY-MM-DD partitions, got {value!r}")
    if isinstance(sample_rows, bool) or not 1 <= sample_rows <= MAX_SAMPLE_ROWS:
        raise ValueError(f"monitor set {model_name!r}: --sample-rows must be >= 1, got "
                         f"{sample_rows!r}" if sample_rows < 1 else
                         f"monitor set {model_name!r}: --sample-rows must be at most "
                         f"{MAX_SAMPLE_ROWS:,}, got {sample_rows!r}")
    parse_thresholds(thresholds)  # refuses unknown keys before anything is stored
    production = models.get_production(ctx.db_url, model_name)
    if production is not None:
        check_threshold_features(thresholds, production.manifest, production.version,
                                 where=f"monitor set {model_name!r}: --thresholds")
    return production


def reference_on_promotion(ctx: Context, row: models.ModelVersionRow) -> str | None:
    """Build the sketch of a newly promoted version of a monitored model (None if unmonitored)."""

    config = monitors.get(ctx.db_url, row.model_name)
    return None if config is None else ensure_reference(ctx, row, config.reference_uri)


def check_locations(ctx: Context, model_name: str, production: models.ModelVersionRow | None, *,
                    live: str, labels: str, reference: str) -> None:
    """Refuse locations that can never work (see :mod:`~modelgate.pipelines.drift.monitor_checks`);
    log a warning for partitioned locations with no partition yet. Columns are checked
    against the production version's manifest (not when no version is in production)."""

    reference_columns: list[str] = []
    live_columns: list[str] = []
    label_columns: list[str] = []
    if production is None:
        log.warning("%s has no version in production: the columns of its data are checked at "
                    "promotion, when its reference sketch is built", model_name)
    else:
        manifest = production.manifest
        reference_columns = [f.name for f in manifest.features]
        id_column = manifest.id_column
        if not id_column:
            raise MonitorConfigError(f"monitor set {model_name!r}: v{production.version}'s manifest "
                                     "has no id_column, so its labels cannot be joined to live rows")
        live_columns = [*reference_columns, id_column]  # scored rows keep their id for the join
        label_columns = [id_column, manifest.label.column]
    for option, uri, columns in (("--live", live, live_columns), ("--labels", labels, label_columns)):
        warning = check_partitioned(ctx, option, uri, columns)
        if warning:
            log.warning("monitor set %s: %s", model_name, warning)
    check_dataset(ctx, "--reference", reference, reference_columns)
