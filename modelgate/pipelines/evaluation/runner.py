"""The evaluation pipeline's step graph and its in-process runner.

``EVALUATION`` is the single statement of the step order. The ``model_evaluation`` DAG
builds its task dependencies from it (one task per step, ids = step names), and
:func:`run_evaluation` runs the same steps one after the other for ``modelgate evaluate``,
the tests and the benchmarks. The steps themselves are the functions of the step modules beside it
(``prepare_step``, ``score_step``, ... ``promote_step``); the adapters below only say what each one is given
(the DAG's tasks call :func:`plan_partitions` and :func:`score_partition` too, so the fan-out's
payload, :class:`~modelgate.pipelines.payloads.Partition`, is built in one place).
They import those modules and look their functions up when called: DAG files import this
module at parse time, and a test may replace a step.

    verify -> partitions -> score (mapped) -> merge -> metrics, fairness, explain
    metrics, fairness -> decide; decide, explain -> report -> store -> gate
    gate -> reference_sketch -> promote

``reference_sketch`` (:mod:`.reference_sketch_step`) is the one step that reaches the drift
pipeline: a candidate of a monitored model gets its drift reference sketch before it is promoted.

The DAG has no ``partitions`` task: its ``verify`` task opens the run and plans the partitions
(:func:`plan_partitions`), choosing, for small held-out data, one task for every later step
(:func:`run_after_partitions`, the same in-process run) over the mapped path: below
:data:`ONE_TASK_MAX_MB` the per-task cost outweighs the spread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from modelgate.pipelines.steps import Step, StepGraph, run_in_process

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context
    from modelgate.pipelines.evaluation.run_refs import RunRef
    from modelgate.pipelines.payloads import Partition

log = logging.getLogger("modelgate.evaluate")


def _step_module(name: str) -> ModuleType:
    """The step module ``name`` of this package, imported when a step runs (see above)."""
    from modelgate.pipelines.evaluation import (
        explain_step,
        fairness_step,
        gate_step,
        metrics_step,
        prepare_step,
        promote_step,
        reference_sketch_step,
        report_step,
        run_refs,
        score_step,
        store_step,
    )

    modules = (explain_step, fairness_step, gate_step, metrics_step, prepare_step, promote_step,
               reference_sketch_step, report_step, run_refs, score_step, store_step)
    return {m.__name__.rpartition(".")[2]: m for m in modules}[name]


def _prepare(ctx: Context, **run: Any) -> RunRef:
    ref: RunRef = _step_module("prepare_step").prepare(ctx, **run)
    return ref


def _run_only(module: str, step: str) -> Callable[[Context, RunRef, dict[str, Any]], Any]:
    """``<module>.<step>(ctx, ref)``: a step that needs nothing but its run."""
    def call(ctx: Context, ref: RunRef, done: dict[str, Any]) -> Any:
        return getattr(_step_module(module), step)(ctx, ref)

    call.__name__ = call.__qualname__ = step
    return call


def partitions(ctx: Context, ref: RunRef) -> list[Partition]:
    """The held-out dataset's files in order, numbered from 0: one ``score`` task each."""
    from modelgate.pipelines.evaluation import score_step

    return [{"index": i, "uri": uri} for i, uri in enumerate(score_step.list_dataset(ctx, ref))]


#: The DAG evaluates held-out data of at most this many MiB (its parquet files as listed, in
#: all) in one task (:func:`run_after_partitions`) instead of one ``score`` task per file and
#: a task per later step. Each Airflow task costs seconds before it does any work (a fresh
#: process, the DAG parsed, imports, Execution API calls: 4-14 s each on the loaded 2-core
#: test machine, bench/RESULTS.md), so below this size the 8-10 serial tasks cost more than
#: scoring the files side by side saves; 32 MiB is about 3.5M rows of the demo model, about
#: 25 s of scoring in one process there. The DAG param ``one_task_max_mb`` overrides it
#: (0: always one task per file).
ONE_TASK_MAX_MB = 32


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """How the DAG evaluates the held-out data: its partitions (one ``score`` task each on
    the mapped path), their listed size in bytes, and whether one task runs it all."""

    partitions: list[Partition]
    total_bytes: int
    one_task: bool


def in_one_task(total_bytes: int, *, max_mb: int) -> bool:
    """True when held-out data of ``total_bytes`` is evaluated in one task (at most ``max_mb`` MiB).

    >>> in_one_task(32 << 20, max_mb=32), in_one_task((32 << 20) + 1, max_mb=32)
    (True, False)
    >>> in_one_task(1, max_mb=0)
    False
    """
    if max_mb < 0:
        raise ValueError(f"max_mb must be 0 or more (MiB), got {max_mb!r}")
    return total_bytes <= max_mb << 20


def plan_partitions(ctx: Context, ref: RunRef, max_mb: int) -> PartitionPlan:
    """The DAG's ``verify`` task, once the run is open: list the held-out files once (with their
    sizes) and choose between one task for the whole evaluation and one ``score`` task per partition."""
    from modelgate.pipelines.evaluation import partitions as dataset_partitions
    from modelgate.pipelines.evaluation import score_step

    files = score_step.list_files(ctx, ref)
    found: list[Partition] = [{"index": i, "uri": uri}
                              for i, uri in enumerate(dataset_partitions.batch_by_size(files))]
    total = sum(size for _, size in files)
    return PartitionPlan(found, total, in_one_task(total, max_mb=max_mb))


def _recorded_by_the_task(ctx: Context, ref: RunRef, exc: BaseException) -> None:
    """The task's wrapper (``pipelines.tasks.run_step``) records a failure, on Airflow's last
    try only: a try Airflow retries is not the run's failure."""


def _beaten_by_the_task(ctx: Context, ref: RunRef) -> None:
    """The task's wrapper keeps the run's heartbeat while the steps work."""


def run_after_partitions(ctx: Context, ref: RunRef, found: list[Partition]) -> dict[str, Any]:
    """The DAG's one-task path: every step after ``partitions``, in this process and in
    ``EVALUATION`` order, as :func:`run_evaluation` runs them for ``modelgate evaluate``
    (``promote`` included: the DAG's runs promote a passed candidate). Same run, same rows,
    same report and object keys as the mapped path; a step's error is raised to the task's
    wrapper, which records it. A blocked candidate is an answer here (``gate`` is False and
    nothing is promoted); the task then fails the DAG run as the ``gate`` task does.

    Returns
    -------
    dict
        Every step's output by step name.
    """
    seconds: dict[str, float] = {}
    done = run_in_process(EVALUATION, ctx, ref, {EVALUATION.root.name: ref, "partitions": found},
                          fail=_recorded_by_the_task, beat=_beaten_by_the_task, through="promote",
                          seconds=seconds)
    log.info("evaluation run %d in one task: %s", ref.evaluation_run_id,
             ", ".join(f"{name} {s:.1f} s" for name, s in seconds.items()))
    return done


def score_partition(ctx: Context, ref: RunRef, partition: Partition) -> str:
    """Score one of :func:`partitions`; the key of its stored result."""
    from modelgate.pipelines.evaluation import score_step

    return score_step.score_partition(ctx, ref, partition["index"], partition["uri"])


def _partitions(ctx: Context, ref: RunRef, done: dict[str, Any]) -> list[Partition]:
    return partitions(ctx, ref)


def _score(ctx: Context, ref: RunRef, done: dict[str, Any]) -> list[str]:
    found: list[Partition] = done["partitions"]
    return [score_partition(ctx, ref, p) for p in found]


def _merge(ctx: Context, ref: RunRef, done: dict[str, Any]) -> str:
    return _step_module("score_step").merge_partitions(ctx, ref, list(done["score"]))


def _gate(ctx: Context, ref: RunRef, done: dict[str, Any]) -> bool:
    """True when the candidate may be promoted. In-process a block is an answer (the run is
    ``blocked``), so it stops the run here instead of raising; the DAG's task raises."""
    from modelgate.pipelines.evaluation import gate_step, run_refs

    try:
        gate_step.enforce_gate(ctx, ref)
    except run_refs.EvaluationBlocked:
        return False
    return True


def _reference_sketch(ctx: Context, ref: RunRef, done: dict[str, Any]) -> str | None:
    return _step_module("reference_sketch_step").reference_sketch(ctx, ref) if done["gate"] else None


def _promote(ctx: Context, ref: RunRef, done: dict[str, Any]) -> str | None:
    if not done["gate"]:
        return None
    return _step_module("promote_step").promote(ctx, ref, done["reference_sketch"])


EVALUATION = StepGraph((
    Step("verify", _prepare),
    Step("partitions", _partitions, after=("verify",)),
    Step("score", _score, after=("partitions",), mapped=True),
    Step("merge", _merge, after=("score",)),
    Step("metrics", _run_only("metrics_step", "compute_metrics"), after=("merge",)),
    Step("fairness", _run_only("fairness_step", "compute_fairness"), after=("merge",)),
    Step("explain", _run_only("explain_step", "explain"), after=("merge",)),
    Step("decide", _run_only("gate_step", "decide"), after=("metrics", "fairness")),
    Step("report", _run_only("report_step", "render_report"), after=("decide", "explain")),
    Step("store", _run_only("store_step", "store_results"), after=("report",)),
    Step("gate", _gate, after=("store",), verdict=True),
    Step("reference_sketch", _reference_sketch, after=("gate",)),
    Step("promote", _promote, after=("reference_sketch",)),
))


@dataclass(frozen=True, slots=True)
class EvaluationRun:
    """What :func:`run_evaluation` did: the run, and every step's output and wall-clock
    seconds by step name."""

    ref: RunRef
    outputs: dict[str, Any]
    seconds: dict[str, float]

    @property
    def status(self) -> str | None:
        """``passed`` or ``blocked`` once the results are stored; None when stopped earlier."""
        status = self.outputs.get("store")
        return None if status is None else str(status)

    @property
    def report_link(self) -> str | None:
        link = self.outputs.get("report")
        return None if link is None else str(link)

    @property
    def promoted(self) -> str | None:
        """What promotion did (None when not asked for or when the gate blocked)."""
        text = self.outputs.get("promote")
        return None if text is None else str(text)


def run_evaluation(ctx: Context, *, model_name: str, version: str, dataset_uri: str, run_key: str,
                   policy_path: str | None = None, promote: bool = False,
                   allow_looser_policy: bool = False, through: str | None = None,
                   segments: Sequence[str] = (), segment_pairs: bool = False) -> EvaluationRun:
    """Open an evaluation run and run its steps in this process, in ``EVALUATION`` order.

    Partitions are scored one after the other (the DAG maps them over tasks). The run's
    heartbeat is kept while the steps work; any error, Ctrl-C or SIGTERM (raised as
    :class:`~modelgate.pipelines.liveness.Terminated`) records the run as failed and is
    re-raised.

    Parameters
    ----------
    ctx : Context
        The stores.
    model_name, version : str
        The registered candidate.
    dataset_uri : str
        The held-out data: a parquet file, a directory of them or an ``s3://`` prefix.
    run_key : str
        The caller's key; the run's key adds the model's identity
        (:func:`~modelgate.pipelines.evaluation.run_keys.evaluation_run_key`).
    policy_path : str, optional
        A policy YAML layered over the default and per-model policies; checked and stored
        with the run by the first step.
    promote : bool
        Also run ``gate`` and ``promote``: a passed candidate becomes production. Without
        it the run stops after ``store``. Under an ad-hoc policy looser than the model's
        own on a blocking check, the first step refuses a run that would promote
        (:class:`~modelgate.pipelines.evaluation.policy_provenance.LooserPolicyRefused`) unless
        ``allow_looser_policy``.
    allow_looser_policy : bool
        Allow promotion under such a policy; stored with the run.
    through : str, optional
        Stop after this step instead (tests that stop a run part-way).
    segments : sequence of str, optional
        Segment columns evaluated beside the policy's own (``segments.columns``).
    segment_pairs : bool
        Evaluate every pair of the segment columns too.

    Returns
    -------
    EvaluationRun
    """
    run_refs = _step_module("run_refs")
    ref = _prepare(ctx, model_name=model_name, version=version, dataset_uri=dataset_uri,
                   run_key=run_key, policy_path=policy_path, promote=promote,
                   allow_looser_policy=allow_looser_policy, segments=tuple(segments),
                   segment_pairs=segment_pairs)
    seconds: dict[str, float] = {}
    done = run_in_process(EVALUATION, ctx, ref, {EVALUATION.root.name: ref}, fail=run_refs.fail,
                          beat=run_refs.beat, through=through or ("promote" if promote else "store"),
                          seconds=seconds)
    return EvaluationRun(ref, done, seconds)


#: The DAG's ``model_name`` param, as a refusal names it.
MISSING_MODEL_NAME = ("param 'model_name' is missing: name the registered model to evaluate, e.g. "
                      "--conf '{\"model_name\": \"churn\", \"model_version\": \"2\"}'")


def require_model_name(ctx: Context, model_name: object, *, run_key: str, version: str,
                       dataset_uri: str) -> str:
    """The run's model name; a run that names none is refused before any run row exists.

    The refusal is recorded (``analytics.evaluation_refusals``, model name empty) and
    :class:`ValueError` names the param. The DAG's ``model_name`` param defaults to None so
    that Airflow can build a failed run's callback context; this is where a run without
    one stops.
    """
    from modelgate.store import runs

    if isinstance(model_name, str) and model_name.strip():
        return model_name
    runs.record_refusal(ctx.db_url, run_key=run_key, model_name="", version=version,
                        dataset_uri=dataset_uri, reason=f"ValueError: {MISSING_MODEL_NAME}")
    raise ValueError(MISSING_MODEL_NAME)


def fail_lost_run(ctx: Context, dag_run_key: str, *, model_name: str, version: str,
                  lost_task: str) -> list[int]:
    """Record the evaluation run of an Airflow DAG run failed if it is still ``running`` once
    that DAG run has failed: every task is over, so no process is left to finish it (the
    last try of ``lost_task``, e.g. ``"task score[0], try 2"``, ended without recording
    why). Returns the id of the run marked, if any.

    ``dag_run_key`` is the key the DAG gave the run (``<dag_id>__<run_id>``); the run's own
    key adds the model's identity (:func:`~modelgate.pipelines.evaluation.run_keys.run_key_prefix`).
    """
    import logging

    from modelgate.pipelines import index_page
    from modelgate.pipelines.evaluation.run_keys import run_key_prefix
    from modelgate.store import runs

    reason = (f"lost: the last try of {lost_task} ended without recording why (its process was "
              "killed, e.g. SIGKILL or out of memory, or it failed outside a pipeline step) and "
              f"Airflow DAG run {dag_run_key} failed; see that task's log")
    failed = runs.fail_lost_runs(ctx.db_url, key_prefix=run_key_prefix(dag_run_key, model_name, version),
                                 model_name=model_name, version=version, reason=reason)
    for run_id, _ in failed:
        logging.getLogger("modelgate.pipeline").error("evaluation run %d failed: %s", run_id, reason)
    if failed:
        index_page.write_model_index(ctx, model_name)
    return [run_id for run_id, _ in failed]
