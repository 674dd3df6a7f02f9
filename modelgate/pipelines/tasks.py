"""The one wrapper every DAG task goes through: open the stores, run a step, record failures.

Kept free of heavy imports at module level so DAG files stay cheap to parse. It knows no
pipeline by name: the caller passes its run reference, its pipeline's ``fail`` and, for runs
that keep a heartbeat, how to beat, so this module imports neither pipeline (imports only go
downward).

A task that refuses its input (:func:`~modelgate.pipelines.refusals.refusal_types`: an
unknown model version, a bad dataset, policy or setting) fails without Airflow's retries:
the next try would read the same input and be refused alike, leaving a second refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    run as failed with the reason, then the error is re-raised. An error on an Airflow try
    that Airflow will retry is only logged: the last try decides. A refusal is final: it is
    recorded at once and, inside Airflow, re-raised as a failure Airflow does not retry
    (:func:`final_failure`).

    SIGTERM (Airflow killing the task) raises inside the step and is handled like an error:
    Airflow's task runner retries a try that raised it as it retries any other failure, so
    only a last try records the run failed. A last try killed without a chance to raise
    (SIGKILL) is recorded by the DAGs' ``on_failure_callback``
    (``drift.runner.fail_lost_runs``, ``evaluation.runner.fail_lost_run``).

    Parameters
    ----------
    ref : RunRef or DriftRef
        The run the step belongs to (``run_refs.RunRef(**xcom)``, ``feature_steps.DriftRef(**xcom)``).
    fail : callable
        That pipeline's ``fail``: ``run_refs.fail`` (evaluation) or ``feature_steps.fail`` (drift).
    step : callable
        One step of the pipeline, called as ``step(ctx, ref, *args)``.
    beat : callable, optional
        Called as ``beat(ctx, ref)`` every minute while the step works (``run_refs.beat``
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
    except BaseException as exc:  # SIGTERM and Ctrl-C too: Airflow retries those tries alike
        final = final_failure(exc)
        if final is not exc or not _airflow_retries(exc):
            fail(ctx, ref, exc)
        if final is exc:
            raise
        raise final from exc


@contextmanager
def refusals_are_final() -> Iterator[None]:
    """Inside a DAG task: a refusal raised inside fails the task without Airflow's retries.

    For the tasks that run before a run reference exists (the evaluation's ``verify``, the
    drift run's ``plan``); steps run through :func:`run_step` get the same.
    """
    try:
        yield
    except Exception as exc:
        final = final_failure(exc)
        if final is exc:
            raise
        raise final from exc


def final_failure(exc: BaseException) -> BaseException:
    """What a task raises for ``exc``: inside an Airflow task, a refusal
    (:func:`~modelgate.pipelines.refusals.refusal_types`) becomes Airflow's
    ``AirflowFailException`` (failed, never retried) with the refusal's type and message;
    anything else, and everything outside Airflow, is ``exc`` itself."""
    from modelgate.pipelines.refusals import refusal_types

    if not isinstance(exc, refusal_types()) or not _in_airflow_task():
        return exc
    from airflow.sdk.exceptions import AirflowFailException

    return AirflowFailException(f"{type(exc).__name__}: {exc}")


def _in_airflow_task() -> bool:
    try:
        from airflow.sdk import get_current_context

        get_current_context()
    except Exception:  # noqa: BLE001 - not inside a running Airflow task
        return False
    return True


def _airflow_retries(exc: BaseException) -> bool:
    """True when this is an Airflow task try that Airflow will run again after ``exc``.

    Such a failure is not the run's: recording it would leave the run ``failed`` although
    the next try succeeds (a drift run's later steps then refuse it). The try is logged;
    the last try's failure is recorded. Outside an Airflow task this is always False.
    """
    import logging

    try:
        from airflow.sdk import get_current_context
        from airflow.sdk.exceptions import AirflowFailException

        ti = get_current_context()["ti"]
        will_retry = airflow_will_retry() and not isinstance(exc, AirflowFailException)
    except Exception:  # noqa: BLE001 - not inside a running Airflow task
        return False
    if will_retry:
        logging.getLogger("modelgate.pipeline").warning(
            "try %d of %d failed (%s); Airflow will try again, the run is not failed yet",
            ti.try_number, ti.max_tries + 1, type(exc).__name__)
    return bool(will_retry)


def airflow_will_retry() -> bool:
    """True inside an Airflow task try that Airflow runs again if it fails; False on the
    last try and outside Airflow (``modelgate monitor retry``, the tests)."""
    try:
        from airflow.sdk import get_current_context

        ti = get_current_context()["ti"]
    except Exception:  # noqa: BLE001 - not inside a running Airflow task
        return False
    # Airflow's own answer (the API server's should_retry, what its task runner acts on);
    # the try count when a runner does not carry it.
    server_says = getattr(getattr(ti, "_ti_context_from_server", None), "should_retry", None)
    return bool(ti.try_number <= ti.max_tries if server_says is None else server_says)
