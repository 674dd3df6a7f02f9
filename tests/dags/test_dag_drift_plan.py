"""The drift DAG's ``plan`` task fails at once, without Airflow's retries, on a run that cannot
work: a bad ``interval_start`` param, a model without a monitoring config, a ``thresholds``
param that cannot work (issue #39). The task's own function is called inside an Airflow task
context whose try Airflow would retry (the DAG's default ``retries``); a refusal must come out
as ``AirflowFailException`` (failed, never retried) naming the param.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context


class _TaskInstance:
    try_number, max_tries = 1, 1  # the first of two tries: a plain failure would be retried


@pytest.fixture(scope="module")
def plan() -> Callable[[], Any]:
    from modelgate.airflow_runner import load_dag

    return load_dag("drift_monitoring").get_task("plan").python_callable


@contextmanager
def _running(params: dict[str, Any]) -> Iterator[None]:
    from airflow.sdk.execution_time.context import set_current_context

    run = SimpleNamespace(data_interval_start=None, data_interval_end=None,
                          run_after=dt.datetime(2024, 3, 9, 5, tzinfo=dt.UTC))
    with set_current_context({"ti": _TaskInstance(), "dag_run": run,  # type: ignore[typeddict-item]
                              "params": {"interval_start": "", "model_name": "", "live": "",
                                         "labels": "", "reference": "", **params}}):
        yield


@pytest.mark.parametrize(("start", "message"), [
    ("2024-13-01", "InputRefused: interval_start must be the ISO 8601 start of a data interval "
                   r"\(e.g. 2024-03-01 or 2024-03-01T00:00:00\+00:00\), got '2024-13-01'"),
    ("2024-03-01T06:00:00+00:00", "InputRefused: interval_start 2024-03-01T06:00:00\\+00:00 is not the "
                                  "start of an interval of the schedule"),
], ids=["not-a-date", "not-an-interval-start"])
def test_a_bad_interval_start_fails_plan_without_retries(plan: Callable[[], Any], start: str,
                                                         message: str) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match=message), _running({"interval_start": start}):
        plan()


def test_a_model_without_a_monitoring_config_fails_plan_without_retries(
        plan: Callable[[], Any], settings_env: Settings, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from modelgate.pipelines.drift.monitor_checks import MonitorConfigError

    ctx = Context.open(settings_env)
    monkeypatch.setitem(plan.__globals__, "_ctx", lambda: ctx)
    with pytest.raises(AirflowFailException, match="MonitorConfigError: model 'nobody' has no monitoring "
                                                   "config; run `modelgate monitor set` or pass params "
                                                   "'live' and 'labels'") as caught, \
            _running({"model_name": "nobody", "interval_start": "2024-03-01"}):
        plan()
    assert isinstance(caught.value.__cause__, MonitorConfigError)
    with pytest.raises(AirflowFailException, match="MonitorConfigError: drift thresholds: unknown key"), \
            _running({"model_name": "nobody", "live": str(tmp_path), "labels": str(tmp_path),
                      "thresholds": {"relativ": 2}}):
        plan()


def test_a_failure_that_is_not_a_refusal_is_left_to_airflow(plan: Callable[[], Any],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable() -> Any:
        raise ConnectionError("results store unreachable")

    monkeypatch.setitem(plan.__globals__, "_ctx", unreachable)
    with pytest.raises(ConnectionError), _running({"interval_start": "2024-03-01"}):
        plan()  # a retry may well succeed
