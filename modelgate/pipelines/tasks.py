"""The one wrapper every DAG task goes through: open the stores, run a step, record failures.

Kept free of heavy imports at module level so DAG files stay cheap to parse. It knows no
pipeline by name: the caller passes its run reference, its pipeline's ``fail`` and, for runs
that keep a heartbeat, how to beat, so this module imports neither pipeline (imports only go
downward).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context

RefT = TypeVar("RefT")


def open_context() -> Context:
    from modelgate import logsafe
    from modelgate.pipelines.context import Context

    logsafe.install()
    return Context.open(migrate=False)


def run_step(ref: RefT, fail: Callable[[Context, RefT, BaseException], None],
             step: Callable[..., Any], *args: Any,
             beat: Callable[[Context, RefT], None] | None = None) -> Any:
    """Run ``step(ctx, ref, *args)``; on any error or kill ``fail(ctx, ref, exc)`` records the
    run as failed with the reason, then the error is re-raised.

    SIGTERM (Airflow killing the task) raises inside the step and is recorded like an error.

    Parameters
    ----------
    ref : RunRef or DriftRef
        The run the step belongs to (``evaluate.RunRef(**xcom)``, ``drift.DriftRef(**xcom)``).
    fail : callable
        That pipeline's ``fail``: ``evaluate.fail`` or ``drift.fail``.
    step : callable
        One step of the pipeline, called as ``step(ctx, ref, *args)``.
    beat : callable, optional
        Called as ``beat(ctx, ref)`` every minute while the step works (``evaluate.beat``
        keeps an evaluation run's heartbeat, so a dead worker's run is found abandoned).
    """
    import contextlib

    from modelgate.pipelines.liveness import heartbeat, sigterm_raises

    ctx = open_context()
    beating: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if beat is not None:
        beating = heartbeat(lambda: beat(ctx, ref))
    try:
        with sigterm_raises(), beating:
            return step(ctx, ref, *args)
    except BaseException as exc:
        fail(ctx, ref, exc)
        raise
