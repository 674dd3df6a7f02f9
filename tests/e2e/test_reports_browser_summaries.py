"""The reports' summary sections in headless Chromium, on views built here (no demo run).

Stress cases the demo does not reach: 15 features with long names, a sensitive feature with
six groups, a categorical feature (grey dots), a drift report with many unseen categories
(and statistics of two scales drawn as multiples of their thresholds, estimates beside their
realised values, a change point before the first plotted error rate), an
index page with failed, abandoned and blocked runs. At 1400 px nothing may be cut off and every
chart must have its accessible name (the same probe as ``tests/e2e/test_reports_browser.py``);
screenshots of the new sections go to ``tests/out/browser/summaries/``.
"""

from __future__ import annotations

import datetime as dt
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from modelgate.reports.drift_views import ChangePointRow, DriftReportView, FeatureDriftRow
from modelgate.reports.html import render_drift_report, render_evaluation_report, render_model_index
from modelgate.reports.summary_views import (
    EstimateRow,
    GroupShapSection,
    LabelledPerformance,
    ShapSwarmRow,
)
from modelgate.reports.views import EvaluationReportView, GateView
from test_reports_browser import OUT, DevTools, browser, layout_problems  # noqa: F401 (fixture)

from modelgate.pipelines.index_page import RunRecord, build_index_view

SHOTS = OUT / "summaries"
SECTIONS = {
    "evaluation": [("shap-summary", "svg[aria-label^='SHAP summary']"),
                   ("shap-summary-table", "#shap-summary"),
                   ("shap-groups", "svg[aria-label^='Mean SHAP per feature by']"),
                   ("shap-groups-table", "#shap-groups-0")],
    "drift": [("drift-summary", "#drift-summary"), ("unseen", "#unseen-categories"),
              ("labelled-performance", "#labelled-performance"),
              ("threshold-multiples", "svg[aria-label^='Drift by feature as a multiple']"),
              ("features-table", "#features"),
              ("estimated-and-realised", "#estimated-performance"),
              ("change-points", "svg[aria-label^='Error rate over the interval']")],
    "index": [("runs", "#runs")],
}


def _evaluation_page() -> str:
    rng = np.random.default_rng(1)
    names = [f"feature_{i}_{'with_a_rather_long_name' if i % 3 == 0 else 'x'}" for i in range(15)]
    swarm = []
    for i, name in enumerate(names):
        values = rng.normal(scale=1.0 / (i + 1), size=50)
        colours = (tuple([math.nan] * 50) if i == 2
                   else tuple(float(c) for c in rng.permutation(np.linspace(0, 1, 50))))
        swarm.append(ShapSwarmRow(name, tuple(float(v) for v in values), colours,
                                  float(np.abs(values).mean()), 0.3))
    groups = ("18-29", "30-44", "45-59", "60-74", "75 and over", "__missing__")
    means = tuple(tuple(float(v) for v in rng.normal(scale=0.05, size=len(groups))) for _ in names)
    section = GroupShapSection("age_group", groups, (12, 10, 9, 8, 7, 4), tuple(names), means,
                               tuple(tuple(abs(v) * 2 for v in row) for row in means),
                               tuple(max(r) - min(r) for r in means))
    view = EvaluationReportView(
        title="Evaluation of churn v7", model_name="churn", model_version="7", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="s3://bucket/heldout/2026-11/", run_id="12 (k)",
        created_at="2026-11-29T21:00:00Z", provider="CPUExecutionProvider", rows_scored=50_000,
        metrics=(), calibration=(), fairness=(),
        shap_importance=tuple((r.feature, r.mean_abs) for r in swarm),
        waterfalls=(), gate=GateView(True, "PASSED", ()), champion_version="6",
        policy="model_file (/srv/policies/churn.yaml)", shap_summary=tuple(swarm), shap_groups=(section,))
    return render_evaluation_report(view)


def _drift_page() -> str:
    unseen = tuple(f"new-category-{i:03d}" for i in range(140))
    view = DriftReportView(
        model_name="churn", model_version="7", interval_start="2026-11-28T00:00:00Z",
        interval_end="2026-11-29T00:00:00Z", run_id="31", rows_sampled=5000,
        features=(FeatureDriftRow("plan", "categorical", None, None, 0.41, 0.1, "drift", 5000, 0, unseen),
                  FeatureDriftRow("age", "numeric", 1.3, 0.08, 0.05, 0.1, "ok", 5000, 3, (),
                                  "wasserstein_normalised"),
                  # the tester's case: a large Wasserstein barely over, a small JS far over
                  FeatureDriftRow("childs", "numeric", 2.1, 1.45, 0.06, 1.2, "drift", 5000, 0, (),
                                  "wasserstein_normalised"),
                  FeatureDriftRow("educcat", "categorical", None, None, 0.089, 0.01, "drift", 5000, 0, ())),
        histograms=(),
        # a rolling error rate first plotted at position 99; ADWIN's first change point at 40
        error_rate=tuple((99 + 10 * i, 0.18 + 0.1 * (i >= 30)) for i in range(60)),
        change_points=(ChangePointRow(40, "2026-11-28T01:00:00Z", 0.18, 0.28),
                       ChangePointRow(400, "2026-11-28T09:00:00Z", 0.18, 0.28)),
        summary="3 of 4 feature(s) breached: educcat, plan, childs", verdict="drift",
        estimates=(EstimateRow("roc_auc", 0.84, 0.82, 0.87, 0.85, None, "ok", 0.836),
                   EstimateRow("accuracy", 0.76, 0.72, 0.80, 0.77, 0.05, "ok", 0.749)),
        labelled=LabelledPerformance(4210, 0.183, "error rate (prediction differs from label)"))
    return render_drift_report(view)


def _index_page() -> str:
    utc = dt.UTC
    reason = "ScoringError: column 'age' has 3 values outside FLOAT's range; first row_id 88123 " * 3
    records = [
        RunRecord("evaluation", 3, "7", dt.datetime(2026, 11, 29, tzinfo=utc), "failed", False, None,
                  "candidate", reason),
        RunRecord("evaluation", 2, "6", dt.datetime(2026, 11, 28, tzinfo=utc), "blocked", False,
                  "reports/churn/6/evaluation-k.html", "rejected", "BLOCKED by 2 checks\nroc_auc"),
        RunRecord("drift", 5, "5", dt.datetime(2026, 11, 27, tzinfo=utc), "abandoned", False, None,
                  "production", "abandoned: no heartbeat for 30 minutes"),
    ]
    return render_model_index(build_index_view("churn", records))


@pytest.mark.e2e
def test_summary_sections_fit_at_1400px_with_accessible_names(
        browser: tuple[DevTools, str], tmp_path: Path) -> None:  # noqa: F811 (fixture)
    tools, session = browser
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    pages = {"evaluation": _evaluation_page(), "drift": _drift_page(), "index": _index_page()}
    tools.call("Emulation.setDeviceMetricsOverride", session, width=1400, height=1000,
               deviceScaleFactor=1, mobile=False)
    problems = []
    try:
        for kind, page in pages.items():
            path = tmp_path / f"{kind}.html"
            path.write_text(page, encoding="utf-8")
            problems += [f"{kind}: {p}" for p in layout_problems(tools, session, path, kind, SHOTS,
                                                                 sections=SECTIONS[kind])]
    finally:
        tools.call("Emulation.setDeviceMetricsOverride", session, width=1280, height=2000,
                   deviceScaleFactor=1, mobile=False)
    assert not problems, "\n".join(problems)
    shots = {p.name.split("--")[1].removesuffix(".png") for p in SHOTS.glob("*.png")}
    assert shots == {name for sections in SECTIONS.values() for name, _ in sections}
    assert "new-category-099" in pages["drift"] and "(+40 more)" in pages["drift"]
