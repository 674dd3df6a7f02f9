"""A model's report index page: every evaluation and drift report, newest first.

The page lives next to the reports at ``reports/<model>/index.html`` and links to them with
relative hrefs (``<version>/evaluation-<date>-run<id>.html``, see :mod:`.report_keys`), so the
whole ``reports/<model>/`` folder can be opened from a local object store, synced to a static
site, or browsed in MinIO without rewriting links. It is rebuilt from PostgreSQL (the source of truth) at the
end of every ``store`` step and after every other change of a run's state (a failure, a
refused promotion, runs marked abandoned), so it lists exactly the runs whose results are
committed; re-running a step rewrites the same key with the same page.

Which runs are listed
---------------------
* every attempt of an evaluation run (``evaluation_attempt``) with a ``report_key`` and status
  ``passed`` or ``blocked``, each linking its own report: a re-run adds a row (run id and
  ``attempt <n>`` from the second on), never replaces one. A passed attempt whose gate had a
  failing ``warn``-severity check is shown as ``warn``.
* drift runs with a ``report_key`` and status ``ok``, ``drift``, ``no_data``,
  ``insufficient_data`` or ``degraded`` (``no_data`` is shown as ``warn``, amber: there was
  nothing to judge; so are ``insufficient_data``, too few values to judge, and ``degraded``:
  partitions were quarantined, unless the data also drifted).
* ``failed`` and ``abandoned`` runs (and evaluation attempts) of either kind, shown as such
  with their failure reason and no link: their report, if any, may not match what is stored.
* Runs still ``running`` are left out.

Each row also says the version's stage now (``candidate``, ``production``, ``archived``...),
and a blocked or warned evaluation the first line of its gate summary.
"""

from __future__ import annotations

import datetime as dt
import logging
import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING

from modelgate.pipelines.context import safe_key_part
from modelgate.store.summaries import ListedRun, listed_runs

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context
    from modelgate.reports import IndexVerdict, ModelIndexView

log = logging.getLogger("modelgate.index_page")

_VERDICTS: dict[tuple[str, bool], IndexVerdict] = {
    ("passed", False): "passed", ("passed", True): "warn", ("blocked", False): "blocked",
    ("ok", False): "ok", ("no_data", False): "warn", ("degraded", False): "warn",
    ("insufficient_data", False): "warn",
    ("drift", False): "drift", ("failed", False): "failed", ("abandoned", False): "abandoned",
}
#: Longest note shown on the page; the full reason is in the database and the run's report.
MAX_NOTE_CHARS = 200


#: One run as read from PostgreSQL, before it becomes a row of the index page: the store's
#: record (``when`` is the evaluation's finish time or the drift run's interval start;
#: ``warned``: a passed evaluation had a failing warn-severity check).
RunRecord = ListedRun


def index_key(model_name: str) -> str:
    """The object key of a model's index page.

    >>> index_key("gss-high-income")
    'reports/gss-high-income/index.html'
    """
    return f"reports/{safe_key_part(model_name)}/index.html"


def build_index_view(model_name: str, records: Iterable[RunRecord]) -> ModelIndexView:
    """Turn run records into the index page's view: newest first, relative links.

    Parameters
    ----------
    model_name : str
        The registered model name (as in ``model_version.model_name``).
    records : iterable of RunRecord
        Runs of that model, in any order. ``when`` must be timezone-aware.

    Returns
    -------
    ModelIndexView
        Rows sorted by ``when`` (newest first), then kind, then run id (highest first), so
        the page is the same for the same records whatever order they came in.

    Raises
    ------
    ValueError
        A record's ``status`` is not one listed on the page, or ``when`` is naive.

    Examples
    --------
    >>> utc = dt.UTC
    >>> rec = RunRecord("drift", 4, "1", dt.datetime(2024, 1, 2, tzinfo=utc), "no_data", False,
    ...                 "reports/churn/1/drift-2024-01-02-run4.html")
    >>> row = build_index_view("churn", [rec]).runs[0]
    >>> row.verdict, row.href, row.when
    ('warn', '1/drift-2024-01-02-run4.html', '2024-01-02T00:00:00Z')
    """
    # The report views are imported here, not at the top: every evaluation task imports this
    # module (through run_refs), and ``modelgate.reports`` binds its SHAP estimator at import
    # (pandas, scipy.stats: seconds), which a task that writes no page never needs.
    from modelgate.reports import IndexRow, ModelIndexView

    folder = posixpath.dirname(index_key(model_name))
    ordered = sorted(records, key=lambda r: (r.kind, -r.run_id, -r.attempt))
    ordered.sort(key=lambda r: _utc(r).timestamp(), reverse=True)
    rows = tuple(IndexRow(r.kind, _run_label(r), r.version, _utc(r).strftime("%Y-%m-%dT%H:%M:%SZ"),
                          _verdict(r), _href(r.report_key, folder), r.stage, _note(r))
                 for r in ordered)
    return ModelIndexView(model_name, runs=rows)


def _run_label(record: RunRecord) -> str:
    """The run id, and the attempt from the second on (an evaluation's, with its policy source).

    >>> when = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    >>> _run_label(RunRecord("evaluation", 7, "1", when, "passed", False, "k", attempt=2,
    ...                      policy_source="model_file"))
    '7 attempt 2 (policy: model_file)'
    """
    label = str(record.run_id) + ("" if record.attempt == 1 else f" attempt {record.attempt}")
    return label + (f" (policy: {record.policy_source})" if record.policy_source else "")


def _href(report_key: str | None, folder: str) -> str:
    """A report's link relative to the index page; "" for a run without one."""
    return "" if report_key is None else posixpath.relpath(report_key, folder)


def _note(record: RunRecord) -> str:
    """The first line of a run's failure reason or gate summary; none for a clean pass.

    >>> _note(RunRecord("evaluation", 1, "1", dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "blocked",
    ...                 False, "k", "candidate", "BLOCKED by 1 check\\nroc_auc below 0.7"))
    'BLOCKED by 1 check'
    """
    if record.status in ("passed", "ok") and not record.warned:
        return ""
    first = record.note.split("\n", 1)[0].strip()
    return first if len(first) <= MAX_NOTE_CHARS else first[:MAX_NOTE_CHARS - 1] + "…"


def _utc(record: RunRecord) -> dt.datetime:
    if record.when.tzinfo is None:
        raise ValueError(f"RunRecord.when must be timezone-aware, got {record.when!r}")
    return record.when.astimezone(dt.UTC)


def _verdict(record: RunRecord) -> IndexVerdict:
    try:
        return _VERDICTS[(record.status, record.warned and record.status == "passed")]
    except KeyError:
        allowed = sorted({status for status, _ in _VERDICTS})
        raise ValueError(f"RunRecord.status for a {record.kind} run must be one of {allowed!r}, "
                         f"got {record.status!r}") from None


def read_runs(db_url: str, model_name: str) -> list[RunRecord]:
    """Read the model's listed evaluation and drift runs (see the module docstring)."""
    return listed_runs(db_url, model_name)


def write_model_index(ctx: Context, model_name: str) -> str:
    """Rebuild and store ``reports/<model>/index.html``; return its object key.

    Parameters
    ----------
    ctx : Context
        The database URL and object store to use.
    model_name : str
        The registered model whose runs are listed.

    Returns
    -------
    str
        The object key of the index page (see :func:`index_key`).
    """
    # imported here: run_refs loads this module in every task; the report views load jinja2 and pandas
    from modelgate.reports import render_model_index

    view = build_index_view(model_name, read_runs(ctx.db_url, model_name))
    key = index_key(model_name)
    ctx.store.put_bytes(key, render_model_index(view).encode("utf-8"),
                        content_type="text/html; charset=utf-8")
    log.info("index page for %s: %d run(s) at %s", model_name, len(view.runs), ctx.store.uri(key))
    return key
