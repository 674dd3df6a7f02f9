"""One step order per pipeline: the DAGs' task graphs are the runners' declared graphs, and
the in-process runner runs steps in that order, records failures and keeps verdicts apart.

The DAGs are imported as Airflow parses them (``load_dag``); nothing runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from modelgate.pipelines.drift.runner import DRIFT
from modelgate.pipelines.evaluation.runner import EVALUATION
from modelgate.pipelines.steps import Step, StepGraph, run_in_process

#: drift_monitoring's tasks that only route data (fan-out lists, dropping failed models, the
#: run's red/green leaf); every other task is a DRIFT step.
DRIFT_PLUMBING = {"plan", "carry_on", "carry_on__1", "features_of", "all_models_done"}


def _upstream(dag: Any) -> dict[str, set[str]]:
    return {t.task_id: set(t.upstream_task_ids) for t in dag.tasks}


def _ancestors(upstream: Mapping[str, set[str]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}

    def visit(node: str) -> set[str]:
        if node not in found:
            found[node] = set()
            for parent in upstream[node]:
                found[node] |= {parent} | visit(parent)
        return found[node]

    for node in upstream:
        visit(node)
    return found


def _step_order(upstream: Mapping[str, set[str]], step_of: Mapping[str, str]) -> dict[str, set[str]]:
    """Each step task's step ancestors, through any routing task in between."""
    ancestors = _ancestors(upstream)
    return {step_of[t]: {step_of[a] for a in ancestors[t] if a in step_of} for t in step_of}


@pytest.fixture(scope="module")
def evaluation_dag() -> Any:
    from modelgate.airflow_runner import load_dag

    return load_dag("model_evaluation")


@pytest.fixture(scope="module")
def drift_dag() -> Any:
    from modelgate.airflow_runner import load_dag

    return load_dag("drift_monitoring")


#: model_evaluation's task that runs every step after ``partitions`` for small held-out data.
ONE_TASK = "evaluate_in_one_task"
#: The step the evaluation DAG's first task runs too (verify plans the partitions).
IN_VERIFY = "partitions"


def test_evaluation_dag_is_the_declared_graph(evaluation_dag: Any) -> None:
    """Exactly: one task per step but ``partitions`` (verify's), named by it, each with the
    declared upstream steps plus the first one (every task takes the run reference it
    opened); beside them the short path's one task, after score alone (it runs when score
    was skipped), with nothing after it."""
    root = EVALUATION.root.name
    expected = {s.name: {root if a == IN_VERIFY else a for a in s.after} | {root}
                for s in EVALUATION if s.name not in (root, IN_VERIFY)}
    upstream = _upstream(evaluation_dag)
    assert upstream.pop(ONE_TASK) == {"score"}
    assert upstream == {root: set(), **expected}
    assert not evaluation_dag.get_task(ONE_TASK).downstream_task_ids


def test_evaluation_dag_keeps_its_task_settings(evaluation_dag: Any) -> None:
    tasks = {t.task_id: t for t in evaluation_dag.tasks}
    mapped = {name for name, t in tasks.items() if t.is_mapped}
    assert mapped == {s.name for s in EVALUATION if s.mapped} == {"score"}
    assert tasks["gate"].retries == 0 and tasks["promote"].retries == tasks["verify"].retries
    assert [type(link).__name__ for link in tasks["report"].operator_extra_links] == ["ReportLink"]
    assert [type(link).__name__ for link in tasks[ONE_TASK].operator_extra_links] == ["ReportLink"]
    assert tasks[ONE_TASK].retries == tasks["verify"].retries and not tasks[ONE_TASK].is_mapped
    assert tasks[ONE_TASK].trigger_rule == "all_skipped"  # skipped by Airflow, no process


def test_drift_dag_orders_the_steps_as_declared(drift_dag: Any) -> None:
    upstream = _upstream(drift_dag)
    step_of = {t: t.rpartition(".")[2] for t in upstream if t not in DRIFT_PLUMBING}
    assert sorted(step_of.values()) == sorted(DRIFT.names())  # each step once, nothing else
    declared = {name: set(a) for name, a in DRIFT.ancestors().items()}
    assert _step_order(upstream, step_of) == declared
    tasks = {t.task_id: t for t in drift_dag.tasks}
    assert {step_of[t] for t, task in tasks.items() if t in step_of and task.retries == 0} == {"decide"}
    assert {s.name for s in DRIFT if s.verdict} == {"decide"}
    assert tasks["feature_drift"].is_mapped and [s.name for s in DRIFT if s.mapped] == ["feature_drift"]


#: The tasks whose payload is also pushed key by key as XComs of their own (TaskFlow's
#: multiple_outputs). TaskFlow infers it from a task's return annotation, so typing the
#: payloads could change it silently; every other task pushes one XCom.
SPLIT_XCOMS = {"model_evaluation": set(), "drift_monitoring": {"prepare", "sample_and_score"}}


@pytest.mark.parametrize("dag_fixture", ["evaluation_dag", "drift_dag"])
def test_only_the_payload_tasks_push_their_keys_as_xcoms(dag_fixture: str,
                                                          request: pytest.FixtureRequest) -> None:
    dag = request.getfixturevalue(dag_fixture)
    split = {t.task_id for t in dag.tasks if t.multiple_outputs}
    assert split == SPLIT_XCOMS[dag.dag_id]


def test_the_order_check_sees_a_missing_dependency(drift_dag: Any) -> None:
    """The comparison can fail: the DAG without the feature fan-out -> group edge differs."""
    upstream = _upstream(drift_dag)
    for task in ("finish.concept_drift", "finish.joint_drift", "all_models_done"):
        upstream[task] = upstream[task] - {"feature_drift"}
    step_of = {t: t.rpartition(".")[2] for t in upstream if t not in DRIFT_PLUMBING}
    assert _step_order(upstream, step_of) != {n: set(a) for n, a in DRIFT.ancestors().items()}


# --- the in-process runner, with in-memory steps -------------------------------------------

class _Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.failed: list[str] = []

    def step(self, name: str, *, raises: BaseException | None = None) -> Any:
        def fn(ctx: Any, ref: Any, done: dict[str, Any]) -> str:
            self.calls.append(name)
            if raises is not None:
                raise raises
            return f"{name} after {sorted(done)}"
        return fn

    def fail(self, ctx: Any, ref: Any, exc: BaseException) -> None:
        self.failed.append(f"{type(exc).__name__}: {exc}")


def _graph(rec: _Recorder, **raising: BaseException) -> StepGraph:
    def step(name: str, after: tuple[str, ...] = (), verdict: bool = False) -> Step:
        return Step(name, rec.step(name, raises=raising.get(name)), after=after, verdict=verdict)

    return StepGraph((step("open"), step("b", ("open",)), step("a", ("open",)),
                      step("check", ("a", "b"), verdict=True), step("last", ("check",))))


def _run(graph: StepGraph, rec: _Recorder, **kwargs: Any) -> dict[str, Any]:
    return run_in_process(graph, None, "ref", {"open": "ref"}, fail=rec.fail,  # type: ignore[arg-type]
                          beat=lambda ctx, ref: None, **kwargs)


def test_runner_runs_steps_in_declared_order_with_earlier_outputs() -> None:
    rec, seconds = _Recorder(), {}  # type: ignore[var-annotated]
    done = _run(_graph(rec), rec, seconds=seconds)
    assert rec.calls == ["b", "a", "check", "last"] and rec.failed == []
    assert done["check"] == "check after ['a', 'b', 'open']"
    assert sorted(seconds) == ["a", "b", "check", "last"] and min(seconds.values()) >= 0


def test_runner_leaves_out_the_steps_done_elsewhere() -> None:
    """What the evaluation DAG's one task does: the steps before it ran as tasks of their own."""
    rec = _Recorder()
    graph = _graph(rec)
    stopped = run_in_process(graph, None, "ref", {"open": "ref", "b": "b in a task"},  # type: ignore[arg-type]
                             fail=rec.fail, beat=lambda ctx, ref: None, through="b")
    assert rec.calls == [] and stopped == {"open": "ref", "b": "b in a task"}  # through a done step
    done = run_in_process(graph, None, "ref", {"open": "ref", "b": "b in a task"},  # type: ignore[arg-type]
                          fail=rec.fail, beat=lambda ctx, ref: None)
    assert rec.calls == ["a", "check", "last"] and done["check"] == "check after ['a', 'b', 'open']"
    assert done["b"] == "b in a task"


def test_runner_stops_after_through() -> None:
    rec = _Recorder()
    assert sorted(_run(_graph(rec), rec, through="a")) == ["a", "b", "open"]
    with pytest.raises(KeyError, match="no step 'nope'"):
        _run(_graph(rec), rec, through="nope")


@pytest.mark.parametrize("exc", [ValueError("bad column 'x'"), KeyboardInterrupt()],
                         ids=["error", "ctrl-c"])
def test_a_failing_step_records_the_run_failed_and_reraises(exc: BaseException) -> None:
    rec = _Recorder()
    with pytest.raises(type(exc)):
        _run(_graph(rec, a=exc), rec)
    assert rec.calls == ["b", "a"] and rec.failed == [f"{type(exc).__name__}: {exc}"]


def test_a_verdict_step_raising_is_an_answer_not_a_failure() -> None:
    rec = _Recorder()
    with pytest.raises(RuntimeError, match="blocked"):
        _run(_graph(rec, check=RuntimeError("blocked")), rec)
    assert rec.calls == ["b", "a", "check"] and rec.failed == []


@pytest.mark.parametrize(("steps", "message"), [
    ((Step("open", print), Step("open", print, after=("open",))), "appears twice"),
    ((Step("open", print), Step("a", print)), "only the first step is a root"),
    ((Step("open", print), Step("a", print, after=("later",)), Step("later", print, after=("open",))),
     "'later', which is not an earlier step"),
], ids=["duplicate", "second-root", "forward-reference"])
def test_a_malformed_graph_is_refused(steps: tuple[Step, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StepGraph(steps)
