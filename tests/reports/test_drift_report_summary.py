"""The drift report's first line, unseen categories and labelled performance, on hand-worked views."""

from __future__ import annotations

from modelgate.reports.drift_views import DriftReportView, FeatureDriftRow
from modelgate.reports.html import render_drift_report
from modelgate.reports.summary_views import LabelledPerformance


def _view(**changes: object) -> DriftReportView:
    features = (
        FeatureDriftRow("age", "numeric", 2.0, 0.15, 0.2, 0.1, "drift", 100, 0, (),
                        "wasserstein_normalised"),
        FeatureDriftRow("plan", "categorical", None, None, 0.31, 0.1, "drift", 100, 0, ("gold", "<vip>")),
        FeatureDriftRow("hours", "numeric", 0.1, 0.01, 0.02, 0.1, "ok", 100, 0, ()),
    )
    fields: dict[str, object] = dict(
        model_name="churn", model_version="7", interval_start="a", interval_end="b", run_id="1",
        rows_sampled=100, features=features, histograms=(), error_rate=(), change_points=(),
        summary="2 of 3 feature(s) breached", verdict="drift")
    return DriftReportView(**{**fields, **changes})  # type: ignore[arg-type]


def test_first_line_counts_drifted_features_and_names_the_worst() -> None:
    page = render_drift_report(_view())
    # hand-worked: 2 of 3 drifted; age 0.15 / 0.1 (W norm), plan 0.31 / 0.1 (JS), hours 0.02 / 0.1
    line = ('<p class="lead" id="drift-summary">2 of 3 features drifted (67%); worst: plan, JS 0.31 '
            '(threshold 0.1, 3.1x)</p>')
    assert line in page
    assert page.index('id="drift-summary"') < page.index('id="features"')


def test_unseen_categories_are_listed_per_feature_escaped() -> None:
    page = render_drift_report(_view())
    table = page.split('<table id="unseen-categories">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 2  # header + the one feature with unseen categories
    assert '<td>plan</td><td class="num">2</td><td class="reason">gold, &lt;vip&gt;</td>' in table


def test_labelled_performance_and_its_absence() -> None:
    page = render_drift_report(_view(labelled=LabelledPerformance(400, 0.125, "error rate")))
    table = page.split('<table id="labelled-performance">', 1)[1].split("</table>", 1)[0]
    assert '<td class="num">400</td><td class="num">0.125</td><td class="num">0.875</td>' in table
    assert "performance unknown" in render_drift_report(_view())
