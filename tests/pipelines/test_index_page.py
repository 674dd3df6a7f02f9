"""The model index page's builder (``modelgate.pipelines.index_page``), on hand-worked cases:
each run's verdict, stage and note, the refusal of statuses it does not know and of naive
times, the order (newest first, ties broken by kind and run id), relative links and the page's
object key."""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools

import pytest
from modelgate.reports.html import render_model_index
from modelgate.reports.index_views import RunKind

from modelgate.pipelines.index_page import RunRecord, build_index_view, index_key

UTC = dt.UTC


def _rec(kind: RunKind, run_id: int, when: dt.datetime, status: str, key: str, *,
         warned: bool = False, version: str = "1") -> RunRecord:
    return RunRecord(kind, run_id, version, when, status, warned, key)


EVAL_KEY = "reports/churn/2/evaluation-2026-11-29-run3.html"
DRIFT_KEY = "reports/churn/1/drift-2024-01-02-run4.html"


@pytest.mark.parametrize(
    ("status", "warned", "expected"),
    [("passed", False, "passed"), ("passed", True, "warn"), ("blocked", True, "blocked"),
     ("blocked", False, "blocked")],
    ids=["passed", "passed-with-warning", "blocked-with-warning", "blocked"],
)
def test_index_maps_evaluation_status(status: str, warned: bool, expected: str) -> None:
    rec = _rec("evaluation", 1, dt.datetime(2026, 1, 1, tzinfo=UTC), status, EVAL_KEY,
               warned=warned, version="2")
    assert build_index_view("churn", [rec]).runs[0].verdict == expected


@pytest.mark.parametrize(("status", "expected"), [("ok", "ok"), ("no_data", "warn"), ("drift", "drift")],
                         ids=["ok", "no_data", "drift"])
def test_index_maps_drift_status(status: str, expected: str) -> None:
    rec = _rec("drift", 1, dt.datetime(2024, 1, 2, tzinfo=UTC), status, DRIFT_KEY)
    assert build_index_view("churn", [rec]).runs[0].verdict == expected


@pytest.mark.parametrize("status", ["running", "finished"], ids=["running", "unknown"])
def test_index_refuses_unlisted_status(status: str) -> None:
    rec = _rec("evaluation", 1, dt.datetime(2026, 1, 1, tzinfo=UTC), status, EVAL_KEY)
    with pytest.raises(ValueError, match=rf"RunRecord.status .* got '{status}'"):
        build_index_view("churn", [rec])


@pytest.mark.parametrize("status", ["failed", "abandoned"])
def test_index_shows_failed_runs_without_a_link_with_their_reason(status: str) -> None:
    rec = RunRecord("evaluation", 3, "2", dt.datetime(2026, 1, 1, tzinfo=UTC), status, False, None,
                    "candidate", "ScoringError: column 'age' has 3 NaN\nTraceback follows")
    row = build_index_view("churn", [rec]).runs[0]
    assert (row.verdict, row.href, row.stage, row.note) == (
        status, "", "candidate", "ScoringError: column 'age' has 3 NaN")
    page = render_model_index(build_index_view("churn", [rec]))
    assert f'<span class="badge tone-{"bad" if status == "failed" else "warn"}">{status}</span>' in page
    assert "<td>no report</td>" in page and "<a " not in page


def test_index_shows_stage_and_a_blocked_runs_headline() -> None:
    recs = [RunRecord("evaluation", 1, "1", dt.datetime(2026, 1, 1, tzinfo=UTC), "passed", False,
                      EVAL_KEY, "production", "all 9 checks passed"),
            RunRecord("evaluation", 2, "2", dt.datetime(2026, 1, 2, tzinfo=UTC), "blocked", False,
                      EVAL_KEY, "rejected", "BLOCKED by 1 check\nroc_auc: 0.61 below 0.70")]
    rows = build_index_view("churn", recs).runs
    assert [(r.run_id, r.stage, r.note) for r in rows] == [
        ("2", "rejected", "BLOCKED by 1 check"), ("1", "production", "")]
    page = render_model_index(build_index_view("churn", recs))
    assert "<th scope=\"col\">Stage now</th>" in page and "<td>production</td>" in page


def test_index_refuses_naive_time() -> None:
    rec = _rec("drift", 1, dt.datetime(2024, 1, 2), "ok", DRIFT_KEY)
    with pytest.raises(ValueError, match="RunRecord.when must be timezone-aware"):
        build_index_view("churn", [rec])


def test_index_orders_newest_first_with_relative_links() -> None:
    # Hand-worked: 11:00+01:00 is 10:00Z, the same instant as the evaluation run 5, so the
    # tie is broken by kind ("drift" < "evaluation"), then by run id, highest first.
    plus_one = dt.timezone(dt.timedelta(hours=1))
    records = [
        _rec("evaluation", 5, dt.datetime(2026, 11, 29, 10, tzinfo=UTC), "passed", EVAL_KEY),
        _rec("drift", 2, dt.datetime(2024, 1, 2, tzinfo=UTC), "drift", DRIFT_KEY),
        _rec("evaluation", 7, dt.datetime(2026, 11, 29, 10, tzinfo=UTC), "blocked", EVAL_KEY),
        _rec("drift", 9, dt.datetime(2026, 11, 29, 11, tzinfo=plus_one), "ok", DRIFT_KEY),
    ]
    expected = [("drift", "9", "2026-11-29T10:00:00Z"), ("evaluation", "7", "2026-11-29T10:00:00Z"),
                ("evaluation", "5", "2026-11-29T10:00:00Z"), ("drift", "2", "2024-01-02T00:00:00Z")]
    for order in itertools.permutations(records):
        view = build_index_view("churn", order)
        assert [(r.kind, r.run_id, r.when) for r in view.runs] == expected
    assert {r.href for r in view.runs} == {
        "2/evaluation-2026-11-29-run3.html",
        "1/drift-2024-01-02-run4.html"}


def test_index_key_is_safe() -> None:
    assert index_key("churn-v2") == "reports/churn-v2/index.html"
    # a name that is not a plain segment is sanitised and made unique by 16 hex of its sha256
    digest = hashlib.sha256(b"churn v2/eu").hexdigest()[:16]
    assert index_key("churn v2/eu") == f"reports/churn-v2-eu~{digest}/index.html"
