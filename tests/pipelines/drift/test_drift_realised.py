"""The drift report shows the realised value beside each estimate once the interval's labels
have landed in the same run (issue #39), and nothing in that column before."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

import numpy as np
import pandas as pd
from modelgate.reports.drift_views import DriftReportView, FeatureDriftRow
from modelgate.reports.html import render_drift_report
from modelgate.reports.summary_views import EstimateRow
from modelgate.reports.svg import format_number
from sklearn.metrics import accuracy_score, roc_auc_score

from modelgate.pipelines.drift.estimation import realised_metrics
from modelgate.pipelines.drift.realised import with_realised

START = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)
ESTIMATES = (EstimateRow("roc_auc", 0.84, 0.81, 0.87, 0.85, None, "ok"),
             EstimateRow("accuracy", 0.76, 0.72, 0.80, 0.77, 0.05, "ok"))


def _view(estimates: tuple[EstimateRow, ...]) -> DriftReportView:
    return DriftReportView(
        model_name="m", model_version="1", interval_start=START.isoformat(),
        interval_end=(START + DAY).isoformat(), run_id="1", rows_sampled=10,
        features=(FeatureDriftRow("x", "numeric", 0.1, 0.1, 0.01, 0.1, "ok", 10, 0, ()),),
        histograms=(), error_rate=(), change_points=(), estimates=estimates, summary="s",
        verdict="ok")


def _estimate_table(page: str) -> list[list[str]]:
    table = page[page.index('id="estimated-performance"'):].split("</table>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in table.split("<tr>")[2:]]


def test_the_realised_value_of_this_interval_stands_beside_its_estimate() -> None:
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 200)
    score = np.clip(y * 0.3 + rng.random(200) * 0.7, 0, 1)
    frame = pd.DataFrame({"__score__": score, "__prediction__": (score > 0.5).astype(int)})
    metrics = realised_metrics("binary_classification", y, frame)
    earlier = {"roc_auc": 0.5, "accuracy": 0.5}  # another interval's labels: not this report's
    rows = with_realised(ESTIMATES, [(START - DAY, START, 200, earlier), (START, START + DAY, 200, metrics)],
                         START)
    assert [r.realised for r in rows] == [roc_auc_score(y, score),
                                          accuracy_score(y, frame["__prediction__"])]
    assert [dataclasses.replace(r, realised=None) for r in rows] == list(ESTIMATES)
    cells = _estimate_table(render_drift_report(_view(rows)))
    assert [c[0] for c in cells] == ["roc_auc", "accuracy"]
    # the table's own number format (not under test here) of the sklearn value
    assert cells[1][3] == format_number(accuracy_score(y, frame["__prediction__"]))
    assert cells[0][3] == format_number(roc_auc_score(y, score))


def test_before_the_labels_land_the_realised_column_is_empty() -> None:
    rows = with_realised(ESTIMATES, [(START - DAY, START, 200, {"accuracy": 0.5})], START)
    assert [r.realised for r in rows] == [None, None]
    cells = _estimate_table(render_drift_report(_view(rows)))
    assert cells[0][3] == cells[1][3] != "0.5"
