"""The one wrapper every DAG task goes through: open the stores, run a step, record failures.

Kept free of heavy imports at module level so DAG files stay cheap to parse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal


def open_context() -> Any:
    from modelgate.pipelines.context import Context

    return Context.open(migrate=False)


def run_step(kind: Literal["evaluation", "drift"], run: dict[str, Any],
             step: Callable[..., Any], *args: Any) -> Any:
    """Run ``step(ctx, ref, *args)``; on error record the run as failed with the reason, re-raise."""
    from modelgate.pipelines import drift, evaluate

    ref: Any
    fail: Callable[..., None]
    if kind == "evaluation":
        ref, fail = evaluate.RunRef(**run), evaluate.fail
    else:
        ref, fail = drift.DriftRef(**run), drift.fail
    ctx = open_context()
    try:
        return step(ctx, ref, *args)
    except Exception as exc:
        fail(ctx, ref, exc)
        raise
