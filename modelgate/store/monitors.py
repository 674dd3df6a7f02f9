"""Per-model drift-monitoring configuration and quarantined live and label partitions."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from modelgate.store.db import transaction


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    """What the drift DAG reads for one model name (whichever version is in production)."""

    model_name: str
    live_uri: str
    labels_uri: str
    reference_uri: str
    sample_rows: int
    thresholds: dict[str, Any]

    def to_record(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


_COLUMNS = "model_name, live_uri, labels_uri, reference_uri, sample_rows, thresholds"


def put(url: str, config: MonitorConfig) -> bool:
    """Create or replace the configuration of ``config.model_name``; True when it was new."""
    with transaction(url) as cur:
        cur.execute(
            f"""INSERT INTO monitor_config ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)
                ON CONFLICT ON CONSTRAINT monitor_config_pkey DO UPDATE SET
                    live_uri = EXCLUDED.live_uri, labels_uri = EXCLUDED.labels_uri,
                    reference_uri = EXCLUDED.reference_uri, sample_rows = EXCLUDED.sample_rows,
                    thresholds = EXCLUDED.thresholds, updated_at = now()
                RETURNING (xmax = 0)""",
            (config.model_name, config.live_uri, config.labels_uri, config.reference_uri,
             config.sample_rows, json.dumps(config.thresholds)),
        )
        return bool(cur.fetchone()[0])


def get(url: str, model_name: str) -> MonitorConfig | None:
    with transaction(url) as cur:
        cur.execute(f"SELECT {_COLUMNS} FROM monitor_config WHERE model_name = %s", (model_name,))
        record = cur.fetchone()
    return None if record is None else MonitorConfig(*record)


def list_all(url: str) -> list[MonitorConfig]:
    with transaction(url) as cur:
        cur.execute(f"SELECT {_COLUMNS} FROM monitor_config ORDER BY model_name")
        return [MonitorConfig(*r) for r in cur.fetchall()]


def list_monitored_production(url: str) -> list[MonitorConfig]:
    """Configurations whose model name has a version in production (what a run watches)."""
    with transaction(url) as cur:
        cur.execute(
            f"""SELECT {", ".join("c." + c.strip() for c in _COLUMNS.split(","))}
                FROM monitor_config c
                WHERE EXISTS (SELECT 1 FROM model_version mv
                              WHERE mv.model_name = c.model_name AND mv.stage = 'production')
                ORDER BY c.model_name""")
        return [MonitorConfig(*r) for r in cur.fetchall()]


def delete(url: str, model_name: str) -> bool:
    """Remove a configuration (its drift history stays); False when there was none."""
    with transaction(url) as cur:
        cur.execute("DELETE FROM monitor_config WHERE model_name = %s RETURNING 1", (model_name,))
        return cur.fetchone() is not None


@dataclass(frozen=True, slots=True)
class Quarantine:
    """A partition a drift run set aside: ``source`` is ``live`` or ``labels``, ``partition``
    its name (``dt=2026-11-28``), ``reason`` the problem in one line (counts, no data values)."""

    source: str
    partition: str
    reason: str


def quarantine(url: str, *, model_version_id: int, source: str, partition: str, partition_uri: str,
               interval_start: dt.datetime, interval_end: dt.datetime, reason: str,
               run_id: int) -> None:
    """Set a partition aside for the model version (idempotent: a retried task finds the open
    quarantine); a labels partition also marks its scored interval, so later runs stop
    feeding (and failing on) its labels."""
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO quarantined_partition (model_version_id, source, partition_name,
                   partition_uri, interval_start, interval_end, reason, drift_run_id)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (model_version_id, source, partition_name) WHERE released_at IS NULL
               DO NOTHING""",
            (model_version_id, source, partition, partition_uri, interval_start, interval_end,
             reason[:1000], run_id),
        )
        if source == "labels":
            cur.execute(
                """UPDATE scored_interval SET quarantined_at = now(), quarantine_reason = %s,
                       quarantined_by_run_id = %s
                   WHERE model_version_id = %s AND interval_start = %s AND interval_end = %s
                     AND quarantined_at IS NULL""",
                (reason[:1000], run_id, model_version_id, interval_start, interval_end),
            )


def open_quarantines(url: str, model_version_id: int, source: str) -> set[str]:
    """Names of the model version's ``source`` partitions set aside and not released."""
    with transaction(url) as cur:
        cur.execute("""SELECT partition_name FROM quarantined_partition
                       WHERE model_version_id = %s AND source = %s AND released_at IS NULL""",
                    (model_version_id, source))
        return {str(r[0]) for r in cur.fetchall()}


def quarantined_by_run(url: str, run_id: int) -> list[Quarantine]:
    """The open quarantines drift run ``run_id`` set (by any of its tries), live ones first."""
    with transaction(url) as cur:
        cur.execute("""SELECT source, partition_name, reason FROM quarantined_partition
                       WHERE drift_run_id = %s AND released_at IS NULL
                       ORDER BY source DESC, partition_name""", (run_id,))
        return [Quarantine(*r) for r in cur.fetchall()]


def release(url: str, *, model_version_id: int, interval_start: dt.datetime) -> int:
    """Release the partitions set aside for the interval starting at ``interval_start``
    (live and labels); the number released."""
    with transaction(url) as cur:
        cur.execute(
            """UPDATE scored_interval SET quarantined_at = NULL, quarantine_reason = NULL,
                   quarantined_by_run_id = NULL
               WHERE model_version_id = %s AND interval_start = %s AND quarantined_at IS NOT NULL""",
            (model_version_id, interval_start),
        )
        cur.execute(
            """UPDATE quarantined_partition SET released_at = now()
               WHERE model_version_id = %s AND interval_start = %s AND released_at IS NULL""",
            (model_version_id, interval_start),
        )
        return int(cur.rowcount)


def latest_evaluation_dataset(url: str, model_version_id: int) -> str | None:
    """The dataset URI of the model version's latest finished evaluation, if any."""
    with transaction(url) as cur:
        cur.execute("""SELECT dataset_uri FROM evaluation_run
                       WHERE model_version_id = %s AND status IN ('passed', 'blocked')
                       ORDER BY evaluation_run_id DESC LIMIT 1""", (model_version_id,))
        record = cur.fetchone()
    return None if record is None else str(record[0])
