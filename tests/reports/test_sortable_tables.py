"""The evaluation and drift reports' sortable tables: one inline script, allowed by the sha256 of its text
in the page's Content-Security-Policy, and nothing else that could run.

The hash is computed here with hashlib from the script as the page carries it (not with the
renderer's helper); the page is read with Python's ``html.parser``. The sorting itself runs in
headless Chromium (tests/e2e/test_sortable_tables_browser.py).
"""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from modelgate.reports.drift_segment_views import SegmentDriftRow, SegmentEstimateRow
from modelgate.reports.drift_views import DriftReportView, FeatureDriftRow
from modelgate.reports.html import render_drift_report, render_evaluation_report, render_model_index
from modelgate.reports.index_views import IndexRow, ModelIndexView
from modelgate.reports.segment_views import SegmentRow, SegmentSection, WeakSliceRow
from modelgate.reports.views import (
    EvaluationReportView,
    FairnessSection,
    GapRow,
    GateCheckRow,
    GateView,
    GroupRow,
)

SCRIPT_FILE = Path(__file__).resolve().parents[2] / "reports" / "templates" / "sortable.js"
HOSTILE = '</script><script>alert(1)</script><img src=x onerror="alert(2)">'
SORTABLE = ("gate-checks", "gaps-0", "groups-0", "segments-0", "weakest-slices")


class Page(HTMLParser):
    """Every start tag with its attributes, the text of each script, and the CSP meta tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data

    def csp(self) -> dict[str, list[str]]:
        """The policy's directives: name -> sources."""
        [content] = [a["content"] for t, a in self.tags
                     if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
        assert content is not None
        return {name: sources for name, *sources in
                (part.split() for part in content.split(";") if part.strip())}


def parse(page: str) -> Page:
    parsed = Page()
    parsed.feed(page)
    parsed.close()
    return parsed


def evaluation_view() -> EvaluationReportView:
    rows = (SegmentRow(f"region={HOSTILE}", 300, 0.71, 0.66, 0.76, 0.84, -0.13, -0.19, -0.08,
                       1e-6, 3e-6, "breach"),
            SegmentRow("region=north", 700, 0.85, 0.82, 0.88, 0.80, 0.05, 0.01, 0.09, 0.99, 1.0,
                       "pass"),
            SegmentRow("region=__missing__", 20, 0.7, 0.5, 0.85, None, None, None, None, None,
                       None, note="20 rows, fewer than the minimum of 100"))
    groups = (GroupRow(HOSTILE, 800, 0.3, 0.28, 0.7, 0.1, 0.75, 0.3, small_group=False),
              GroupRow("b", 650, 0.25, 0.2, 0.6, 0.08, 0.7, 0.4, small_group=False))
    return EvaluationReportView(
        title="Evaluation", model_name="churn", model_version="7", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="d", run_id="run-1",
        created_at="2026-12-05T08:00:00Z", provider="CPUExecutionProvider", rows_scored=1000,
        metrics=(), calibration=(), shap_importance=(), waterfalls=(),
        fairness=(FairnessSection("sex", groups, (GapRow("tpr_difference", 0.1, 0.04, 0.16, 0.1,
                                                         "inconclusive"),)),),
        gate=GateView(False, "blocked", (
            GateCheckRow("segment", "accuracy", None, ">= 0.8", 0.71, 0.66, 0.76, 300, "breach",
                         "block", f"segment region={HOSTILE}"),)),
        segments=(SegmentSection("accuracy", True, rows, "3 tests, Benjamini-Hochberg at 0.05"),),
        weakest_slices=(WeakSliceRow("region=south & device=ios", "recall", 150, 0.5, 0.8, -0.3,
                                     -0.4, -0.2, 1e-4),),
        weakest_slices_note="120 candidate slices, 480 tests")


def test_the_policy_allows_exactly_the_one_script_the_page_carries() -> None:
    parsed = parse(render_evaluation_report(evaluation_view()))
    [script] = parsed.scripts
    assert [attrs for tag, attrs in parsed.tags if tag == "script"] == [{}]  # inline, no src
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    assert parsed.csp() == {"default-src": ["'none'"], "img-src": ["data:"],
                            "style-src": ["'unsafe-inline'"], "script-src": [f"'sha256-{digest}'"]}
    assert script == SCRIPT_FILE.read_text(encoding="utf-8")


def test_hostile_text_adds_no_script_handler_or_resource() -> None:
    page = render_evaluation_report(evaluation_view())
    parsed = parse(page)
    assert len(re.findall(r"<script", page, re.I)) == 1
    assert not [(tag, name) for tag, attrs in parsed.tags for name in attrs if name.startswith("on")]
    assert not [(tag, attrs) for tag, attrs in parsed.tags
                if {"src", "href", "action", "formaction"} & set(attrs)]  # nothing to fetch
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page


def test_the_tables_a_reader_sorts_are_marked_and_rendered_weakest_first() -> None:
    parsed = parse(render_evaluation_report(evaluation_view()))
    marked = [attrs["id"] for tag, attrs in parsed.tags if tag == "table" and "data-sortable" in attrs]
    assert sorted(marked) == sorted(SORTABLE)
    page = render_evaluation_report(evaluation_view())
    table = page[page.index('id="segments-0"'):page.index("</table>", page.index('id="segments-0"'))]
    order = [table.index(name) for name in ("region=&lt;/script&gt;", "region=north", "region=__missing__")]
    assert order == sorted(order)
    assert "by-name" not in page  # one table, sorted in the browser, not a second copy


def test_the_drift_reports_ranked_tables_are_sortable_by_the_same_one_script() -> None:
    view = DriftReportView(
        model_name="churn", model_version="7", interval_start="2026-11-28T00:00:00Z",
        interval_end="2026-11-29T00:00:00Z", run_id="drift-1", rows_sampled=5000,
        features=(FeatureDriftRow(HOSTILE, "numeric", 2.0, 0.15, 0.2, 0.1, "drift", 100, 0, ()),),
        histograms=(), error_rate=(), change_points=(), summary="drift", verdict="drift",
        segment_drift=(SegmentDriftRow("region=south", "age", "ks", 400, 380, 0.3, 1e-5, 4e-5,
                                       "drift"),),
        segment_estimates=(SegmentEstimateRow("region=south", "roc_auc", 380, 0.7, 0.65, 0.75, 0.9,
                                              0.05, 0.001, "breach", ""),),
        segment_family="One family of 2 tests.")
    page = render_drift_report(view)
    parsed = parse(page)
    marked = [attrs["id"] for tag, attrs in parsed.tags if tag == "table" and "data-sortable" in attrs]
    assert sorted(marked) == ["features", "segment-drift", "segment-estimates"]
    [script] = parsed.scripts
    assert script == SCRIPT_FILE.read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    assert parsed.csp()["script-src"] == [f"'sha256-{digest}'"]
    assert len(re.findall(r"<script", page, re.I)) == 1
    assert not [(tag, name) for tag, attrs in parsed.tags for name in attrs if name.startswith("on")]


@pytest.mark.parametrize("render", [
    lambda: render_drift_report(DriftReportView(
        model_name="churn", model_version="7", interval_start="2026-11-28T00:00:00Z",
        interval_end="2026-11-29T00:00:00Z", run_id="drift-1", rows_sampled=5000, features=(),
        histograms=(), error_rate=(), change_points=(), summary="no drift", verdict="ok")),
    lambda: render_model_index(ModelIndexView("churn", (
        IndexRow("drift", "drift-1", "7", "2026-11-29T00:00:00Z", "ok", "drift-1.html"),))),
], ids=["drift", "index"])
def test_pages_without_sortable_tables_allow_no_script(render: object) -> None:
    parsed = parse(render())  # type: ignore[operator]
    assert parsed.scripts == []
    assert parsed.csp() == {"default-src": ["'none'"], "img-src": ["data:"],
                            "style-src": ["'unsafe-inline'"]}
