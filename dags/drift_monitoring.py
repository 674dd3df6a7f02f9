"""Airflow DAG ``drift_monitoring``: does live data still look like the reference?

Per data interval, for every production model with a monitoring config (``modelgate monitor
set``): plan -> prepare (mapped over models) -> sample_and_score (mapped over models) ->
feature_drift (mapped over every model's features) -> per model: concept_drift + joint_drift
(multivariate and attribution drift) + estimate + segment_drift (per segment, when configured)
-> report -> store -> decide: the order of
``modelgate.pipelines.drift.runner.DRIFT``, which ``modelgate monitor retry`` runs in one
process. Each run reads its own data
interval, never the clock, so catch-up and back-fills read each interval once and a re-run of an
interval replaces its rows.

Each task calls the runner's body of its step (``runner.<step>``, or the ``feature_steps``
function it names) and passes its payloads (``modelgate.pipelines.payloads``) through XCom.
The per-model ``finish`` group is built from ``DRIFT`` with ``steps.wire``, and which steps
run outside it is derived from ``DRIFT``. Those outer steps (prepare -> sample_and_score ->
feature_drift) are written out, not generated: each maps over the models the step before
carried on (``carry_on`` drops a model whose step failed, ``features_of`` turns models into
(model, feature) pairs) and each is mapped differently, so their order is the data they pass,
and the direct edges ``wire`` would add (prepare >> sample_and_score) would make one model's
failure fail every model's next step. ``tests/pipelines/test_step_graphs.py`` checks the whole DAG
orders the steps as ``DRIFT`` declares.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import Any

import pendulum
from airflow.sdk import CronDataIntervalTimetable, Param, dag, get_current_context, task, task_group

from modelgate.airflow_links import REPORT_URL_XCOM, ReportLink
from modelgate.config import dag_retries
from modelgate.input_limits import INTEGER_MAX, TEXT_PATTERN
from modelgate.logsafe import link_for_log
from modelgate.pipelines.drift.runner import DRIFT
from modelgate.pipelines.payloads import (
    DriftRefDict,
    FeatureTask,
    LiveSample,
    MonitorSpecDict,
    PreparedModel,
    ScoredModel,
)
from modelgate.pipelines.steps import wire

DOC_MD = """
### drift_monitoring — are the production models still seeing the data they were judged on?

**Which data a run reads**: exactly its data interval `[data_interval_start, data_interval_end)`
of the cron schedule (`MODELGATE_DRIFT_SCHEDULE`, default `@daily`, in UTC), and it runs after
that interval has ended: the run of 2024-03-01 (logical date) starts at 2024-03-02 00:00 and
reads the partitions `dt=2024-03-01`. This DAG uses a cron *data-interval* timetable whatever
`[scheduler] create_cron_data_intervals` says. A manual run reads the interval starting at its
param `interval_start` when given (e.g. `{"interval_start": "2024-03-01"}`), else the interval
of its logical date when it has one, else the last whole interval before it was triggered.
Catch-up and back-fills read each past interval once; re-running an interval replaces its rows.

**Which models**: every model name with a version in `production` and a monitoring config
(`modelgate monitor set NAME --live URI --labels URI`), one mapped task per model. Params are
for manual runs: `model_name` restricts the run to one model, and non-empty `live`, `labels`,
`reference`, `sample_size`, `thresholds` override its config.

Every interval and model: samples the live rows of the interval, scores them with the model
in `production`, compares each feature and the score distribution with the model's reference
(Wasserstein-1 normalised by the reference std for numeric features, Jensen-Shannon base 2
for categorical and binned numeric ones), the numeric features jointly (sliced Wasserstein on
reference-standardised features) and the model's SHAP attribution profile on a sample of live
rows, and feeds newly labelled rows to ADWIN.

**Red run at task `decide`**: at least one feature, the multivariate statistic or the
attribution profile breached its threshold. The task log lists them; the model is marked
`is_drifting` in PostgreSQL. **Red run at another task**: the run
itself failed; `drift_run.status = 'failed'` with `failure_reason`. A live or labels
partition that cannot be used (unreadable, missing or mistyped columns, repeated ids, labels
the model does not have) is quarantined and left out: the run goes on and ends
`degraded` (amber; `decide` is green unless drift breached), each partition named with its
reason in `analytics.drift_runs.degraded_reason`, the report and the `decide` log; later
intervals go on; once fixed, `modelgate monitor retry NAME --interval START` reprocesses it.
An interval with no live rows is `no_data` (amber): not a failure, and the drift flag stays;
so is one whose features all have fewer non-missing values than a verdict needs
(`insufficient_data`, `thresholds.min_values`). Sampled rows the model cannot score (a value
missing where the manifest allows none) are set aside and counted: the run ends `degraded`.
"""

RETRIES = dag_retries()
SCHEDULE = os.environ.get("MODELGATE_DRIFT_SCHEDULE", "@daily")
CATCHUP = os.environ.get("MODELGATE_DRIFT_CATCHUP", "false").lower() == "true"
START = pendulum.parse(os.environ.get("MODELGATE_DRIFT_START_DATE", "1970-01-01"), tz="UTC")
_END = os.environ.get("MODELGATE_DRIFT_END_DATE")  # last interval start (back-fills, tests)
END = pendulum.parse(_END, tz="UTC") if _END else None


def _ctx() -> Any:
    from modelgate.pipelines.tasks import open_context

    return open_context()


def _interval(context: Any) -> tuple[dt.datetime, dt.datetime]:
    """The run's data interval (``drift.interval.run_interval``: the param ``interval_start``,
    else Airflow's interval, else the last complete one before the run was created)."""
    from modelgate.pipelines.drift.interval import run_interval

    run, params = context["dag_run"], context.get("params") or {}
    return run_interval(SCHEDULE, interval_start=str(params.get("interval_start") or ""),
                        data_interval=(run.data_interval_start, run.data_interval_end),
                        run_after=run.run_after)


def _record_lost_runs(context: Any) -> None:
    """DAG failure callback: runs of this interval still ``running`` lost their task (a last
    try killed without a chance to record it, e.g. SIGKILL, for which Airflow 3.3 runs no
    task callback); record them ``failed`` now rather than ``abandoned`` later."""
    from modelgate.pipelines.drift import runner

    if "dag_run" not in context:  # Airflow sends a bare context when it lost the run's details
        print(f"drift run {context.get('run_id')} failed; its interval is unknown here, so its "
              "lost drift runs are left to be marked abandoned")
        return
    try:
        start, end = _interval(context)
    except ValueError as exc:  # a bad interval_start failed `plan`: no run row was opened
        print(f"drift run {context.get('run_id')}: no interval ({exc}); no drift run to record")
        return
    runner.fail_lost_runs(_ctx(), start, end, airflow_run_id=str(context["run_id"]),
                                since=context["dag_run"].start_date)


def _step(run: DriftRefDict, fn: Any, *args: Any) -> Any:
    from modelgate.pipelines.drift import feature_steps
    from modelgate.pipelines.tasks import run_step

    return run_step(feature_steps.DriftRef(**run), feature_steps.fail, fn, *args, beat=feature_steps.beat)


#: DRIFT's feature fan-out and the steps before it run once for all models, mapped; the steps
#: after it run per model in the ``finish`` group, which waits for the whole fan-out.
FAN_OUT = next(s.name for s in DRIFT if s.mapped)
OUTSIDE_FINISH = tuple(n for n in DRIFT.names() if n == FAN_OUT or n in DRIFT.ancestors()[FAN_OUT])


@dag(
    dag_id="drift_monitoring",
    schedule=CronDataIntervalTimetable(SCHEDULE, timezone="UTC"),
    start_date=START,
    end_date=END,
    catchup=CATCHUP,
    max_active_runs=1,  # ADWIN's state carries from one interval to the next
    doc_md=DOC_MD,
    tags=["modelgate", "drift"],
    default_args={"retries": RETRIES, "retry_delay": dt.timedelta(seconds=10)},
    on_failure_callback=_record_lost_runs,
    params={
        "interval_start": Param("", type="string", pattern=TEXT_PATTERN, description=(
            "manual runs: start of the interval to read, e.g. 2024-03-01 (default: the run's "
            "data interval, else the last complete interval before the run was triggered)")),
        # Checked when a run is triggered; an override path that does not exist is refused,
        # without retries, by `plan`.
        "model_name": Param("", type="string", pattern=TEXT_PATTERN,
                            description="one model only (default: every monitored one)"),
        "live": Param("", type="string", pattern=TEXT_PATTERN,
                      description="override: live partitions (directory or s3://)"),
        "labels": Param("", type="string", pattern=TEXT_PATTERN,
                        description="override: label partitions (joined by id_column)"),
        "reference": Param("", type="string", pattern=TEXT_PATTERN,
                           description="build a missing reference sketch from this"),
        "sample_size": Param(0, type="integer", minimum=0, maximum=INTEGER_MAX,
                             description="override (0: the config's)"),
        "adwin_delta": Param(0.002, type="number", exclusiveMinimum=0, exclusiveMaximum=1),
        "thresholds": Param({}, type="object", description=(
            'override, e.g. {"relative": 1.8, "features": {"age": {"relative": 3.0}}, '
            '"multivariate": {"relative": 1.8, "floor": 0.05}, "attribution": {"relative": 1.2}}')),
    },
)
def drift_monitoring() -> None:
    @task
    def plan() -> list[MonitorSpecDict]:
        """The models this run watches, each with the data it reads."""
        from modelgate.pipelines.drift import feature_steps
        from modelgate.pipelines.tasks import refusals_are_final

        context = get_current_context()
        # A bad interval_start, an override naming nothing, a model without a monitoring
        # config: refused here, before any run row, and failed without retries (a retry
        # would be refused alike).
        with refusals_are_final():
            start, end = _interval(context)
            print(f"data interval {start.isoformat()}..{end.isoformat()}")
            return feature_steps.monitor_specs(_ctx(), dict(context["params"]))

    # A dict return annotation made TaskFlow infer multiple_outputs (each key is also an XCom
    # of its own); stated on the tasks that return a payload, so their XComs stay the same
    # whatever the annotation says.
    @task(map_index_template="{{ spec['model_name'] }}", multiple_outputs=True)
    def prepare(spec: MonitorSpecDict) -> PreparedModel:
        from modelgate.pipelines.drift import runner

        return runner.prepare(_ctx(), spec, *_interval(get_current_context()))

    @task(trigger_rule="all_done")
    def carry_on(done: Any) -> list[Any]:
        """The models whose previous step succeeded (a failed model drops out, the rest go on)."""
        return [d for d in done if d is not None]

    @task(map_index_template="{{ prepared['spec']['model_name'] }}", multiple_outputs=True)
    def sample_and_score(prepared: PreparedModel) -> ScoredModel:
        from modelgate.pipelines.drift import runner

        scored: ScoredModel = _step(prepared["run"], runner.sample_and_score, prepared)
        return scored

    @task
    def features_of(sampled: list[ScoredModel]) -> list[FeatureTask]:
        """One entry per (model, feature) to fan out over."""
        from modelgate.pipelines.drift import runner

        return [t for s in sampled for t in runner.feature_tasks(s)]

    @task(map_index_template="{{ run['model_name'] }}: {{ feature }}")
    def feature_drift(run: DriftRefDict, sample: LiveSample, feature: str,
                      thresholds: dict[str, Any]) -> str:
        from modelgate.pipelines.drift import feature_steps

        return str(_step(run, feature_steps.feature_drift, sample, feature, thresholds))

    @task_group
    def finish(sampled: ScoredModel) -> None:
        """Per model: labels to ADWIN, the report, the rows, the verdict."""

        @task
        def concept_drift(sampled: ScoredModel) -> str:
            from modelgate.pipelines.drift import runner

            return str(_step(sampled["run"], runner.concept_drift, sampled))

        @task
        def joint_drift(sampled: ScoredModel) -> str:
            """Multivariate drift of the numeric features and drift of the SHAP attribution profile."""
            from modelgate.pipelines.drift import runner

            return str(_step(sampled["run"], runner.joint_drift, sampled))

        @task
        def estimate(sampled: ScoredModel) -> str:
            """Data quality against the reference schema and performance estimated before labels."""
            from modelgate.pipelines.drift import runner

            return str(_step(sampled["run"], runner.estimate, sampled))

        @task
        def segment_drift(sampled: ScoredModel) -> str:
            """Drift of every feature within every segment the monitoring config names (BH over all)."""
            from modelgate.pipelines.drift import runner

            return str(_step(sampled["run"], runner.segment_drift, sampled))

        @task(trigger_rule="all_done")  # runs when another model's feature task failed
        def report(sampled: ScoredModel) -> str:
            from modelgate.pipelines.drift import feature_steps, runner

            ctx, run = _ctx(), sampled["run"]
            feature_steps.check_not_failed(ctx, feature_steps.DriftRef(**run))
            key = _step(run, runner.report, sampled)
            link = ctx.store.link(key, expiry_s=ctx.settings.presign_expiry_s)
            get_current_context()["ti"].xcom_push(key=REPORT_URL_XCOM, value=link)  # for ReportLink
            print(f"drift report: {link_for_log(link)} (signed link: Report button / XCom)")
            return str(key)

        @task
        def store(sampled: ScoredModel, key: str) -> str:
            from modelgate.pipelines.drift import runner

            return str(_step(sampled["run"], runner.store, sampled, key))

        @task(retries=0)
        def decide(sampled: ScoredModel) -> str:
            """Fail, without retries, when drift breached the thresholds."""
            from airflow.sdk.exceptions import AirflowFailException

            from modelgate.pipelines.drift import feature_steps

            try:
                return str(feature_steps.decide(_ctx(), feature_steps.DriftRef(**sampled["run"])))
            except feature_steps.DriftBreached as exc:
                raise AirflowFailException(str(exc)) from exc

        # The order inside the group is DRIFT's; the group waits for the feature fan-out.
        build: dict[str, Callable[[dict[str, Any]], Any]] = {
            "concept_drift": lambda done: concept_drift(sampled),
            "joint_drift": lambda done: joint_drift(sampled),
            "estimate": lambda done: estimate(sampled),
            "segment_drift": lambda done: segment_drift(sampled),
            "report": lambda done: report(sampled),
            "store": lambda done: store(sampled, done["report"]),
            "decide": lambda done: decide(sampled),
        }
        tasks = wire(DRIFT, build, {}, wired_elsewhere=OUTSIDE_FINISH)
        tasks["report"].operator.operator_extra_links = (ReportLink(),)
        return None

    @task
    def all_models_done() -> None:
        """Leaf that fails (upstream_failed) when any model's step failed, so the run is red."""

    # OUTSIDE_FINISH, in DRIFT's order: each maps over the models the step before carried on
    # (see the module docstring for why this is not built by wire).
    prepared = prepare.expand(spec=plan())
    scored = sample_and_score.expand(prepared=carry_on(prepared))
    sampled = carry_on(scored)
    parts = feature_drift.expand_kwargs(features_of(sampled))
    finished = finish.expand(sampled=sampled)
    parts >> finished  # every model's report waits for the whole feature fan-out
    [prepared, scored, parts, finished] >> all_models_done()


drift_dag = drift_monitoring()

if __name__ == "__main__":
    drift_dag.test()
