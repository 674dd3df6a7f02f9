"""The drift pipeline's step graph (one model, one interval) and its in-process runner.

``DRIFT`` is the single statement of the step order. The ``drift_monitoring`` DAG runs it
per model (the per-model ``finish`` task group is built from it; a test checks that the
whole DAG orders the steps as declared), and :func:`run_drift` runs the same steps one
after the other for ``modelgate monitor retry`` and the tests. The steps are functions of
:mod:`modelgate.pipelines.drift` and :mod:`modelgate.pipelines.drift_joint`, imported
when called (DAG files import this module at parse time)::

    prepare -> sample_and_score -> feature_drift (mapped over features)
    feature_drift -> concept_drift, joint_drift -> report -> store -> decide
"""

from __future__ import annotations

import datetime as dt
import logging
from types import ModuleType
from typing import TYPE_CHECKING, Any

from modelgate.pipelines.steps import Step, StepGraph, run_in_process

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context
    from modelgate.pipelines.drift import DriftRef

log = logging.getLogger("modelgate.drift")


def _drift() -> ModuleType:
    from modelgate.pipelines import drift

    return drift


def _prepare(ctx: Context, spec: dict[str, Any], start: dt.datetime, end: dt.datetime) -> dict[str, Any]:
    """The run reference and the features to fan out over, with the spec (as the DAG's task)."""
    prepared = _drift().prepare(ctx, model_name=spec["model_name"], interval_start=start,
                                interval_end=end, reference_uri=spec["reference"])
    return {**prepared, "spec": spec}


def _spec(done: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = done["prepare"]["spec"]
    return spec


def _sample_and_score(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(done)
    sample: dict[str, Any] = _drift().sample_and_score(ctx, ref, spec["live"], int(spec["sample_size"]))
    return sample


def _feature_drift(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> list[str]:
    feature_drift = _drift().feature_drift
    return [feature_drift(ctx, ref, done["sample_and_score"], f, _spec(done)["thresholds"])
            for f in done["prepare"]["features"]]


def _concept_drift(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
    spec = _spec(done)
    return str(_drift().concept_drift(ctx, ref, spec["labels"], float(spec["adwin_delta"])))


def _joint_drift(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
    from modelgate.pipelines import drift_joint

    return drift_joint.joint_drift(ctx, ref, done["sample_and_score"], _spec(done)["thresholds"])


def _report(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
    return str(_drift().render_report(ctx, ref, done["sample_and_score"], done["prepare"]["features"]))


def _store(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
    return str(_drift().store_results(ctx, ref, done["sample_and_score"], done["prepare"]["features"],
                                      done["report"]))


def _decide(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
    return str(_drift().decide(ctx, ref))


DRIFT = StepGraph((
    Step("prepare", _prepare),
    Step("sample_and_score", _sample_and_score, after=("prepare",)),
    Step("feature_drift", _feature_drift, after=("sample_and_score",), mapped=True),
    Step("concept_drift", _concept_drift, after=("feature_drift",)),
    Step("joint_drift", _joint_drift, after=("feature_drift",)),
    Step("report", _report, after=("concept_drift", "joint_drift")),
    Step("store", _store, after=("report",)),
    Step("decide", _decide, after=("store",), verdict=True),
))


def run_drift(ctx: Context, spec: dict[str, Any], start: dt.datetime, end: dt.datetime) -> str:
    """Every step of one model's drift run over ``[start, end)`` in this process, in ``DRIFT``
    order (features one after the other).

    The run's heartbeat is kept while the steps work; any error, Ctrl-C or SIGTERM records
    the run as failed and is re-raised.

    Parameters
    ----------
    ctx : Context
        The stores.
    spec : dict
        One model's :class:`~modelgate.pipelines.drift.MonitorSpec` as a dict
        (:func:`~modelgate.pipelines.drift.monitor_specs`).
    start, end : datetime
        The data interval.

    Returns
    -------
    str
        The verdict (``ok`` or ``no_data``).

    Raises
    ------
    DriftBreached
        When drift breached the thresholds, like the DAG's ``decide`` task; the run is
        stored (``drift``), not failed.
    """
    drift = _drift()
    prepared = _prepare(ctx, spec, start, end)
    ref = drift.DriftRef(**prepared["run"])
    done = run_in_process(DRIFT, ctx, ref, {DRIFT.root.name: prepared}, fail=drift.fail,
                          beat=drift.beat)
    return str(done["decide"])


def retry_interval(ctx: Context, model_name: str, interval_start: dt.datetime) -> str:
    """Release a quarantined interval of the production model and run it again.

    The interval's end is the one its earlier run recorded. Labels of the interval are fed
    to ADWIN after those of later intervals that were processed meanwhile.
    """
    from modelgate.store import drift_runs, models, monitors

    production = models.get_production(ctx.db_url, model_name)
    if production is None:
        raise models.RegistryError(f"model {model_name!r} has no version in production")
    end = drift_runs.interval_end_of(ctx.db_url, production.model_version_id, interval_start)
    if end is None:
        raise LookupError(f"{model_name} v{production.version} has no drift run starting at "
                          f"{interval_start.isoformat()} (see analytics.drift_runs)")
    released = monitors.release(ctx.db_url, model_version_id=production.model_version_id,
                                interval_start=interval_start)
    log.info("retrying %s v%s over %s..%s (%d quarantined partition(s) released)", model_name,
             production.version, interval_start.isoformat(), end.isoformat(), released)
    (spec,) = _drift().monitor_specs(ctx, {"model_name": model_name})
    return run_drift(ctx, spec, interval_start, end)
