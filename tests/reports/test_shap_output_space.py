"""Every SHAP chart names the space its values explain (issue #40 point 2): the waterfall's
x axis, and the report's importance bars, beeswarm and per-group charts. The axis texts are
read back from the drawn matplotlib figure and from the page's SVG."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
import pytest
from modelgate.reports import waterfall
from modelgate.reports.explanation import explain
from modelgate.reports.html import render_evaluation_report
from modelgate.reports.shap_charts import space_axis_label
from modelgate.reports.views import EvaluationReportView, GateView

from modelgate.pipelines.evaluation import shap_report


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"a": rng.normal(size=12), "b": rng.normal(size=12),
                         "sex": rng.choice(["F", "M"], 12)})


def _predict(f: pd.DataFrame) -> np.ndarray:
    return np.asarray(1 / (1 + np.exp(-(f["a"].to_numpy() - 0.5 * f["b"].to_numpy()))))


def _drawn_xlabel(explanation: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    labels: list[str] = []
    real = waterfall._draw

    def spy(*args: Any, **kwargs: Any) -> Any:
        fig = real(*args, **kwargs)
        labels.append(fig.axes[0].get_xlabel())
        return fig

    monkeypatch.setattr(waterfall, "_draw", spy)
    waterfall.waterfall_png(explanation, 0)
    return labels[0]


@pytest.mark.parametrize(("algorithm", "output", "words"), [
    ("exact", "probability", "(probability; exact SHAP)"),
    ("exact", "value", "(value; exact SHAP)"),
    ("tree_interventional", "logit", "(log-odds (margin, before the sigmoid); exact interventional Tree"),
    ("tree_interventional", "margin", "(class score (margin, before the softmax); exact interventional"),
    ("linear_interventional", "logit", "(log-odds (margin, before the sigmoid); exact interventional linear"),
], ids=lambda v: str(v)[:24])
def test_the_waterfall_axis_names_the_space(algorithm: str, output: str, words: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame()[["a", "b"]]
    exact = explain(_predict, frame.iloc[:2], frame, features=["a", "b"])
    assert (exact.algorithm, exact.output) == ("exact", "probability")
    shown = dataclasses.replace(exact, algorithm=algorithm, output=output)
    assert words in _drawn_xlabel(shown, monkeypatch)


def test_a_permutation_waterfall_names_the_space(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = _frame()[["a", "b"]]
    estimate = explain(_predict, frame.iloc[:2], frame, features=["a", "b"], algorithm="permutation")
    assert estimate.algorithm == "permutation"
    assert "   (probability; permutation estimate ± 1 standard error;" in _drawn_xlabel(estimate, monkeypatch)


@pytest.mark.parametrize(("space", "words"), [
    ("logit", " (log-odds, before the sigmoid)"),
    ("margin", " (class score (margin), before the softmax)"),
    ("probability", " (probability)"), ("value", " (predicted value)"), ("", "")])
def test_every_report_chart_names_the_space(space: str, words: str) -> None:
    frame = _frame()
    ex = explain(_predict, frame[["a", "b"]], frame[["a", "b"]], features=["a", "b"])
    view = EvaluationReportView(
        title="Evaluation", model_name="m", model_version="2", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="d", run_id="r", created_at="t", provider="CPU",
        rows_scored=12, metrics=(), calibration=(), fairness=(),
        shap_importance=(("a", 0.2), ("b", 0.1)), waterfalls=(), gate=GateView(True, "ok", ()),
        shap_output_space=space,
        **shap_report.report_views(shap_report.summarise(ex, {"sex": list(frame["sex"])})))
    page = render_evaluation_report(view)
    for label in ("mean |SHAP value|", "SHAP value (impact on the output)", "mean SHAP value"):
        assert f">{label}{words}<" in page, label


def test_an_unknown_space_is_refused() -> None:
    with pytest.raises(ValueError, match="output_space must be one of .* got 'odds'"):
        space_axis_label("x", "odds")
    with pytest.raises(ValueError, match="shap_output_space must be .* got 'odds'"):
        EvaluationReportView(
            title="t", model_name="m", model_version="2", model_sha256="ab" * 32,
            data_fingerprint="cd" * 32, dataset_name="d", run_id="r", created_at="t", provider="CPU",
            rows_scored=1, metrics=(), calibration=(), fairness=(), shap_importance=(),
            waterfalls=(), gate=GateView(True, "ok", ()), shap_output_space="odds")


def test_the_per_class_summaries_name_the_space() -> None:
    from modelgate.reports.summary_views import ShapClassSection, ShapSwarmRow

    rows = (ShapSwarmRow("a", (0.1, -0.2), (1.0, 0.0), 0.15, -1.0),)
    view = EvaluationReportView(
        title="Evaluation", model_name="m", model_version="2", model_sha256="ab" * 32,
        data_fingerprint="cd" * 32, dataset_name="d", run_id="r", created_at="t", provider="CPU",
        rows_scored=2, metrics=(), calibration=(), fairness=(), shap_importance=(("a", 0.15),),
        waterfalls=(), gate=GateView(True, "ok", ()), shap_output_space="margin",
        shap_classes=(ShapClassSection("0", 2, rows), ShapClassSection("1", 2, rows)))
    page = render_evaluation_report(view)
    assert page.count(">SHAP value (impact on the output) (class score (margin), before the softmax)<") == 2
    # the titles say the same: a class's margin score, not its probability
    assert "SHAP summary of the score (margin) of class 0" in page and "P(class" not in page
    probability = render_evaluation_report(dataclasses.replace(view, shap_output_space="probability"))
    assert "SHAP summary of P(class 1)" in probability
