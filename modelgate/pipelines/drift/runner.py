"""The drift pipeline's step graph (one model, one interval), its steps and its in-process runner.

``DRIFT`` is the single statement of the step order. The ``drift_monitoring`` DAG runs it
per model (the per-model ``finish`` task group is built from it; a test checks that the
whole DAG orders the steps as declared), and :func:`run_drift` runs the same steps one
after the other for ``modelgate monitor retry`` and the tests::

    prepare -> sample_and_score -> feature_drift (mapped over features)
    feature_drift -> concept_drift, joint_drift, estimate, segment_drift -> report -> store -> decide

Each step has one body, which the DAG's task and :func:`run_drift` both call. The bodies
below take what the step before passed on (:mod:`~modelgate.pipelines.payloads`: a
``PreparedModel``, then a ``ScoredModel``) and give the functions of
:mod:`modelgate.pipelines.drift.feature_steps` and :mod:`modelgate.pipelines.drift.joint` the parts they
need. ``feature_drift`` and ``decide`` need no body here: they are
:func:`modelgate.pipelines.drift.feature_steps.feature_drift`, called with the values of each
``FeatureTask`` of :func:`feature_tasks`, and :func:`modelgate.pipelines.drift.feature_steps.decide`.
Those modules are imported when a step is called: DAG files import this one at parse time.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from modelgate.pipelines.steps import Step, StepGraph, run_in_process

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context
    from modelgate.pipelines.drift.feature_steps import DriftRef
    from modelgate.pipelines.payloads import FeatureTask, MonitorSpecDict, PreparedModel, ScoredModel

log = logging.getLogger("modelgate.drift")


# --- the steps, as the DAG's tasks and run_drift call them ---------------------------------

def prepare(ctx: Context, spec: MonitorSpecDict, start: dt.datetime, end: dt.datetime) -> PreparedModel:
    """Open the model's run over ``[start, end)``: the run, the features to fan out over and
    the spec (:func:`modelgate.pipelines.drift.feature_steps.prepare`)."""
    from modelgate.pipelines.drift import feature_steps

    prepared = feature_steps.prepare(ctx, model_name=spec["model_name"], interval_start=start,
                             interval_end=end, reference_uri=spec["reference"])
    return {"run": prepared["run"], "features": prepared["features"], "spec": spec}


def sample_and_score(ctx: Context, ref: DriftRef, prepared: PreparedModel) -> ScoredModel:
    """The prepared run with its scored live sample of ``spec['sample_size']`` rows."""
    from modelgate.pipelines.drift import feature_steps

    spec = prepared["spec"]
    sample = feature_steps.sample_and_score(ctx, ref, spec["live"], int(spec["sample_size"]))
    return {"run": prepared["run"], "features": prepared["features"], "spec": spec,
            "sample": sample}


def feature_tasks(scored: ScoredModel) -> list[FeatureTask]:
    """The feature fan-out of one model: one ``feature_drift`` call per feature, each given
    :func:`modelgate.pipelines.drift.feature_steps.feature_drift`'s arguments after ``ctx, ref``."""
    return [{"run": scored["run"], "sample": scored["sample"], "feature": feature,
             "thresholds": scored["spec"]["thresholds"]} for feature in scored["features"]]


def concept_drift(ctx: Context, ref: DriftRef, scored: ScoredModel) -> str:
    """Feed the labels that have arrived to ADWIN; the key of the stored result."""
    from modelgate.pipelines.drift import concept

    spec = scored["spec"]
    return concept.concept_drift(ctx, ref, spec["labels"], float(spec["adwin_delta"]))


def joint_drift(ctx: Context, ref: DriftRef, scored: ScoredModel) -> str:
    """Multivariate and attribution drift of the sample; the key of the stored result."""
    from modelgate.pipelines.drift import joint

    return joint.joint_drift(ctx, ref, scored["sample"], scored["spec"]["thresholds"])


def estimate(ctx: Context, ref: DriftRef, scored: ScoredModel) -> str:
    """Data quality and estimated performance of the sample; the key of the stored result
    (:mod:`modelgate.pipelines.drift.estimation`)."""
    from modelgate.pipelines.drift import estimation

    return estimation.estimate_interval(ctx, ref, scored["sample"], scored["spec"]["thresholds"])


def segment_drift(ctx: Context, ref: DriftRef, scored: ScoredModel) -> str:
    """Drift of every feature within every segment the config names, stored; how many flagged
    (:mod:`modelgate.pipelines.drift.segments`)."""
    from modelgate.pipelines.drift import segments

    spec = scored["spec"]
    return str(segments.segment_drift(ctx, ref, scored["sample"], spec["thresholds"], spec["reference"]))


def report(ctx: Context, ref: DriftRef, scored: ScoredModel) -> str:
    """Render the run's HTML report; its object key (:mod:`~modelgate.pipelines.drift.report`)."""
    from modelgate.pipelines.drift.report import render_report

    return render_report(ctx, ref, scored["sample"], scored["features"])


def store(ctx: Context, ref: DriftRef, scored: ScoredModel, report_key: str) -> str:
    """Store the run's rows and verdict with the report's key; the verdict."""
    from modelgate.pipelines.drift import feature_steps

    return feature_steps.store_results(ctx, ref, scored["sample"], scored["features"], report_key)


# --- in-process: each step given the earlier steps' outputs -------------------------------

def _scored(done: dict[str, Any]) -> ScoredModel:
    scored: ScoredModel = done["sample_and_score"]
    return scored


def _sample_and_score(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> ScoredModel:
    return sample_and_score(ctx, ref, done["prepare"])


def _feature_drift(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> list[str]:
    from modelgate.pipelines.drift import feature_steps

    return [feature_steps.feature_drift(ctx, ref, t["sample"], t["feature"], t["thresholds"])
            for t in feature_tasks(_scored(done))]


def _given_scored(step: Callable[[Context, DriftRef, ScoredModel], str]
                  ) -> Callable[[Context, DriftRef, dict[str, Any]], str]:
    """``step(ctx, ref, scored)``: a step that is given the scored model only."""
    def call(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
        return step(ctx, ref, _scored(done))

    call.__name__ = call.__qualname__ = step.__name__
    return call


def _store(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
    return store(ctx, ref, _scored(done), done["report"])


def _decide(ctx: Context, ref: DriftRef, done: dict[str, Any]) -> str:
    from modelgate.pipelines.drift import feature_steps

    return feature_steps.decide(ctx, ref)


DRIFT = StepGraph((
    Step("prepare", prepare),
    Step("sample_and_score", _sample_and_score, after=("prepare",)),
    Step("feature_drift", _feature_drift, after=("sample_and_score",), mapped=True),
    Step("concept_drift", _given_scored(concept_drift), after=("feature_drift",)),
    Step("joint_drift", _given_scored(joint_drift), after=("feature_drift",)),
    Step("estimate", _given_scored(estimate), after=("feature_drift",)),
    Step("segment_drift", _given_scored(segment_drift), after=("feature_drift",)),
    Step("report", _given_scored(report),
         after=("concept_drift", "joint_drift", "estimate", "segment_drift")),
    Step("store", _store, after=("report",)),
    Step("decide", _decide, after=("store",), verdict=True),
))


def run_drift(ctx: Context, spec: MonitorSpecDict, start: dt.datetime, end: dt.datetime) -> str:
    """Every step of one model's drift run over ``[start, end)`` in this process, in ``DRIFT``
    order (features one after the other).

    The run's heartbeat is kept while the steps work; any error, Ctrl-C or SIGTERM records
    the run as failed and is re-raised. However the run ends, its scratch files (live rows,
    the sample, the archive copy) are removed (:mod:`~modelgate.pipelines.drift.scratch`).

    Parameters
    ----------
    ctx : Context
        The stores.
    spec : MonitorSpecDict
        One model's spec (:func:`~modelgate.pipelines.drift.feature_steps.monitor_specs`).
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
    from modelgate.pipelines.drift import feature_steps
    from modelgate.pipelines.drift.scratch import discard_run_scratch

    prepared = prepare(ctx, spec, start, end)  # a failure in it is recorded by feature_steps.fail
    ref = feature_steps.DriftRef(**prepared["run"])
    try:
        done = run_in_process(DRIFT, ctx, ref, {DRIFT.root.name: prepared}, fail=feature_steps.fail,
                              beat=feature_steps.beat)
    finally:  # stored, breached, failed or interrupted: no scratch file outlives the run
        discard_run_scratch(ctx, ref)
    return str(done["decide"])


def retry_interval(ctx: Context, model_name: str, interval_start: dt.datetime, *,
                   first_run_schedule: str | None = None) -> str:
    """Release a quarantined interval of the production model and run it again.

    The interval's end is the one its earlier run recorded. Labels of the interval are fed
    to ADWIN after those of later intervals that were processed meanwhile. An interval no
    run has read yet is refused, unless ``first_run_schedule`` (the drift DAG's cron
    schedule, ``modelgate monitor run``) is given: then it is the interval of that schedule
    starting at ``interval_start`` (a back-fill by hand).
    """
    from modelgate.pipelines.drift import feature_steps
    from modelgate.pipelines.drift.interval import interval_starting
    from modelgate.store import drift_runs, models, monitors

    production = models.get_production(ctx.db_url, model_name)
    if production is None:
        raise models.RegistryError(f"model {model_name!r} has no version in production")
    end = drift_runs.interval_end_of(ctx.db_url, production.model_version_id, interval_start)
    ran_before = end is not None
    if end is None and first_run_schedule is not None:
        interval_start, end = interval_starting(first_run_schedule, interval_start)
    if end is None:
        raise LookupError(f"{model_name} v{production.version} has no drift run starting at "
                          f"{interval_start.isoformat()} (see analytics.drift_runs; `modelgate "
                          "monitor run` runs an interval for the first time)")
    released = monitors.release(ctx.db_url, model_version_id=production.model_version_id,
                                interval_start=interval_start)
    log.info("%s %s v%s over %s..%s (%d quarantined partition(s) released)",
             "retrying" if ran_before else "running", model_name, production.version,
             interval_start.isoformat(), end.isoformat(), released)
    (spec,) = feature_steps.monitor_specs(ctx, {"model_name": model_name})
    return run_drift(ctx, spec, interval_start, end)


def fail_lost_runs(ctx: Context, start: dt.datetime, end: dt.datetime, *, airflow_run_id: str,
                   since: dt.datetime | None) -> list[int]:
    """Record the interval's drift runs that are still ``running`` once their Airflow DAG run
    has failed: every task of that DAG run is over, so no process is left to finish them (a
    last try was killed before it could record anything). Returns their ids.

    ``since`` (the DAG run's start) keeps runs started before it, by another process, out.
    """
    from modelgate.pipelines import index_page
    from modelgate.store import drift_runs

    reason = (f"lost: Airflow DAG run {airflow_run_id} failed while this run was in progress "
              "(a task's last try ended without recording why, e.g. killed with SIGKILL or out "
              "of memory); see that task's log")
    failed = drift_runs.fail_lost_runs(ctx.db_url, interval_start=start, interval_end=end,
                                       started_since=since, reason=reason)
    for run_id, model_name in failed:
        log.error("drift run %d of %s failed: %s", run_id, model_name, reason)
    for model_name in sorted({m for _, m in failed}):
        index_page.write_model_index(ctx, model_name)
    return [run_id for run_id, _ in failed]
