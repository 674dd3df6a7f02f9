"""Airflow DAG ``model_evaluation``: may this candidate model be promoted?

verify (opens the run and plans its partitions) -> score (one mapped task per held-out
parquet file, candidate and champion) -> merge -> metrics, fairness, explain -> decide ->
report -> store -> gate -> reference_sketch -> promote. The order is
``modelgate.pipelines.evaluation.runner.EVALUATION``'s (the same steps ``modelgate evaluate``
runs in one process; its ``partitions`` step is the verify task's second half here, since
each task costs seconds); each task calls one step (a function of a step module in
``modelgate.pipelines.evaluation``) and passes the run's id and key through XCom, never data.

Small held-out data (``one_task_max_mb``, default ``runner.ONE_TASK_MAX_MB``) takes the short
path instead: verify -> evaluate_in_one_task, which runs every step after ``partitions`` in
one task process with the runner ``modelgate evaluate`` uses (``runner.run_after_partitions``),
because each Airflow task costs seconds before it does any work. verify then hands ``score``
no partition, so Airflow skips the mapped path; ``evaluate_in_one_task`` runs only when
``score`` was skipped (trigger rule ``all_skipped``), so on the mapped path Airflow skips it
too. Neither path starts a task process for the other. Airflow maps over a task's return
value only (not over an XCom of another key), so verify returns ``score``'s partitions and
pushes the run as its XCom ``run``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

import pendulum
from airflow.sdk import Param, TriggerRule, dag, get_current_context, task

from modelgate.airflow_links import REPORT_URL_XCOM, ReportLink
from modelgate.config import dag_retries
from modelgate.input_limits import GIVEN_TEXT_PATTERN, TEXT_PATTERN
from modelgate.logsafe import link_for_log
from modelgate.pipelines.evaluation.runner import EVALUATION, ONE_TASK_MAX_MB
from modelgate.pipelines.payloads import Partition, RunRefDict
from modelgate.pipelines.steps import wire

DOC_MD = """
### model_evaluation — the promotion gate

Scores a **candidate** model version on a held-out dataset, compares it with the model in
`production` (the champion) on the same rows, checks fairness gaps per sensitive feature,
explains it with SHAP, and applies the promotion policy.

**Green run**: every blocking check passed; the candidate is now `production` and the
previous production version is `archived`.

**Red run at task `gate`** (or at `evaluate_in_one_task`, which runs every step after
`verify` in one task when the held-out files add up to at most `one_task_max_mb` MiB):
the policy blocked the candidate. The task log lists each breach (metric, threshold,
observed value and interval). Nothing was promoted; the candidate stays `candidate`. The
HTML report (link in the `report` or `evaluate_in_one_task` task's log and in
`evaluation_run.report_uri`) shows the details; analysts can query `gate_check`.

**Red run at any other task** (or at `verify` once it opened the run: it also lists the
held-out files): the evaluation itself failed (bad data, held-out files that cannot be
listed, model archive that does not verify, store unreachable). `evaluation_run.status = 'failed'` with
`failure_reason` says why. A last try whose process was killed before it could record
anything (SIGKILL, out of memory) is recorded by the DAG's failure callback as soon as the
run fails: `failed`, with a reason starting `lost:` that names the task and try. Fix the
cause and clear the run: re-running gives the same rows and object keys. **Red run at task
`verify`** naming `model_name`: the run named no model (the param is required); it is
recorded in `analytics.evaluation_refusals`. **Red run at task `verify`** naming
`allow_looser_policy`: the `policy`
param is looser than the model's own policy on a blocking check; trigger again with
`allow_looser_policy` set to promote under it anyway (recorded with the run). A run whose
input is refused (unknown model version, a dataset that does not exist, a malformed policy or
setting, a segment column missing from a held-out file or of more than 1,000 distinct values,
held-out files lacking a column of the model's or of no rows, a champion of another task) fails
at `verify` once, without retries, leaving one row in `analytics.evaluation_refusals` (or one
failed run for the others). Labels the rows show unusable (missing, a third value) fail `score`
once, without retries. A trigger with an empty
`dataset`, or a param holding a control character, is refused by Airflow itself: no run is
created.
"""

RETRIES = dag_retries()
#: ``verify``'s XCom holding the run (:class:`RunRefDict`) every later task is given.
RUN_XCOM = "run"
#: ``verify``'s XCom for ``evaluate_in_one_task``: the partitions it evaluates, or none.
ONE_TASK_XCOM = "one_task"


def _ctx() -> Any:
    from modelgate.pipelines.tasks import open_context

    return open_context()


def _run_step(run: RunRefDict, step: Callable[..., Any], *args: Any) -> Any:
    from modelgate.pipelines.evaluation import run_refs
    from modelgate.pipelines.tasks import run_step

    return run_step(run_refs.RunRef(**run), run_refs.fail, step, *args, beat=run_refs.beat)


def _dag_run_key(context: Any) -> str:
    """The key the DAG gives its evaluation run (the run's own key adds the model's identity)."""
    return f"{context['dag'].dag_id}__{context['run_id']}"


def _plan(context: Any, run: RunRefDict) -> list[Partition]:
    """``verify``'s second half: list the held-out files once and choose the path. Returns the
    partitions ``score`` maps over (none on the short path) and pushes ``evaluate_in_one_task``'s
    (none on the mapped path). A listing error is recorded as the run's failure."""
    from modelgate.pipelines.evaluation import runner

    max_mb = int(context["params"].get("one_task_max_mb", ONE_TASK_MAX_MB))
    plan: runner.PartitionPlan = _run_step(run, runner.plan_partitions, max_mb)
    print(f"{len(plan.partitions)} partition(s), {plan.total_bytes / 2**20:.1f} MiB: "
          f"{'one task' if plan.one_task else 'one score task each'} (one_task_max_mb {max_mb})")
    context["ti"].xcom_push(key=ONE_TASK_XCOM, value=plan.partitions if plan.one_task else [])
    return [] if plan.one_task else plan.partitions


def _record_lost_run(context: Any) -> None:
    """DAG failure callback: the evaluation run still ``running`` lost its task (a last try
    killed without a chance to record it, e.g. SIGKILL, for which Airflow 3.3 runs no task
    callback); record it ``failed`` now, naming that task and try, rather than ``abandoned``
    later. On a run that recorded its own failure (or verdict) it does nothing.
    """
    from modelgate.pipelines.evaluation.runner import fail_lost_run

    params, ti = context.get("params") or {}, context.get("ti")
    model_name = params.get("model_name")
    if ti is None or not isinstance(model_name, str) or not model_name.strip():
        # Airflow sends a bare context when it lost the run's details; a run without a
        # model_name was refused at verify (analytics.evaluation_refusals) before any run row
        logging.getLogger("modelgate.pipeline").warning(
            "evaluation DAG run %s failed; %s, so there is no evaluation run to record",
            context.get("run_id"), "its task is unknown here" if ti is None else "it named no model_name")
        return
    task = ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"
    fail_lost_run(_ctx(), _dag_run_key(context), model_name=model_name,
                  version=str(params.get("model_version")), lost_task=f"task {task}, try {ti.try_number}")


@dag(
    dag_id="model_evaluation",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    doc_md=DOC_MD,
    tags=["modelgate", "evaluation"],
    default_args={"retries": RETRIES, "retry_delay": dt.timedelta(seconds=10)},
    on_failure_callback=_record_lost_run,
    params={
        # Default None, not a model: a run names its model (the demo's is not the product's
        # default), and verify refuses one that does not. A Param without a default made
        # Airflow's callback context (which validates the params) raise ParamValidationError.
        "model_name": Param(None, type=["null", "string"], pattern=TEXT_PATTERN,
                            description="registered model name (required)"),
        # Checked by Airflow when a run is triggered (a conf breaking the schema creates no
        # run): a dataset must be given (empty was the worker's folder, every parquet under it)
        "model_version": Param("1", type="string", pattern=GIVEN_TEXT_PATTERN,
                               description="candidate version to evaluate"),
        "dataset": Param("", type="string", pattern=GIVEN_TEXT_PATTERN,
                         description="held-out parquet (required): a file, a directory of "
                                     "parquet files, or s3://bucket/key or prefix"),
        "policy": Param("", type="string", pattern=TEXT_PATTERN,
                        description="policy YAML path (empty: the default policy)"),
        "allow_looser_policy": Param(False, type="boolean",
                                     description="promote even when the policy is looser than the "
                                                 "model's own on a blocking check (recorded)"),
        "segments": Param("", type="string", pattern=TEXT_PATTERN,
                          description="segment columns, comma-separated (beside the policy's "
                                      "segments.columns; empty: the policy's only)"),
        "segment_pairs": Param(False, type="boolean",
                               description="every pair of the segment columns is a segment too"),
        "one_task_max_mb": Param(ONE_TASK_MAX_MB, type="integer", minimum=0,
                                 description="held-out parquet up to this many MiB in all is "
                                             "evaluated in one task (0: one score task per file)"),
    },
)
def model_evaluation() -> None:
    @task
    def verify() -> list[Partition]:
        """Open the run row for this candidate (the archive is verified when it is scored) and
        plan its held-out data. Returns the partitions ``score`` maps over (none on the short
        path); the run and the short path's partitions are XComs of their own. A refusal (no
        model, unknown version, bad dataset or policy, a segment column missing from the data or
        of too many values) is final: no retry."""
        from airflow.sdk.exceptions import AirflowFailException

        from modelgate.pipelines.evaluation import prepare_step
        from modelgate.pipelines.evaluation.runner import require_model_name
        from modelgate.pipelines.tasks import refusals_are_final

        context = get_current_context()
        params, ctx, run_key = context["params"], _ctx(), _dag_run_key(context)
        try:  # a run without a model is refused (recorded); a retry would be refused alike
            model_name = require_model_name(ctx, params.get("model_name"), run_key=run_key,
                                            version=str(params["model_version"]),
                                            dataset_uri=params["dataset"])
        except ValueError as exc:
            raise AirflowFailException(str(exc)) from exc
        with refusals_are_final():
            ref = prepare_step.prepare(
                ctx, model_name=model_name, version=str(params["model_version"]),
                dataset_uri=params["dataset"], run_key=run_key,
                policy_path=params["policy"] or None, promote=True,  # the DAG promotes a pass
                allow_looser_policy=bool(params.get("allow_looser_policy", False)),
                segments=tuple(c.strip() for c in str(params.get("segments") or "").split(",")
                               if c.strip()),
                segment_pairs=bool(params.get("segment_pairs", False)),
            )
        context["ti"].xcom_push(key=RUN_XCOM, value=ref.as_dict())
        return _plan(context, ref.as_dict())

    @task(trigger_rule=TriggerRule.ALL_SKIPPED)
    def evaluate_in_one_task() -> str:
        """Every step after partitions in this task, as ``modelgate evaluate`` runs them; fails
        the DAG run, without retries, when the policy blocked the candidate (as ``gate`` does).
        It runs only when ``score`` was skipped (verify planned no partition for it); on the
        mapped path Airflow skips it without starting a process."""
        from airflow.sdk.exceptions import AirflowFailException

        from modelgate.pipelines.evaluation import gate_step, run_refs, runner

        ti = get_current_context()["ti"]
        # pulled, not taken as arguments: an argument would set verify upstream, and the
        # trigger rule must see score alone
        run: RunRefDict = ti.xcom_pull(task_ids="verify", key=RUN_XCOM)
        found: list[Partition] = ti.xcom_pull(task_ids="verify", key=ONE_TASK_XCOM)
        done = _run_step(run, runner.run_after_partitions, list(found))
        link = str(done["report"])
        print(f"evaluation report: {link_for_log(link)} (signed link: Report button / XCom)")
        ti.xcom_push(key=REPORT_URL_XCOM, value=link)  # for ReportLink
        if not done["gate"]:
            try:
                gate_step.enforce_gate(_ctx(), run_refs.RunRef(**run))
            except run_refs.EvaluationBlocked as exc:
                raise AirflowFailException(str(exc)) from exc
        return link

    @task
    def score(run: RunRefDict, partition: Partition) -> str:
        """Score one partition (candidate and champion) and store its mergeable statistics."""
        from modelgate.pipelines.evaluation import runner

        return str(_run_step(run, runner.score_partition, partition))

    @task
    def merge(run: RunRefDict, scored: list[str]) -> str:
        """Merge the partitions' statistics in partition order and record the scoring."""
        from modelgate.pipelines.evaluation import score_step

        return str(_run_step(run, score_step.merge_partitions, list(scored)))

    @task
    def metrics(run: RunRefDict) -> str:
        from modelgate.pipelines.evaluation import metrics_step

        return str(_run_step(run, metrics_step.compute_metrics))

    @task
    def fairness(run: RunRefDict) -> str:
        from modelgate.pipelines.evaluation import fairness_step

        return str(_run_step(run, fairness_step.compute_fairness))

    @task
    def explain(run: RunRefDict) -> str:
        from modelgate.pipelines.evaluation import explain_step

        return str(_run_step(run, explain_step.explain))

    @task
    def decide(run: RunRefDict) -> str:
        """Apply the policy the verify task checked and stored with the run."""
        from modelgate.pipelines.evaluation import gate_step

        return str(_run_step(run, gate_step.decide))

    @task
    def report(run: RunRefDict) -> str:
        from modelgate.pipelines.evaluation import report_step

        link = str(_run_step(run, report_step.render_report))
        print(f"evaluation report: {link_for_log(link)} (signed link: Report button / XCom)")
        get_current_context()["ti"].xcom_push(key=REPORT_URL_XCOM, value=link)  # for ReportLink
        return link

    @task
    def store(run: RunRefDict) -> str:
        from modelgate.pipelines.evaluation import store_step

        return str(_run_step(run, store_step.store_results))

    @task(retries=0)
    def gate(run: RunRefDict) -> None:
        """Fail the DAG run, without retries, when the policy blocked the candidate."""
        from airflow.sdk.exceptions import AirflowFailException

        from modelgate.pipelines.evaluation import (
            gate_step,
            run_refs,
        )

        try:
            gate_step.enforce_gate(_ctx(), run_refs.RunRef(**run))
        except run_refs.EvaluationBlocked as exc:
            raise AirflowFailException(str(exc)) from exc

    @task
    def reference_sketch(run: RunRefDict) -> str | None:
        """The drift reference sketch of a monitored model's candidate, before its promotion."""
        from modelgate.pipelines.evaluation import reference_sketch_step

        key: str | None = _run_step(run, reference_sketch_step.reference_sketch)
        return key

    @task
    def promote(run: RunRefDict, sketch_key: str | None) -> str:
        from modelgate.pipelines.evaluation import promote_step

        return str(_run_step(run, promote_step.promote, sketch_key))

    # Every task gets the run from verify; the order between them is EVALUATION's. verify
    # also plans the partitions (its return value, which score maps over: Airflow maps over
    # a task's return value only), so the graph's partitions step is no task of its own.
    planned: Any = verify()
    run = planned[RUN_XCOM]
    build: dict[str, Callable[[dict[str, Any]], Any]] = {
        "score": lambda done: score.partial(run=run).expand(partition=done["partitions"]),
        "merge": lambda done: merge(run, done["score"]),
        "metrics": lambda done: metrics(run),
        "fairness": lambda done: fairness(run),
        "explain": lambda done: explain(run),
        "decide": lambda done: decide(run),
        "report": lambda done: report(run),
        "store": lambda done: store(run),
        "gate": lambda done: gate(run),
        "reference_sketch": lambda done: reference_sketch(run),
        "promote": lambda done: promote(run, done["reference_sketch"]),
    }
    tasks = wire(EVALUATION, build, {EVALUATION.root.name: planned, "partitions": planned})
    tasks["report"].operator.operator_extra_links = (ReportLink(),)
    one_task: Any = evaluate_in_one_task()
    tasks["score"] >> one_task  # its only upstream: it runs when score was skipped
    one_task.operator.operator_extra_links = (ReportLink(),)

evaluation_dag = model_evaluation()

if __name__ == "__main__":
    evaluation_dag.test()
