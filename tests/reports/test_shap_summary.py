"""The evaluation report's SHAP summary (beeswarm) and SHAP by sensitive group.

Expected numbers come from numpy and scipy run here on the Explanation's own values (means per
group by boolean masks, scipy's Spearman correlation and ranks), never from the summary code.
"""

from __future__ import annotations

import math
import re
from html import unescape

import numpy as np
import pandas as pd
import pytest
from modelgate.reports.explanation import explain
from modelgate.reports.html import render_evaluation_report
from modelgate.reports.shap_summaries import shap_by_group, shap_summary
from modelgate.reports.views import EvaluationReportView, GateView
from scipy import stats

from modelgate.pipelines.evaluation import shap_report


def _explained() -> tuple[object, pd.DataFrame]:
    """A logistic model on two numeric features and one categorical, 24 rows explained."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"age": rng.normal(40, 10, 24).round(1), "hours": rng.normal(35, 5, 24),
                          "job": rng.choice(["a", "b", "c"], 24),
                          "sex": rng.choice(["F", "M", "X"], 24, p=[0.45, 0.45, 0.1])})

    def predict(f: pd.DataFrame) -> np.ndarray:
        z = 0.05 * (f["age"].to_numpy(float) - 40) - 0.1 * (f["hours"].to_numpy(float) - 35)
        z = z + np.where(f["job"].astype(str).to_numpy() == "b", 0.8, 0.0)
        return np.asarray(1 / (1 + np.exp(-z)))

    return explain(predict, frame, frame, features=["age", "hours", "job"]), frame


def test_summary_matches_numpy_and_scipy() -> None:
    ex, frame = _explained()
    s = shap_summary(ex.values, ex.feature_values, ex.features)
    mean_abs = np.abs(ex.values).mean(axis=0)
    expected_order = [ex.features[j] for j in np.argsort(-mean_abs, kind="stable")]
    assert list(s.features) == expected_order
    for k, feature in enumerate(s.features):
        j = ex.features.index(feature)
        np.testing.assert_array_equal(s.values[:, k], ex.values[:, j])
        assert s.mean_abs[k] == pytest.approx(mean_abs[j], abs=1e-15)
        if feature == "job":  # categorical: no colour, no correlation
            assert np.isnan(s.colours[:, k]).all() and math.isnan(s.value_correlation[k])
            continue
        ranks = stats.rankdata(frame[feature].to_numpy())
        np.testing.assert_allclose(s.colours[:, k], (ranks - 1) / (len(ranks) - 1))
        # Spearman by its definition: Pearson's r of the ranks (no ties in these values)
        rho = np.corrcoef(np.argsort(np.argsort(frame[feature].to_numpy())),
                          np.argsort(np.argsort(ex.values[:, j])))[0, 1]
        assert s.value_correlation[k] == pytest.approx(rho, abs=1e-12)
    # a logistic model in probability space: SHAP rises with age, falls with hours
    by_name = dict(zip(s.features, s.value_correlation, strict=True))
    assert by_name["age"] > 0.9 and by_name["hours"] < -0.9


def test_group_means_match_numpy_and_decompose_the_gap() -> None:
    ex, frame = _explained()
    sex = frame["sex"].to_numpy()
    g = shap_by_group(ex.values, ex.features, sex, sensitive_feature="sex")
    assert g.groups == ("F", "M", "X")
    for i, group in enumerate(g.groups):
        mask = sex == group
        assert g.counts[i] == mask.sum()
        for k, feature in enumerate(g.features):
            j = ex.features.index(feature)
            assert g.mean[i, k] == pytest.approx(ex.values[mask, j].mean(), abs=1e-15)
            assert g.mean_abs[i, k] == pytest.approx(np.abs(ex.values[mask, j]).mean(), abs=1e-15)
    expected_spread = {f: np.ptp([ex.values[sex == grp, ex.features.index(f)].mean()
                                  for grp in g.groups]) for f in ex.features}
    assert list(g.spread) == sorted(g.spread, reverse=True)
    for feature, spread in zip(g.features, g.spread, strict=True):
        assert spread == pytest.approx(expected_spread[feature], abs=1e-15)
    # the gap in mean output between two groups is the sum of their mean SHAP differences
    out_gap = ex.model_output[sex == "F"].mean() - ex.model_output[sex == "M"].mean()
    assert (g.mean[0] - g.mean[1]).sum() == pytest.approx(out_gap, abs=1e-12)


def test_group_of_missing_values_is_labelled_as_in_fairness_tables() -> None:
    g = shap_by_group([[1.0], [3.0], [5.0]], ["a"], ["F", None, "F"], sensitive_feature="sex")
    assert g.groups == ("F", "__missing__") and g.counts.tolist() == [2, 1]
    assert g.mean[:, 0].tolist() == [3.0, 3.0]


@pytest.mark.parametrize(("values", "raw", "message"), [
    ([[1.0, 2.0]], [[1.0]], "feature_values must have the shape"),
    ([[float("nan"), 1.0]], [[1.0, 2.0]], "values must be finite"),
    ([[1.0]], [[1.0]], r"values must have shape \(n_rows >= 1, 2\)"),
], ids=["shape", "nan", "features"])
def test_summary_refuses_bad_input(values: list[list[float]], raw: list[list[float]],
                                   message: str) -> None:
    with pytest.raises(ValueError, match=message):
        shap_summary(values, raw, ["a", "b"])


def _cells(page: str, table_id: str) -> list[list[str]]:
    body = page.split(f'<table id="{table_id}">', 1)[1].split("</table>", 1)[0]
    return [[unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", body)[1:]]


def test_report_shows_group_means_and_summary_from_the_explanation() -> None:
    ex, frame = _explained()
    summaries = shap_report.summarise(ex, {"sex": list(frame["sex"])})
    view = EvaluationReportView(
        title="Evaluation", model_name="m", model_version="2", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="d", run_id="r", created_at="t", provider="CPU",
        rows_scored=24, metrics=(), calibration=(), fairness=(), shap_importance=(),
        waterfalls=(), gate=GateView(True, "ok", ()), champion_version="1",
        **shap_report.report_views(summaries))
    page = render_evaluation_report(view)
    assert "champion v1 (production)" in page
    assert page.count('class="dot"') == 24 * 3
    assert 'aria-label="SHAP summary: one dot per explained row (24)' in page
    assert 'aria-label="Mean SHAP per feature by sex group"' in page
    sex = frame["sex"].to_numpy()
    for feature, *cells in _cells(page, "shap-groups-0"):
        means = [ex.values[sex == g, ex.features.index(feature)].mean() for g in ("F", "M", "X")]
        expected = [*means, max(means) - min(means)]
        assert [float(c) for c in cells] == pytest.approx(expected, rel=1e-3, abs=1e-12)
    for feature, *cells in _cells(page, "shap-groups-abs-0"):
        j = ex.features.index(feature)
        expected = [np.abs(ex.values[sex == g, j]).mean() for g in ("F", "M", "X")]
        assert [float(c) for c in cells] == pytest.approx(expected, rel=1e-3, abs=1e-12)
    for feature, rows, mean_abs, low, high, _ in _cells(page, "shap-summary"):
        j = ex.features.index(feature)
        assert int(rows) == 24
        assert [float(mean_abs), float(low), float(high)] == pytest.approx(
            [np.abs(ex.values[:, j]).mean(), ex.values[:, j].min(), ex.values[:, j].max()], rel=1e-3)


def test_report_without_summaries_has_no_summary_sections() -> None:
    assert shap_report.report_views(None) == {"shap_summary": (), "shap_groups": (), "shap_classes": ()}


def test_a_multiclass_report_has_one_summary_per_class_not_one_pooled_swarm() -> None:
    """Rows explaining different classes' probabilities are summarised apart: the 3 classes
    with the most rows (of 4), each over its own rows only (numpy on the Explanation's values)."""
    ex, frame = _explained()
    explained = ["c1"] * 9 + ["c2"] * 7 + ["c3"] * 5 + ["c0"] * 3  # the class each row explains
    summaries = shap_report.summarise(ex, {}, explained_class=explained)
    assert [(c, n) for c, n, _ in summaries.by_class] == [("c1", 9), ("c2", 7), ("c3", 5)]
    for name, _, summary in summaries.by_class:
        rows = np.array(explained) == name
        for j, feature in enumerate(summary.features):
            assert summary.mean_abs[j] == pytest.approx(
                np.abs(ex.values[rows, ex.features.index(feature)]).mean())
    view = EvaluationReportView(
        title="Evaluation", model_name="m", model_version="2", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="d", run_id="r", created_at="t", provider="CPU",
        rows_scored=24, metrics=(), calibration=(), fairness=(), shap_importance=(),
        waterfalls=(), gate=GateView(True, "ok", ()), **shap_report.report_views(summaries))
    page = render_evaluation_report(view)
    assert page.count('class="dot"') == (9 + 7 + 5) * 3  # no pooled swarm of all 24 rows
    for name, n in (("c1", 9), ("c2", 7), ("c3", 5)):
        assert f'aria-label="SHAP summary of P(class {name}): one dot per explained row ({n})' in page
    assert "P(class c0)" not in page
