"""The one wrapper every DAG task goes through: open the stores, run a step, record failures.

Kept free of heavy imports at module level so DAG files stay cheap to parse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal


def open_context() -> Any:
    from modelgate import logsafe
    from modelgate.pipelines.context import Context

    logsafe.install()
    return Context.open(migrate=False)


def run_step(kind: Literal["evaluation", "drift"], run: dict[str, Any],
             step: Callable[..., Any], *args: Any) -> Any:
    """Run ``step(ctx, ref, *args)``; on any error or kill record the run as failed, re-raise.

    SIGTERM (Airflow killing the task) raises inside the step and is recorded like an error;
    an evaluation run's heartbeat is kept while the step works.
    """
    import contextlib

    from modelgate.pipelines import drift, evaluate
    from modelgate.pipelines.liveness import heartbeat, sigterm_raises
    from modelgate.store import runs

    ref: Any
    fail: Callable[..., None]
    ctx = open_context()
    beating: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if kind == "evaluation":
        ref, fail = evaluate.RunRef(**run), evaluate.fail
        beating = heartbeat(lambda: runs.beat(ctx.db_url, ref.evaluation_run_id))
    else:
        ref, fail = drift.DriftRef(**run), drift.fail
    try:
        with sigterm_raises(), beating:
            return step(ctx, ref, *args)
    except BaseException as exc:
        fail(ctx, ref, exc)
        raise
