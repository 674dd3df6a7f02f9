"""Airflow DAG ``drift_monitoring``: does live data still look like the reference?

prepare -> sample_and_score -> feature_drift (mapped, one task per feature) + concept_drift
-> report -> store -> decide. Each run works on its own data interval
(``data_interval_start``/``end``), never the clock, so catchup and backfills work and a
re-run of an interval gives the same rows.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pendulum
from airflow.sdk import Param, dag, get_current_context, task

from modelgate.airflow_links import REPORT_URL_XCOM, ReportLink
from modelgate.logsafe import link_for_log

DOC_MD = """
### drift_monitoring — is the production model still seeing the data it was judged on?

Every interval: samples the live rows of the interval, scores them with the model in
`production`, compares each feature and the score distribution with the model's reference
(Wasserstein-1 normalised by the reference std for numeric features, Jensen-Shannon base 2
for categorical and binned numeric ones), and feeds newly labelled rows to ADWIN.

**Red run at task `decide`**: at least one feature breached its threshold. The task log lists
them, largest first; the production model is marked `is_drifting` in PostgreSQL and the next
evaluation of a candidate shows this drift context. The drift report (link in the `report`
task log and `drift_run.report_uri`) has histograms and the error-rate timeline.

**Red run at another task**: the run itself failed (no production model, a column missing or
of a changed type in the live data); `drift_run.status = 'failed'` with `failure_reason`.
An interval with no live rows is recorded as `no_data`, not a failure.
"""

RETRIES = int(os.environ.get("MODELGATE_DAG_RETRIES", "1"))
SCHEDULE = os.environ.get("MODELGATE_DRIFT_SCHEDULE", "@daily")
CATCHUP = os.environ.get("MODELGATE_DRIFT_CATCHUP", "false").lower() == "true"
START = pendulum.parse(os.environ.get("MODELGATE_DRIFT_START_DATE", "1970-01-01"), tz="UTC")


def _ctx() -> Any:
    from modelgate.pipelines.tasks import open_context

    return open_context()


def _step(run: dict[str, Any], fn: Any, *args: Any) -> Any:
    from modelgate.pipelines.tasks import run_step

    return run_step("drift", run, fn, *args)


@dag(
    dag_id="drift_monitoring",
    schedule=SCHEDULE,
    start_date=START,
    catchup=CATCHUP,
    max_active_runs=1,  # ADWIN's state carries from one interval to the next
    doc_md=DOC_MD,
    tags=["modelgate", "drift"],
    default_args={"retries": RETRIES, "retry_delay": dt.timedelta(seconds=10)},
    params={
        "model_name": Param("gss-high-income", type="string"),
        "live": Param("", type="string", description="live partitions: directory or s3://bucket/prefix"),
        "labels": Param("", type="string", description="label partitions (joined by id_column)"),
        "reference": Param("", type="string", description="reference parquet (first run only)"),
        "sample_size": Param(5000, type="integer", minimum=1),
        "adwin_delta": Param(0.002, type="number", exclusiveMinimum=0, exclusiveMaximum=1),
        "thresholds": Param({}, type="object", description=(
            'drift thresholds, e.g. {"relative": 1.8, "features": {"age": {"relative": 3.0}}}')),
    },
)
def drift_monitoring() -> None:
    @task
    def prepare() -> dict[str, Any]:
        from modelgate.pipelines import drift

        context = get_current_context()
        params = context["params"]
        return drift.prepare(_ctx(), model_name=params["model_name"],
                             interval_start=context["data_interval_start"],
                             interval_end=context["data_interval_end"],
                             reference_uri=params["reference"])

    @task
    def sample_and_score(prepared: dict[str, Any]) -> dict[str, Any]:
        from modelgate.pipelines import drift

        params = get_current_context()["params"]
        return dict(_step(prepared["run"], drift.sample_and_score, params["live"],
                          int(params["sample_size"])))

    @task
    def features_of(prepared: dict[str, Any]) -> list[str]:
        """The features to fan out over (Airflow maps only over a task's return value)."""
        return list(prepared["features"])

    @task(map_index_template="{{ feature }}")
    def feature_drift(run: dict[str, Any], sample: dict[str, Any], feature: str) -> str:
        from modelgate.pipelines import drift

        thresholds = get_current_context()["params"]["thresholds"]
        return str(_step(run, drift.feature_drift, sample, feature, thresholds))

    @task
    def concept_drift(run: dict[str, Any], _sample: dict[str, Any]) -> str:
        from modelgate.pipelines import drift

        params = get_current_context()["params"]
        return str(_step(run, drift.concept_drift, params["labels"], float(params["adwin_delta"])))

    @task
    def report(run: dict[str, Any], sample: dict[str, Any], features: list[str],
               _parts: Any, _concept: str) -> str:
        from modelgate.pipelines import drift

        ctx = _ctx()
        key = _step(run, drift.render_report, sample, features)
        link = ctx.store.link(key, expiry_s=ctx.settings.presign_expiry_s)
        get_current_context()["ti"].xcom_push(key=REPORT_URL_XCOM, value=link)  # for ReportLink
        print(f"drift report: {link_for_log(link)} (signed link: Report button / XCom)")
        return str(key)

    @task
    def store(run: dict[str, Any], sample: dict[str, Any], features: list[str], key: str) -> str:
        from modelgate.pipelines import drift

        return str(_step(run, drift.store_results, sample, features, key))

    @task(retries=0)
    def decide(run: dict[str, Any], _verdict: str) -> str:
        """Fail the run, without retries, when drift breached the thresholds."""
        from airflow.sdk.exceptions import AirflowFailException

        from modelgate.pipelines import drift

        try:
            return str(drift.decide(_ctx(), drift.DriftRef(**run)))
        except drift.DriftBreached as exc:
            raise AirflowFailException(str(exc)) from exc

    prepared = prepare()  # `-> dict` pushes "run" and "features" as XComs of their own
    run, features = prepared["run"], features_of(prepared)
    sample = sample_and_score(prepared)
    parts = feature_drift.partial(run=run, sample=sample).expand(feature=features)
    concept = concept_drift(run, sample)
    key = report(run, sample, features, parts, concept)
    key.operator.operator_extra_links = (ReportLink(),)  # type: ignore[attr-defined]
    decide(run, store(run, sample, features, key))


drift_dag = drift_monitoring()

if __name__ == "__main__":
    drift_dag.test()
