"""Object keys of the HTML reports: short, readable, and never shared by two runs.

A report lives at ``reports/<model>/<version>/<file>`` (each part through
:func:`~modelgate.pipelines.context.safe_key_part`), next to the model's index page. ``<file>`` is

* ``evaluation-<YYYY-MM-DD>-run<evaluation_run_id>[-attempt<n>].html``: the date (UTC) the
  run's attempt started;
* ``drift-<YYYY-MM-DD>[T<HH-MM>[-<SS>]]-run<drift_run_id>[-attempt<n>].html``: the start (UTC)
  of the data interval, its time of day only when it is not midnight.

What makes two keys differ is the run id, a database sequence that names the run (the
evaluation's run key, which names the caller, model, archive and champion; the drift run's
model version and interval), and the attempt (``attempt``, migration 0022): how many times
the row was started, ``-attempt<n>`` only from the second on. A re-run of the same run key or
interval resets its row and counts one more attempt, so it writes a new report beside the old
one and never overwrites it; a retried report *step* within one attempt rewrites its own key.
The date and time are for people. The keys are injective within one results database; two
databases sharing one bucket (and so reusing run ids) are not supported.

Keys stored before migration 0022 (``evaluation-<run key>.html``, ``drift-<interval
start>.html``) stay valid: every reader (index page, ``modelgate report link``, ``model
show``, the analyst views) takes a run's key from its row.
"""

from __future__ import annotations

import datetime as dt

from modelgate.pipelines.context import safe_key_part


def _folder(model_name: str, version: str) -> str:
    return f"reports/{safe_key_part(model_name)}/{safe_key_part(version)}"


def _run_part(run_id: int, attempt: int) -> str:
    if run_id < 1 or attempt < 1:
        raise ValueError(f"run id and attempt must be >= 1, got run id {run_id!r}, attempt {attempt!r}")
    return f"run{run_id}" + ("" if attempt == 1 else f"-attempt{attempt}")


def _utc(when: dt.datetime, name: str) -> dt.datetime:
    if when.tzinfo is None:
        raise ValueError(f"{name} must be timezone-aware, got {when!r}")
    return when.astimezone(dt.UTC)


def evaluation_report_key(model_name: str, version: str, *, run_id: int, attempt: int,
                          started_at: dt.datetime) -> str:
    """The key of an evaluation run's report.

    Parameters
    ----------
    model_name, version : str
        The candidate's registered name and version.
    run_id : int
        ``evaluation_run.evaluation_run_id``.
    attempt : int
        ``evaluation_run.attempt`` (1 for the first start of the run key).
    started_at : datetime
        When the attempt started (``evaluation_run.started_at``), timezone-aware.

    Returns
    -------
    str
        ``reports/<model>/<version>/evaluation-<date>-run<id>[-attempt<n>].html``.

    Raises
    ------
    ValueError
        ``run_id`` or ``attempt`` below 1, or a naive ``started_at``.

    Examples
    --------
    >>> when = dt.datetime(2026, 11, 29, 22, 26, 9, tzinfo=dt.UTC)
    >>> evaluation_report_key("churn", "2", run_id=42, attempt=1, started_at=when)
    'reports/churn/2/evaluation-2026-11-29-run42.html'
    >>> evaluation_report_key("churn", "2", run_id=42, attempt=3, started_at=when)
    'reports/churn/2/evaluation-2026-11-29-run42-attempt3.html'
    """
    day = _utc(started_at, "started_at").strftime("%Y-%m-%d")
    return f"{_folder(model_name, version)}/evaluation-{day}-{_run_part(run_id, attempt)}.html"


def interval_label(start: dt.datetime) -> str:
    """An interval's start as a key part: the UTC date, then ``T<HH-MM>`` (and ``-<SS>``) only
    when it is not midnight.

    >>> interval_label(dt.datetime(1991, 1, 1, tzinfo=dt.UTC))
    '1991-01-01'
    >>> interval_label(dt.datetime(1991, 1, 1, 13, tzinfo=dt.timezone(dt.timedelta(hours=2))))
    '1991-01-01T11-00'
    >>> interval_label(dt.datetime(1991, 1, 1, 0, 0, 30, tzinfo=dt.UTC))
    '1991-01-01T00-00-30'
    """
    utc = _utc(start, "interval start")
    if utc.time() == dt.time(0):
        return utc.strftime("%Y-%m-%d")
    return utc.strftime("%Y-%m-%dT%H-%M" + ("-%S" if utc.second or utc.microsecond else ""))


def drift_report_key(model_name: str, version: str, *, run_id: int, attempt: int,
                     interval_start: dt.datetime) -> str:
    """The key of a drift run's report.

    Parameters
    ----------
    model_name, version : str
        The monitored production version.
    run_id : int
        ``drift_run.drift_run_id`` (one per model version and data interval).
    attempt : int
        ``drift_run.attempt`` (1 for the first run of the interval).
    interval_start : datetime
        Start of the data interval, timezone-aware.

    Returns
    -------
    str
        ``reports/<model>/<version>/drift-<interval>-run<id>[-attempt<n>].html``.

    Raises
    ------
    ValueError
        ``run_id`` or ``attempt`` below 1, or a naive ``interval_start``.

    Examples
    --------
    >>> start = dt.datetime(1991, 1, 1, tzinfo=dt.UTC)
    >>> drift_report_key("churn", "1", run_id=7, attempt=1, interval_start=start)
    'reports/churn/1/drift-1991-01-01-run7.html'
    >>> drift_report_key("churn", "1", run_id=8, attempt=2, interval_start=start.replace(hour=1))
    'reports/churn/1/drift-1991-01-01T01-00-run8-attempt2.html'
    """
    return (f"{_folder(model_name, version)}/drift-{interval_label(interval_start)}-"
            f"{_run_part(run_id, attempt)}.html")
