"""The evaluation report's segment section: the forest plot, the table (weakest first; the
browser sorts it, see test_sortable_tables.py), the weakest slices, every string escaped."""

from __future__ import annotations

from modelgate.reports.html import render_evaluation_report
from modelgate.reports.segment_views import SegmentRow, SegmentSection, WeakSliceRow
from modelgate.reports.views import EvaluationReportView, GateView


def _view(**extra: object) -> EvaluationReportView:
    return EvaluationReportView(
        title="Evaluation", model_name="churn", model_version="7", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="d", run_id="run-1",
        created_at="2026-12-05T08:00:00Z", provider="CPUExecutionProvider", rows_scored=1000,
        metrics=(), calibration=(), fairness=(), shap_importance=(), waterfalls=(),
        gate=GateView(True, "passed", ()), **extra)  # type: ignore[arg-type]


def test_segment_section_has_forest_plot_tables_and_weakest_slices() -> None:
    rows = (SegmentRow("region=<south>", 300, 0.71, 0.66, 0.76, 0.84, -0.13, -0.19, -0.08, 1e-6,
                       3e-6, "breach"),
            SegmentRow("region=north", 700, 0.85, 0.82, 0.88, 0.80, 0.05, 0.01, 0.09, 0.99, 1.0,
                       "pass"),
            SegmentRow("region=__missing__", 20, 0.7, 0.5, 0.85, None, None, None, None, None, None,
                       note="20 rows, fewer than the minimum of 100"))
    section = SegmentSection("accuracy", True, rows, "4 tests, Benjamini-Hochberg at 0.05")
    weak = (WeakSliceRow("region=<south> & device=ios", "recall", 150, 0.5, 0.8, -0.3, -0.4, -0.2,
                         1e-4),)
    page = render_evaluation_report(_view(segments=(section,), weakest_slices=weak,
                                          weakest_slices_note="120 candidate slices, 480 tests"))
    assert '<h2 id="segments">Segments</h2>' in page
    assert "accuracy: segment minus the rest" in page
    assert page.count("<circle") == 2  # the two judged segments; the small one is not drawn
    assert '<table id="segments-0" data-sortable>' in page
    assert "region=&lt;south&gt;" in page and "<south>" not in page
    assert 'id="weakest-slices"' in page and "120 candidate slices, 480 tests" in page
    assert "20 rows, fewer than the minimum of 100" in page
    table = page[page.index('id="segments-0"'):]
    order = [table.index(f"region={name}") for name in ("&lt;south&gt;", "north", "__missing__")]
    assert order == sorted(order)


def test_no_segment_section_without_segments() -> None:
    page = render_evaluation_report(_view())
    assert 'id="segments"' not in page
