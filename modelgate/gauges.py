"""Gate and drift numbers as metrics, through Airflow's own metrics client.

Release managers and on-call engineers alert on dashboards, not tables, so every evaluation
and drift run also sends its outcome to whatever metrics backend the Airflow deployment
configures in ``[metrics]`` (StatsD, DogStatsD or OpenTelemetry; nothing when none is on).
Every metric is a gauge carrying the tags ``model`` and ``version``; with plain StatsD, tags
travel in the name only when ``[metrics] statsd_influxdb_enabled = True``
(``airflow.modelgate.drift.features_breached,model=m,version=1:2|g``).

Stable names (documented in the README; alert on ``statistic > threshold``):

========================================  ====================================================
``modelgate.gate.passed``                 1 when the promotion gate passed, 0 when it blocked
``modelgate.gate.checks_breached``        gate checks that blocked or warned (breach, inconclusive, fail)
``modelgate.drift.drifting``              1 when the drift run's verdict is drift, else 0
``modelgate.drift.features_breached``     features whose per-feature statistic breached
``modelgate.drift.multivariate``          sliced Wasserstein statistic (reference stds)
``modelgate.drift.multivariate_threshold`` its threshold
``modelgate.drift.attribution``           attribution profile distance (total variation)
``modelgate.drift.attribution_threshold`` its threshold
``modelgate.drift.adwin_change_points``   ADWIN change points found by the run
``modelgate.drift.insufficient_data``     1 when the run's verdict is insufficient_data, else 0
``modelgate.drift.features_insufficient`` features with too few values for a verdict
``modelgate.drift.rows_set_aside``        sampled rows set aside unscored (missing, infinite)
========================================  ====================================================

A statistic with no data (no live rows, no reference) is not sent, rather than sent as 0.
"""

from __future__ import annotations

import configparser
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("modelgate.gauges")

__all__ = ["Metric", "drift_metrics", "emit", "evidence_metrics", "gate_metrics"]


@dataclass(frozen=True, slots=True)
class Metric:
    """One gauge value with its tags.

    Examples
    --------
    >>> Metric("modelgate.gate.passed", 1.0, "churn", "3").tags
    {'model': 'churn', 'version': '3'}
    """

    name: str
    value: float
    model: str
    version: str

    @property
    def tags(self) -> dict[str, str]:
        return {"model": self.model, "version": self.version}


def gate_metrics(model: str, version: str, *, passed: bool, checks_breached: int) -> tuple[Metric, ...]:
    """Metrics of one promotion gate decision.

    Examples
    --------
    >>> [(m.name, m.value) for m in gate_metrics("m", "1", passed=False, checks_breached=2)]
    [('modelgate.gate.passed', 0.0), ('modelgate.gate.checks_breached', 2.0)]
    """
    return (Metric("modelgate.gate.passed", float(passed), model, version),
            Metric("modelgate.gate.checks_breached", float(checks_breached), model, version))


def drift_metrics(
    model: str,
    version: str,
    *,
    drifting: bool,
    features_breached: int,
    adwin_change_points: int,
    multivariate: tuple[float, float] | None = None,
    attribution: tuple[float, float] | None = None,
) -> tuple[Metric, ...]:
    """Metrics of one drift run; ``multivariate``/``attribution`` are (statistic, threshold).

    Examples
    --------
    >>> ms = drift_metrics("m", "1", drifting=True, features_breached=3, adwin_change_points=0,
    ...                    multivariate=(0.3, 0.05))
    >>> [(m.name, m.value) for m in ms][-2:]
    [('modelgate.drift.multivariate', 0.3), ('modelgate.drift.multivariate_threshold', 0.05)]
    """
    out = [Metric("modelgate.drift.drifting", float(drifting), model, version),
           Metric("modelgate.drift.features_breached", float(features_breached), model, version),
           Metric("modelgate.drift.adwin_change_points", float(adwin_change_points), model, version)]
    for name, pair in (("multivariate", multivariate), ("attribution", attribution)):
        if pair is not None:
            out += [Metric(f"modelgate.drift.{name}", float(pair[0]), model, version),
                    Metric(f"modelgate.drift.{name}_threshold", float(pair[1]), model, version)]
    return tuple(out)


def evidence_metrics(model: str, version: str, *, insufficient: bool, features_insufficient: int,
                     rows_set_aside: int) -> tuple[Metric, ...]:
    """How much of one drift run's data could decide (sent beside :func:`drift_metrics`).

    Examples
    --------
    >>> [(m.name, m.value) for m in evidence_metrics("m", "1", insufficient=True,
    ...                                               features_insufficient=4, rows_set_aside=0)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('modelgate.drift.insufficient_data', 1.0), ('modelgate.drift.features_insufficient', 4.0),
     ('modelgate.drift.rows_set_aside', 0.0)]
    """
    return (Metric("modelgate.drift.insufficient_data", float(insufficient), model, version),
            Metric("modelgate.drift.features_insufficient", float(features_insufficient), model,
                   version),
            Metric("modelgate.drift.rows_set_aside", float(rows_set_aside), model, version))


def emit(metrics: Sequence[Metric]) -> None:
    """Send ``metrics`` through Airflow's metrics client; never fails the caller.

    The client is initialised from the current ``[metrics]`` configuration first, as Airflow's
    task runner does at the start of every task process: a ``dag.test()`` run, the CLI and
    tests run tasks in a process where that start-up step did not happen. A metrics outage
    must not fail a gate or a drift run whose results are already stored, so errors are logged.
    """
    if not _backend_may_be_on():
        return
    try:
        from airflow.sdk.configuration import conf
        from airflow.sdk.observability import stats
        from airflow.sdk.observability.metrics.stats_utils import get_stats_factory

        stats.initialize(factory=get_stats_factory(),
                         export_legacy_names=conf.getboolean("metrics", "legacy_names_on"))
        for metric in metrics:
            stats.gauge(metric.name, metric.value, tags=metric.tags)
    except Exception as exc:  # noqa: BLE001 - metrics are best effort, see the docstring
        log.warning("could not send %d metric(s): %s: %s", len(metrics), type(exc).__name__, exc)


_BACKEND_SWITCHES = ("statsd_on", "otel_on")


def _backend_may_be_on() -> bool:
    """False only when no metrics backend can be on: then a CLI process skips importing
    Airflow (about 4 s) just to find that out.

    Inside Airflow (already imported) the answer is Airflow's own. Otherwise the switches are
    read as Airflow reads them: ``AIRFLOW__METRICS__<SWITCH>`` (``_CMD``/``_SECRET`` forms
    count as possibly on) over ``airflow.cfg`` (``AIRFLOW_CONFIG`` or ``$AIRFLOW_HOME``).
    """
    if "airflow" in sys.modules:
        return True
    undecided = []
    for switch in _BACKEND_SWITCHES:
        name = f"AIRFLOW__METRICS__{switch.upper()}"
        if name + "_CMD" in os.environ or name + "_SECRET" in os.environ:
            return True
        if name in os.environ:
            if os.environ[name].strip().lower() in ("true", "t", "1"):
                return True
        else:
            undecided.append(switch)
    home = Path(os.environ.get("AIRFLOW_HOME") or "~/airflow").expanduser()
    cfg = Path(os.environ.get("AIRFLOW_CONFIG") or home / "airflow.cfg")
    if not undecided or not cfg.is_file():
        return False
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(cfg)
        return any(parser.getboolean("metrics", switch, fallback=False) for switch in undecided)
    except (configparser.Error, ValueError):
        return True  # Airflow will say what is wrong with it
