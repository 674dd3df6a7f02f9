"""Self-contained HTML reports: evaluation, drift, and a per-model index.

Each renderer takes a view from :mod:`modelgate.reports.views` and returns one HTML5
document as a string, rendered from the Jinja2 templates in ``reports/templates`` (shipped
in the package) with autoescaping on: CSS inlined, charts as inline SVG, SHAP waterfalls as
base64 ``data:`` URIs, no fonts or external resources, and no JavaScript but one fixed script
on the evaluation report and on the drift report's ranked tables that makes them sortable
(``templates/sortable.js``). A Content-Security-Policy meta tag forbids everything else, as a
second line of defence behind escaping: it allows that script by the sha256 of its text,
computed as the page is rendered, so no other script, inline handler or ``javascript:`` link
can run. Every value a template
prints is escaped the way :func:`~modelgate.reports.svg.esc` escapes chart labels
(``html.escape(quote=True)``); the only markup passed in is the SVG the chart functions
build, already escaped. Output is deterministic: the same view gives the same bytes (no
clock, no random ids; ties in sort orders broken by name).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Sequence

import jinja2
from markupsafe import Markup
from modelgate.drift import threshold_multiple, worst_first
from modelgate.reports.charts import (
    Bar,
    Interval,
    bar_chart,
    histogram_chart,
    interval_chart,
    line_chart,
    reliability_chart,
)
from modelgate.reports.drift_views import AttributionShareRow, DriftReportView, FeatureDriftRow
from modelgate.reports.index_views import ModelIndexView
from modelgate.reports.segment_views import SegmentSection
from modelgate.reports.shap_charts import (
    MAX_GROUPS_DRAWN,
    MAX_SWARM_FEATURES,
    beeswarm_chart,
    group_shap_chart,
    space_axis_label,
)
from modelgate.reports.summary_views import GroupShapSection, ShapSwarmRow
from modelgate.reports.svg import Tone, esc, format_number
from modelgate.reports.views import EvaluationReportView, FairnessSection, GateView

MAX_BARS = 30
"""Most bars drawn in one bar chart; the tables list every row."""
MAX_UNSEEN_SHOWN = 10
MAX_GROUP_FEATURES = 10
"""Features drawn in a SHAP-by-group chart (largest spread first)."""
"""Unseen categories shown per feature in the drift table (the unseen-categories list shows
up to ``MAX_UNSEEN_LISTED``)."""
MAX_UNSEEN_LISTED = 100

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_VERDICT_TONES: dict[str, Tone] = {
    "pass": "good", "ok": "good", "passed": "good",
    "warn": "warn", "inconclusive": "warn",
    "fail": "bad", "breach": "bad", "drift": "bad", "blocked": "bad", "failed": "bad",
    "abandoned": "warn",
    "skipped": "neutral",
}


def _escaped(value: object) -> object:
    """Jinja2 ``finalize``: escape like the charts do (``&#x27;``, ``&quot;``), so one page
    uses one escaping; markup the caller built (the SVG charts) passes as it is."""
    return value if hasattr(value, "__html__") else Markup(esc(value))


def _statistic_label(row: FeatureDriftRow) -> str:
    return "JS" if row.statistic == "js" else "W norm"


def _unseen(row: FeatureDriftRow, limit: int = MAX_UNSEEN_SHOWN) -> str:
    shown = ", ".join(row.unseen_categories[:limit])
    extra = len(row.unseen_categories) - limit
    return shown + (f" (+{extra} more)" if extra > 0 else "")


@functools.cache
def _environment() -> jinja2.Environment:
    # PackageLoader finds the templates beside this module both in a checkout and in an
    # installed wheel (they are package data).
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("modelgate.reports", "templates"),
        autoescape=True, finalize=_escaped, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    )
    env.filters.update(
        number=format_number, tone=lambda verdict: _VERDICT_TONES.get(verdict, "neutral"),
        b64=lambda data: base64.b64encode(data).decode("ascii"),
        statistic_label=_statistic_label, unseen=_unseen, times=lambda f: _times(_multiple(f)),
    )
    return env


@functools.cache
def _sortable_script() -> str:
    """The script that makes ``data-sortable`` tables sortable, exactly as the page carries it."""
    env = _environment()
    assert env.loader is not None
    return env.loader.get_source(env, "sortable.js")[0]


def script_source(script: str) -> str:
    """The Content-Security-Policy source that allows one inline script: its text's sha256.

    Examples
    --------
    >>> script_source("")  # sha256 of nothing, base64
    "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    """
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def _render(template: str, page_title: str, *, script: str = "", **context: object) -> str:
    csp = f"{_CSP}; script-src {script_source(script)}" if script else _CSP
    return _environment().get_template(template).render(
        csp=csp, page_title=page_title, script=Markup(script), **context)


def _gate_banner(gate: GateView) -> tuple[str, Tone]:
    """BLOCKED if the gate failed, WARN if it passed with any check not passing, else PASSED."""
    if not gate.passed:
        return "BLOCKED", "bad"
    if any(c.verdict in ("warn", "breach", "fail", "inconclusive") for c in gate.checks):
        return "WARN", "warn"
    return "PASSED", "good"


def _gap_chart(section: FairnessSection) -> Markup | None:
    gaps = section.gaps
    if not gaps:
        return None
    intervals = [Interval(g.metric, g.value, g.ci_lower, g.ci_upper, g.threshold,
                          _VERDICT_TONES[g.verdict]) for g in gaps]
    feature = section.sensitive_feature
    return Markup(interval_chart(intervals, title=f"Fairness gaps by {feature} (dashed: threshold)",
                                 x_label="gap between groups"))


def _segment_chart(section: SegmentSection) -> Markup | None:
    """Forest plot: each judged segment's difference from the rest, with its interval."""
    rows = [r for r in section.rows if r.difference is not None]
    if not rows:
        return None
    intervals = [Interval(r.segment, r.difference, r.difference_ci_lower, r.difference_ci_upper,
                          0.0, _VERDICT_TONES.get(r.verdict, "neutral"))
                 for r in rows if r.difference_ci_lower is not None
                 and r.difference_ci_upper is not None]
    better = "higher" if section.higher_is_better else "lower"
    return Markup(interval_chart(intervals, title=f"{section.metric}: segment minus the rest "
                                                  f"({better} is better; dashed: no difference)",
                                 x_label=f"difference in {section.metric}"))


def _importance_chart(importance: Sequence[tuple[str, float]], space: str = "") -> Markup | None:
    ranked = sorted(importance, key=lambda item: (-item[1], item[0]))
    if not ranked:
        return None
    shown = ranked[:MAX_BARS]
    title = ("Global importance" if len(shown) == len(ranked)
             else f"Global importance (top {len(shown)} of {len(ranked)} features)")
    return Markup(bar_chart([Bar(name, value) for name, value in shown], title=title,
                            x_label=space_axis_label("mean |SHAP value|", space)))


def _swarm_chart(rows: Sequence[ShapSwarmRow], of: str = "", space: str = "") -> Markup | None:
    if not rows:
        return None
    n_rows = len(rows[0].values)
    title = f"SHAP summary{of}: one dot per explained row ({n_rows}), coloured by the feature's value"
    if len(rows) > MAX_SWARM_FEATURES:
        title += f"; top {MAX_SWARM_FEATURES} of {len(rows)} features"
    label = space_axis_label("SHAP value (impact on the output)", space)
    return Markup(beeswarm_chart(rows, title=title, x_label=label))


def _class_output(class_name: str, space: str) -> str:
    """What a per-class summary explains: the class's probability, or its score before the
    softmax when the values are in the margin (tree and linear graphs explained exactly)."""
    if space in ("margin", "logit"):
        return f" of the score (margin) of class {class_name}"
    return f" of P(class {class_name})"


def _group_charts(sections: Sequence[GroupShapSection], space: str = "") -> list[Markup]:
    charts = []
    for s in sections:
        title = f"Mean SHAP per feature by {s.sensitive_feature} group"
        if len(s.features) > MAX_GROUP_FEATURES:
            title += f", top {MAX_GROUP_FEATURES} by spread"
        if len(s.groups) > MAX_GROUPS_DRAWN:
            title += f", first {MAX_GROUPS_DRAWN} groups"
        label = space_axis_label("mean SHAP value", space)
        charts.append(Markup(group_shap_chart(s, title=title, x_label=label,
                                              max_features=MAX_GROUP_FEATURES)))
    return charts


def render_evaluation_report(view: EvaluationReportView) -> str:
    """Render the evaluation report of one candidate model as a self-contained HTML page.

    Parameters
    ----------
    view : EvaluationReportView
        What to show; every string in it is escaped.

    Returns
    -------
    str
        An HTML5 document. The banner reads BLOCKED when ``view.gate.passed`` is false,
        WARN when it passed with a check that warned, failed without blocking or was
        inconclusive, and PASSED otherwise; below the word, the summary's headline and one
        line per check it lists.

    Examples
    --------
    >>> from modelgate.reports.views import GateView
    >>> view = EvaluationReportView(
    ...     title="Evaluation", model_name="churn", model_version="7",
    ...     model_sha256="ab" * 32, data_fingerprint="cd" * 32, dataset_name="churn-2026-11",
    ...     run_id="run-1", created_at="2026-11-29T21:00:00Z", provider="CPUExecutionProvider",
    ...     rows_scored=1000, metrics=(), calibration=(), fairness=(), shap_importance=(),
    ...     waterfalls=(), gate=GateView(False, "AUC below floor", ()))
    >>> page = render_evaluation_report(view)
    >>> '<span class="verdict">BLOCKED</span>' in page and "ab" * 32 in page
    True
    """
    word, tone = _gate_banner(view.gate)
    reliability = None
    if view.calibration:
        points = [(c.mean_predicted, c.observed_rate) for c in view.calibration if c.n > 0]
        reliability = Markup(reliability_chart(points, title="Reliability diagram"))
    return _render(
        "evaluation.html.j2", f"{view.title} — {view.model_name} {view.model_version}",
        script=_sortable_script(),
        view=view, banner_word=word, banner_tone=tone, reliability=reliability,
        gap_charts=[_gap_chart(section) for section in view.fairness],
        segment_charts=[_segment_chart(section) for section in view.segments],
        importance_chart=_importance_chart(view.shap_importance, view.shap_output_space),
        swarm_chart=_swarm_chart(view.shap_summary, space=view.shap_output_space),
        group_charts=_group_charts(view.shap_groups, view.shap_output_space),
        class_charts=[(c, _swarm_chart(c.rows, _class_output(c.class_name, view.shap_output_space),
                                       view.shap_output_space))
                      for c in view.shap_classes],
    )


def _multiple(row: FeatureDriftRow) -> float | None:
    """The row's statistic as a multiple of its threshold (the one definition of "worst")."""
    return threshold_multiple(row.score, row.threshold)


def _ranked_features(features: Sequence[FeatureDriftRow]) -> list[FeatureDriftRow]:
    """Worst first: the largest statistic as a multiple of its own threshold (a JS of 0.09
    against 0.01 before a normalised Wasserstein of 1.2 against 1.0)."""
    order = worst_first([f.feature for f in features], [f.score for f in features],
                        [f.threshold for f in features])
    return [features[i] for i in order]


def drift_headline(features: Sequence[FeatureDriftRow]) -> str:
    """The drift report's first line: features drifted of those judged, and the worst one; then
    whether the model's output (a row of kind ``model output``) drifted, counted apart.

    Examples
    --------
    >>> rows = [FeatureDriftRow("age", "numeric", 1.2, 0.3, 0.2, 0.1, "drift", 90, 0, ()),
    ...         FeatureDriftRow("job", "categorical", None, None, 0.05, 0.1, "ok", 90, 0, ())]
    >>> drift_headline(rows)
    '1 of 2 features drifted (50%); worst: age, JS 0.2 (threshold 0.1, 2.0x)'
    >>> score = FeatureDriftRow("model score", "model output", 0.1, 0.4, 0.3, 0.1, "drift", 90, 0, ())
    >>> drift_headline([*rows, score]).split("; ", 2)[2]
    'model output (model score): drift, JS 0.3'
    """
    inputs = [f for f in features if f.kind != "model output"]
    outputs = "".join(f"; model output ({f.feature}): {f.verdict}, {_statistic_label(f)} "
                      f"{format_number(f.score)}" for f in features if f.kind == "model output")
    if not inputs:
        return "No features were judged." + outputs
    worst = _ranked_features(inputs)[0]
    drifted = sum(f.verdict == "drift" for f in inputs)
    return (f"{drifted} of {len(inputs)} features drifted ({drifted / len(inputs):.0%}); "
            f"worst: {worst.feature}, {_statistic_label(worst)} {format_number(worst.score)} "
            f"(threshold {format_number(worst.threshold)}, {_times(_multiple(worst))})" + outputs)


def _times(multiple: float | None) -> str:
    """``2.6x`` its threshold; ``-`` without data.

    >>> _times(8.94), _times(None), _times(float("inf"))
    ('8.9x', '-', 'inf x')
    """
    if multiple is None:
        return "-"
    return "inf x" if multiple == float("inf") else f"{multiple:.1f}x"


def _features_chart(ranked: Sequence[FeatureDriftRow]) -> Markup | None:
    if not ranked:
        return None
    shown = ranked[:MAX_BARS]
    multiples = [_multiple(f) for f in shown]
    finite = [m for m in multiples if m is not None and m != float("inf")]
    cap = 2 * max([*finite, 1.0])  # a zero threshold's infinite multiple is drawn past the rest
    bars = [Bar(f"{f.feature} ({_statistic_label(f)} {format_number(f.score)})",
                cap if m == float("inf") else (m or 0.0), 1.0, _VERDICT_TONES[f.verdict])
            for f, m in zip(shown, multiples, strict=True)]
    title = "Drift by feature as a multiple of its threshold, worst first"
    if len(shown) < len(ranked):
        title += f", top {len(shown)} of {len(ranked)}"
    return Markup(bar_chart(bars, title=title, x_label="statistic / its threshold (dashed tick: 1)"))


def _timeline_chart(view: DriftReportView) -> Markup | None:
    if not view.error_rate:
        return None
    markers = [(c.position, f"change point {i} at {c.event_time or 'unknown time'}: "
                f"{format_number(c.rate_before)} → {format_number(c.rate_after)}")
               for i, c in enumerate(view.change_points, start=1)]
    return Markup(line_chart(view.error_rate, markers,
                             title="Error rate over the interval (rings: change points)",
                             x_label="position in stream", y_label="error rate"))


def _attribution_chart(shares: Sequence[AttributionShareRow]) -> Markup | None:
    if not shares:
        return None
    bars = [Bar(s.feature, s.current, s.reference, "neutral")
            for s in sorted(shares, key=lambda s: (-s.reference, s.feature))[:MAX_BARS]]
    return Markup(bar_chart(bars, title="Share of mean |SHAP| per feature: live rows (bar) vs "
                            "reference (dashed tick)", x_label="share of attribution"))


def render_drift_report(view: DriftReportView) -> str:
    """Render the drift report of one monitoring interval as a self-contained HTML page.

    Parameters
    ----------
    view : DriftReportView
        What to show; every string in it is escaped.

    Returns
    -------
    str
        An HTML5 document with a DRIFT (red), WARN (amber) or OK (green) banner.

    Examples
    --------
    >>> view = DriftReportView(
    ...     model_name="churn", model_version="7", interval_start="2026-11-28T00:00:00Z",
    ...     interval_end="2026-11-29T00:00:00Z", run_id="drift-1", rows_sampled=5000,
    ...     features=(), histograms=(), error_rate=(), change_points=(),
    ...     summary="no drift", verdict="ok")
    >>> '<span class="verdict">OK</span>' in render_drift_report(view)
    True
    """
    ranked = _ranked_features(view.features)
    histograms = [Markup(histogram_chart(h.bin_labels, h.reference, h.current,
                                         title=f"{h.feature}: reference vs current",
                                         x_label=h.feature))
                  for h in view.histograms]
    return _render(
        "drift.html.j2", f"Drift report — {view.model_name} {view.model_version}",
        view=view, features=ranked, features_chart=_features_chart(ranked),
        histogram_charts=histograms, timeline_chart=_timeline_chart(view),
        attribution_chart=_attribution_chart(view.attribution_shares),
        change_points=list(enumerate(view.change_points, start=1)),
        headline=drift_headline(view.features),
        unseen=[(f, _unseen(f, MAX_UNSEEN_LISTED)) for f in ranked if f.unseen_categories],
        # the sorter only where a sortable table has rows: a page without one allows no script
        script=_sortable_script() if ranked or view.segment_drift or view.segment_estimates else "",
    )


def render_model_index(view: ModelIndexView) -> str:
    """Render the list of a model's evaluation and drift runs, in the order given.

    Parameters
    ----------
    view : ModelIndexView
        What to show; every string in it is escaped (links are checked by ``IndexRow``).

    Returns
    -------
    str
        An HTML5 document.

    Examples
    --------
    >>> from modelgate.reports.index_views import IndexRow
    >>> row = IndexRow("drift", "d1", "7", "2026-11-29", "drift", "d1.html")
    >>> page = render_model_index(ModelIndexView("churn", runs=(row,)))
    >>> page.count("<tr>")  # header row + one run
    2
    """
    return _render("index.html.j2", f"Reports — {view.model_name}", view=view)
