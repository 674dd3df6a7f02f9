"""Which data interval a drift run reads, for every way a run can start.

A scheduled, caught-up or back-filled run of the ``drift_monitoring`` DAG reads the data
interval Airflow gives it, and so does a manual run given a logical date (Airflow infers
its interval from that date). Airflow 3 gives a manual run without a logical date (the UI's
default, ``airflow dags trigger``) no data interval at all, so the drift DAG decides it
here, in this order:

1. the run's param ``interval_start`` (``--conf '{"interval_start": "2024-03-01"}'``): the
   interval of the schedule that starts there (it must be a start of the schedule);
2. the data interval Airflow gave the run;
3. the last complete interval of the schedule before the run was created (its
   ``run_after``): a manual run at 2024-03-02 05:00 of an ``@daily`` DAG reads 2024-03-01,
   the same interval Airflow itself infers for a manual run with a logical date.

``modelgate monitor run NAME --interval START`` uses (1) for intervals no run has read yet.
The intervals are Airflow's own (its cron data-interval timetable), in UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import Any


def _pendulum(when: dt.datetime) -> Any:
    """Airflow's timetables take pendulum's datetimes (they call its ``in_timezone``)."""
    # imported here (and below): the CLI loads this module, Airflow's timetables only when a schedule is read
    import pendulum

    return pendulum.instance(_utc(when))


def _timetable(schedule: str) -> Any:
    from airflow.timetables.interval import CronDataIntervalTimetable

    return CronDataIntervalTimetable(schedule, "UTC")


def _utc(when: dt.datetime) -> dt.datetime:
    """A plain ``datetime`` in UTC (Airflow's timetables return pendulum's subclass)."""
    when = (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    return dt.datetime(when.year, when.month, when.day, when.hour, when.minute, when.second,
                       when.microsecond, tzinfo=dt.UTC)


def interval_starting(schedule: str, start: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The interval of the cron ``schedule`` (UTC) that starts at ``start``.

    Raises
    ------
    ValueError
        When ``start`` is not the start of an interval of ``schedule``.

    Examples
    --------
    >>> interval_starting("@daily", dt.datetime(2024, 3, 1))
    (datetime.datetime(2024, 3, 1, 0, 0, tzinfo=datetime.timezone.utc), \
datetime.datetime(2024, 3, 2, 0, 0, tzinfo=datetime.timezone.utc))
    >>> interval_starting("@daily", dt.datetime(2024, 3, 1, 6))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: interval_start 2024-03-01T06:00:00+00:00 is not the start of an interval ...
    """
    from croniter import croniter

    start = _utc(start)
    timetable = _timetable(schedule)
    end = _utc(croniter(timetable._expression, start).get_next(dt.datetime))
    found = timetable.infer_manual_data_interval(run_after=_pendulum(end))
    if _utc(found.start) != start:
        raise ValueError(f"interval_start {start.isoformat()} is not the start of an interval of "
                         f"the schedule {schedule!r} (UTC); the interval around it starts at "
                         f"{_utc(found.start).isoformat()}")
    return start, end


def last_complete_interval(schedule: str, run_after: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The last interval of ``schedule`` that ended at or before ``run_after`` (Airflow's rule
    for a manual run).

    >>> last_complete_interval("@daily", dt.datetime(2024, 3, 2, 5, tzinfo=dt.UTC))[0]
    datetime.datetime(2024, 3, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    found = _timetable(schedule).infer_manual_data_interval(run_after=_pendulum(run_after))
    return _utc(found.start), _utc(found.end)


def parse_interval_start(text: str) -> dt.datetime:
    """An ISO 8601 interval start (a date means its midnight, UTC).

    >>> parse_interval_start("2024-03-01")
    datetime.datetime(2024, 3, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"interval_start must be the ISO 8601 start of a data interval "
                         f"(e.g. 2024-03-01 or 2024-03-01T00:00:00+00:00), got {text!r}") from None
    return _utc(value)


def run_interval(schedule: str, *, interval_start: str, data_interval: tuple[Any, Any] | None,
                 run_after: dt.datetime | None) -> tuple[dt.datetime, dt.datetime]:
    """The interval one drift DAG run reads (see the module docstring for the order).

    Parameters
    ----------
    schedule : str
        The DAG's cron schedule (``MODELGATE_DRIFT_SCHEDULE``).
    interval_start : str
        The run's param ``interval_start``; empty when not given.
    data_interval : (datetime, datetime) or None
        The data interval Airflow gave the run, None when it gave none.
    run_after : datetime or None
        When the run was due (``dag_run.run_after``).

    Raises
    ------
    modelgate.pipelines.refusals.InputRefused
        When ``interval_start`` is not an ISO 8601 start of an interval of ``schedule`` (a
        refusal: a DAG task fails without retries).
    ValueError
        When there is no interval to read at all.

    Examples
    --------
    >>> at = dt.datetime(2024, 3, 9, 5, tzinfo=dt.UTC)
    >>> run_interval("@daily", interval_start="", data_interval=None, run_after=at)[0].date()
    datetime.date(2024, 3, 8)
    >>> run_interval("@daily", interval_start="2024-03-01", data_interval=None, run_after=at)[0].date()
    datetime.date(2024, 3, 1)
    """
    if interval_start:
        from modelgate.pipelines.refusals import InputRefused

        try:
            return interval_starting(schedule, parse_interval_start(interval_start))
        except ValueError as exc:  # the param cannot work: a refusal, which no retry changes
            raise InputRefused(str(exc)) from None
    if data_interval is not None and None not in data_interval:
        return _utc(data_interval[0]), _utc(data_interval[1])
    if run_after is None:
        raise ValueError("the run has no data interval, no param 'interval_start' and no run_after")
    return last_complete_interval(schedule, run_after)
