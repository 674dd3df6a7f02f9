"""A pipeline's step graph: the one place that says which step runs after which.

Each pipeline (:mod:`~modelgate.pipelines.evaluation.runner`,
:mod:`~modelgate.pipelines.drift.runner`) declares its steps once, as a :class:`StepGraph`.
Its DAG builds its task dependencies from that graph (a test compares the DAG's task graph
with it) and :func:`run_in_process` runs the same steps, in the same order, for the CLI
and the tests. Kept free of heavy imports: DAG files import it at parse time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context

RefT = TypeVar("RefT")


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a pipeline.

    Parameters
    ----------
    name : str
        The step's name, which is also its Airflow task id (inside a task group, the id
        is ``<group>.<name>``).
    fn : callable
        How the step runs in-process, called as ``fn(ctx, ref, done)``, where ``done``
        maps every earlier step's name to what it returned. The first step of a graph
        opens the run instead and is called by its runner (it has no ``ref`` yet).
    after : tuple of str
        The steps that must have finished first (its direct upstream tasks in the DAG).
    mapped : bool
        The DAG runs one task per item (dynamic task mapping); ``fn`` runs the items one
        after the other.
    verdict : bool
        The step answers the run's question by raising (the gate blocked, drift was found):
        its exception is the answer, not a failure, so the run is not recorded as failed.
    """

    name: str
    fn: Callable[..., Any]
    after: tuple[str, ...] = ()
    mapped: bool = False
    verdict: bool = False


@dataclass(frozen=True, slots=True)
class StepGraph:
    """Steps in an order that respects ``after``; the first step is the graph's only root.

    Raises
    ------
    ValueError
        When names repeat, a step runs after an unknown or later step, or a step other
        than the first has no ``after``.

    Examples
    --------
    >>> graph = StepGraph((Step("open", print), Step("a", print, after=("open",)),
    ...                    Step("b", print, after=("open",)), Step("c", print, after=("a", "b"))))
    >>> graph.names()
    ('open', 'a', 'b', 'c')
    >>> sorted(graph.ancestors()["c"])
    ['a', 'b', 'open']
    >>> StepGraph((Step("open", print), Step("a", print, after=("b",))))
    Traceback (most recent call last):
    ...
    ValueError: step 'a' runs after 'b', which is not an earlier step; earlier: ['open']
    """

    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        seen: list[str] = []
        for i, step in enumerate(self.steps):
            if step.name in seen:
                raise ValueError(f"step name {step.name!r} appears twice")
            if i and not step.after:
                raise ValueError(f"step {step.name!r} has no 'after'; only the first step is a root")
            for name in step.after:
                if name not in seen:
                    raise ValueError(f"step {step.name!r} runs after {name!r}, which is not an "
                                     f"earlier step; earlier: {seen}")
            seen.append(step.name)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __getitem__(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"no step {name!r}; steps: {list(self.names())}")

    @property
    def root(self) -> Step:
        return self.steps[0]

    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.steps)

    def ancestors(self) -> dict[str, frozenset[str]]:
        """Every step's transitive upstream steps (what must have finished before it starts)."""
        found: dict[str, frozenset[str]] = {}
        for step in self.steps:
            found[step.name] = frozenset(step.after).union(*(found[a] for a in step.after))
        return found


def run_in_process(graph: StepGraph, ctx: Context, ref: RefT, done: dict[str, Any], *,
                   fail: Callable[[Context, RefT, BaseException], None],
                   beat: Callable[[Context, RefT], None],
                   through: str | None = None,
                   seconds: dict[str, float] | None = None) -> dict[str, Any]:
    """Run the graph's steps after the root one after the other, in declared order; a step
    whose output ``done`` holds already (run elsewhere, e.g. by an earlier Airflow task) is
    not run again.

    Parameters
    ----------
    graph : StepGraph
        The pipeline's steps.
    ctx : Context
        The stores.
    ref : RunRef or DriftRef
        The run the root step opened.
    done : dict
        The root step's output under its name, and any later step's that ran already; every
        step's output is added under its name.
    fail : callable
        The pipeline's ``fail(ctx, ref, exc)``: records the run as failed when a step
        (other than a verdict step) raises, Ctrl-C and SIGTERM included; the error is
        re-raised.
    beat : callable
        The pipeline's ``beat(ctx, ref)``, called every minute while the steps work.
    through : str, optional
        Stop after this step (default: run every step).
    seconds : dict, optional
        Filled with each step's wall-clock seconds by step name.

    Returns
    -------
    dict
        ``done``, with every step's output.
    """
    current: Step | None = None
    try:  # everything, set-up included: the run is open, so an interrupt anywhere must fail it
        from modelgate.pipelines.liveness import heartbeat

        if through is not None:
            graph[through]  # noqa: B018 - raises KeyError naming the steps
        with heartbeat(lambda: beat(ctx, ref)):
            for step in graph.steps[1:]:
                if step.name not in done:
                    current = step
                    started = time.perf_counter()
                    done[step.name] = step.fn(ctx, ref, done)
                    current = None
                    if seconds is not None:
                        seconds[step.name] = time.perf_counter() - started
                if step.name == through:
                    break
    except BaseException as exc:
        if current is None or not current.verdict:
            fail(ctx, ref, exc)
        raise
    return done


def wire(graph: StepGraph, build: Mapping[str, Callable[[dict[str, Any]], Any]],
         done: dict[str, Any], *, wired_elsewhere: tuple[str, ...] = ()) -> dict[str, Any]:
    """Create Airflow tasks for the graph's steps and set their dependencies from ``after``.

    ``build[name](done)`` creates the step's task (a TaskFlow call, which may pass earlier
    tasks' outputs from ``done`` as data); then every ``after`` step's task is set upstream
    of it, so the DAG's order is the declared one whatever data the task takes.

    Parameters
    ----------
    graph : StepGraph
        The pipeline's steps.
    build : mapping of str to callable
        How to create each step's task that is not in ``done`` yet.
    done : dict
        Tasks already created (the root, steps built outside a task group), by step name;
        the new ones are added.
    wired_elsewhere : tuple of str
        Upstream steps the caller sets upstream of these tasks itself (a task group's
        upstream, set on the whole group).

    Returns
    -------
    dict
        ``done`` with the new tasks.
    """
    for step in graph.steps:
        if step.name in done or step.name in wired_elsewhere:
            continue
        missing = [a for a in step.after if a not in done and a not in wired_elsewhere]
        if missing:
            raise ValueError(f"step {step.name!r}: upstream step(s) {missing} have no task")
        task = build[step.name](done)
        for name in step.after:
            if name in done:
                done[name] >> task
        done[step.name] = task
    return done

