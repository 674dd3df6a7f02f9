"""Self-contained HTML reports: evaluation, drift, and a per-model index.

Each renderer takes a view from :mod:`modelgate.reports.views` and returns one HTML5
document as a string: CSS inlined, charts as inline SVG, SHAP waterfalls as base64
``data:`` URIs, no JavaScript, fonts or external resources (a Content-Security-Policy
meta tag forbids them, as a second line of defence behind escaping). Every string taken
from a view is escaped with ``html.escape(quote=True)``. Output is deterministic: the same
view gives the same bytes (no clock, no random ids; ties in sort orders broken by name).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence

from modelgate.reports.charts import (
    Bar,
    Interval,
    Tone,
    bar_chart,
    esc,
    format_number,
    histogram_chart,
    interval_chart,
    line_chart,
    reliability_chart,
)
from modelgate.reports.views import (
    DriftReportView,
    EvaluationReportView,
    FairnessSection,
    FeatureDriftRow,
    GateView,
    IndexRow,
    ModelIndexView,
    WaterfallImage,
)

MAX_BARS = 30
"""Most bars drawn in one bar chart; the tables list every row."""
MAX_UNSEEN_SHOWN = 10

CSS = """
:root{--good:#1a7f37;--warn:#b35900;--bad:#cf222e;--neutral:#4063a6;--ink:#1f2328;
--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,
sans-serif;color:var(--ink);background:#fff}
main{max-width:980px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.sub,.note,.empty,caption,figcaption{color:var(--muted)}
.banner{display:flex;gap:16px;align-items:center;padding:12px 16px;border-radius:6px;
color:#fff;margin:12px 0 16px}
.banner .verdict{font-size:24px;font-weight:700;letter-spacing:.05em}
.tone-good{background:var(--good)}.tone-warn{background:var(--warn)}
.tone-bad{background:var(--bad)}.tone-neutral{background:var(--neutral)}
.badge{display:inline-block;padding:0 7px;border-radius:10px;color:#fff;font-size:12px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;overflow-wrap:anywhere}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
table{border-collapse:collapse;width:100%;margin:6px 0 14px;font-size:13px}
caption{text-align:left;padding:4px 0}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.scroll{overflow-x:auto}
svg.chart{max-width:100%;height:auto;display:block;margin:8px 0}
figure{margin:12px 0;border:1px solid var(--line);padding:8px;border-radius:6px}
figure img{max-width:100%;height:auto}
footer{margin-top:32px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);
padding-top:8px}
@media print{.banner,.badge{print-color-adjust:exact;-webkit-print-color-adjust:exact}}
""".strip()

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_VERDICT_TONES: dict[str, Tone] = {
    "pass": "good", "ok": "good", "passed": "good",
    "warn": "warn", "inconclusive": "warn",
    "fail": "bad", "drift": "bad", "blocked": "bad",
    "skipped": "neutral",
}


def _page(title: str, body: Iterable[str], footer: str) -> str:
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(_CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="modelgate">\n'
        f"<title>{esc(title)}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n<main>\n"
    )
    return head + "\n".join(body) + f"\n<footer>{footer}</footer>\n</main>\n</body>\n</html>\n"


def _banner(word: str, tone: Tone, text: str) -> str:
    return (f'<section class="banner tone-{tone}" role="status" id="banner">'
            f'<span class="verdict">{esc(word)}</span><span>{esc(text)}</span></section>')


def _badge(verdict: str) -> str:
    tone = _VERDICT_TONES.get(verdict, "neutral")
    return f'<span class="badge tone-{tone}">{esc(verdict)}</span>'


def _meta(items: Sequence[tuple[str, str]]) -> str:
    """A definition list; values are already-escaped HTML."""
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="meta">{rows}</dl>'


def _num(value: float | None) -> str:
    return f'<td class="num">{esc(format_number(value))}</td>'


def _ci(lower: float | None, upper: float | None) -> str:
    if lower is None or upper is None:
        return _num(None)
    return f'<td class="num">[{esc(format_number(lower))}, {esc(format_number(upper))}]</td>'


def _txt(value: object) -> str:
    return f"<td>{esc(value)}</td>"


def _count(value: int | None) -> str:
    return _num(None) if value is None else f'<td class="num">{value:,}</td>'


def _table(table_id: str, caption: str, headers: Sequence[str], rows: Sequence[str]) -> str:
    """A table; ``rows`` are already-built ``<td>`` sequences, one string per row."""
    if not rows:
        return f'<p class="empty" id="{esc(table_id)}">{esc(caption)}: none.</p>'
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    body = "\n".join(f"<tr>{row}</tr>" for row in rows)
    return (f'<div class="scroll"><table id="{esc(table_id)}">\n<caption>{esc(caption)}</caption>'
            f"\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table></div>")


def _gate_banner(gate: GateView) -> str:
    """BLOCKED if the gate failed, WARN if it passed with any check not passing, else PASSED."""
    if not gate.passed:
        return _banner("BLOCKED", "bad", gate.summary)
    if any(c.verdict in ("warn", "fail", "inconclusive") for c in gate.checks):
        return _banner("WARN", "warn", gate.summary)
    return _banner("PASSED", "good", gate.summary)


def _gate_section(gate: GateView) -> list[str]:
    rows = [
        _txt(c.kind) + _txt(c.metric) + _txt(c.sensitive_feature or "—") + _txt(c.threshold)
        + _num(c.observed) + _ci(c.ci_lower, c.ci_upper) + _count(c.n)
        + f"<td>{_badge(c.verdict)}</td>" + _txt(c.severity) + _txt(c.reason)
        for c in gate.checks
    ]
    headers = ("Kind", "Metric", "Sensitive feature", "Threshold", "Observed", "CI", "n",
               "Verdict", "Severity", "Reason")
    return ["<h2>Gate checks</h2>", _table("gate-checks", "Checks behind the decision",
                                           headers, rows)]


def _metrics_section(view: EvaluationReportView) -> list[str]:
    rows = [
        _txt(m.name) + _num(m.candidate) + _ci(m.ci_lower, m.ci_upper) + _num(m.champion)
        + _num(m.delta) + _ci(m.delta_ci_lower, m.delta_ci_upper) + _count(m.n)
        for m in view.metrics
    ]
    headers = ("Metric", "Candidate", "CI", "Champion", "Δ (candidate − champion)", "Δ CI", "n")
    return ["<h2>Metrics</h2>", _table("metrics", "Candidate metrics with confidence "
                                       "intervals and deltas against the champion",
                                       headers, rows)]


def _calibration_section(view: EvaluationReportView) -> list[str]:
    parts = ["<h2>Calibration</h2>"]
    if view.calibration:
        points = [(c.mean_predicted, c.observed_rate) for c in view.calibration if c.n > 0]
        parts.append(reliability_chart(points, title="Reliability diagram"))
    rows = [
        _ci(c.bin_lower, c.bin_upper) + _count(c.n) + _num(c.mean_predicted)
        + _num(c.observed_rate)
        for c in view.calibration
    ]
    parts.append(_table("calibration", "Calibration bins",
                        ("Bin", "n", "Mean predicted", "Observed rate"), rows))
    return parts


def _fairness_block(index: int, section: FairnessSection) -> list[str]:
    parts = [f"<h3>Sensitive feature: {esc(section.sensitive_feature)}</h3>"]
    intervals = [Interval(g.metric, g.value, g.ci_lower, g.ci_upper, g.threshold,
                          _VERDICT_TONES[g.verdict]) for g in section.gaps]
    if intervals:
        parts.append(interval_chart(
            intervals, title=f"Fairness gaps by {section.sensitive_feature} (dashed: threshold)",
            x_label="gap between groups"))
    gap_rows = [_txt(g.metric) + _num(g.value) + _ci(g.ci_lower, g.ci_upper)
                + _num(g.threshold) + f"<td>{_badge(g.verdict)}</td>" for g in section.gaps]
    parts.append(_table(f"gaps-{index}", "Gaps with confidence intervals",
                        ("Gap", "Value", "CI", "Threshold", "Verdict"), gap_rows))
    group_rows = [
        _txt(g.group) + _count(g.n) + _num(g.base_rate) + _num(g.selection_rate) + _num(g.tpr)
        + _num(g.fpr) + _num(g.ppv) + _num(g.fnr) + _txt("small group" if g.small_group else "")
        for g in section.groups
    ]
    parts.append(_table(f"groups-{index}", "Per-group rates",
                        ("Group", "n", "Base rate", "Selection rate", "TPR", "FPR", "PPV",
                         "FNR", "Note"), group_rows))
    return parts


def _fairness_section(view: EvaluationReportView) -> list[str]:
    parts = ["<h2>Fairness</h2>"]
    if not view.fairness:
        parts.append('<p class="empty">No sensitive features were assessed.</p>')
    for index, section in enumerate(view.fairness):
        parts += _fairness_block(index, section)
    return parts


def _waterfall(image: WaterfallImage) -> str:
    data = base64.b64encode(image.png).decode("ascii")
    alt = f"SHAP waterfall for {image.row_label} ({image.reason})"
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{esc(alt)}">'
            f"<figcaption>{esc(image.row_label)}: {esc(image.reason)}</figcaption></figure>")


def _shap_section(view: EvaluationReportView) -> list[str]:
    parts = ["<h2>Explanations (SHAP)</h2>"]
    ranked = sorted(view.shap_importance, key=lambda item: (-item[1], item[0]))
    if ranked:
        shown = ranked[:MAX_BARS]
        title = ("Global importance" if len(shown) == len(ranked)
                 else f"Global importance (top {len(shown)} of {len(ranked)} features)")
        parts.append(bar_chart([Bar(name, value) for name, value in shown], title=title,
                               x_label="mean |SHAP value|"))
    else:
        parts.append('<p class="empty">No global importance was computed.</p>')
    if view.budget_notes:
        parts.append(f'<p class="note">Budget: {esc(view.budget_notes)}</p>')
    parts += [_waterfall(image) for image in view.waterfalls]
    return parts


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
        inconclusive, and PASSED otherwise.

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
    meta = _meta([
        ("Model", esc(view.model_name)), ("Version", esc(view.model_version)),
        ("Model sha256", f"<code>{esc(view.model_sha256)}</code>"),
        ("Dataset", esc(view.dataset_name)),
        ("Data fingerprint (sha256)", f"<code>{esc(view.data_fingerprint)}</code>"),
        ("Rows scored", f"{view.rows_scored:,}"), ("Provider", esc(view.provider)),
        ("Run id", esc(view.run_id)), ("Created at", esc(view.created_at)),
    ])
    body = [f"<h1>{esc(view.title)}</h1>",
            f'<p class="sub">{esc(view.model_name)} version {esc(view.model_version)}</p>',
            _gate_banner(view.gate), meta]
    body += _gate_section(view.gate)
    if view.drift_context is not None:
        body += ["<h2>Production drift status</h2>", f"<p>{esc(view.drift_context)}</p>"]
    body += _metrics_section(view) + _calibration_section(view)
    body += _fairness_section(view) + _shap_section(view)
    footer = (f"Generated by modelgate · run {esc(view.run_id)} · {esc(view.created_at)} · "
              f"model sha256 {esc(view.model_sha256)}")
    return _page(f"{view.title} — {view.model_name} {view.model_version}", body, footer)


def _ranked_features(features: Sequence[FeatureDriftRow]) -> list[FeatureDriftRow]:
    return sorted(features, key=lambda f: (-f.score, f.feature))


def _statistic_label(row: FeatureDriftRow) -> str:
    return "JS" if row.statistic == "js" else "W norm"


def _unseen(row: FeatureDriftRow) -> str:
    shown = ", ".join(row.unseen_categories[:MAX_UNSEEN_SHOWN])
    extra = len(row.unseen_categories) - MAX_UNSEEN_SHOWN
    return shown + (f" (+{extra} more)" if extra > 0 else "")


def _drift_features_section(view: DriftReportView) -> list[str]:
    ranked = _ranked_features(view.features)
    parts = ["<h2>Feature drift</h2>"]
    if ranked:
        shown = ranked[:MAX_BARS]
        bars = [Bar(f"{f.feature} ({_statistic_label(f)})", f.score, f.threshold,
                    _VERDICT_TONES[f.verdict]) for f in shown]
        title = "Drift by feature, largest first (dashed tick: threshold)"
        if len(shown) < len(ranked):
            title += f", top {len(shown)} of {len(ranked)}"
        parts.append(bar_chart(bars, title=title, x_label="drift statistic"))
    rows = [
        _txt(f.feature) + _txt(f.kind) + _txt(_statistic_label(f)) + _num(f.score)
        + _num(f.threshold) + f"<td>{_badge(f.verdict)}</td>" + _num(f.js)
        + _num(f.wasserstein) + _num(f.wasserstein_normalised) + _count(f.n_current)
        + _count(f.n_missing) + _txt(_unseen(f))
        for f in ranked
    ]
    headers = ("Feature", "Kind", "Statistic", "Value", "Threshold", "Verdict", "JS (base 2)",
               "Wasserstein", "W normalised", "n current", "n missing", "Unseen categories")
    parts.append(_table("features", "Per-feature drift, largest first", headers, rows))
    return parts


def _drift_timeline_section(view: DriftReportView) -> list[str]:
    parts = ["<h2>Error rate</h2>"]
    if view.error_rate:
        markers = [(c.position, f"change point {i} at {c.event_time}: "
                    f"{format_number(c.rate_before)} → {format_number(c.rate_after)}")
                   for i, c in enumerate(view.change_points, start=1)]
        parts.append(line_chart(view.error_rate, markers,
                                title="Error rate over the interval (dashed: change points)",
                                x_label="position in stream", y_label="error rate"))
    rows = [f'<td class="num">{i}</td>' + _count(c.position) + _txt(c.event_time)
            + _num(c.rate_before) + _num(c.rate_after)
            for i, c in enumerate(view.change_points, start=1)]
    parts.append(_table("change-points", "Change points (ADWIN)",
                        ("#", "Position", "Event time", "Rate before", "Rate after"), rows))
    return parts


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
    meta = _meta([
        ("Model", esc(view.model_name)), ("Version", esc(view.model_version)),
        ("Interval", f"{esc(view.interval_start)} → {esc(view.interval_end)}"),
        ("Rows sampled", f"{view.rows_sampled:,}"), ("Run id", esc(view.run_id)),
    ])
    body = [f"<h1>Drift report — {esc(view.model_name)}</h1>",
            f'<p class="sub">version {esc(view.model_version)}, {esc(view.interval_start)} '
            f"to {esc(view.interval_end)}</p>",
            _banner(view.verdict.upper(), _VERDICT_TONES[view.verdict], view.summary), meta]
    body += _drift_features_section(view)
    if view.histograms:
        body.append("<h2>Distributions of the most drifted features</h2>")
    body += [histogram_chart(h.bin_labels, h.reference, h.current,
                             title=f"{h.feature}: reference vs current", x_label=h.feature)
             for h in view.histograms]
    body += _drift_timeline_section(view)
    footer = f"Generated by modelgate · run {esc(view.run_id)} · {esc(view.interval_end)}"
    return _page(f"Drift report — {view.model_name} {view.model_version}", body, footer)


def _index_row(row: IndexRow) -> str:
    return (_txt(row.kind) + _txt(row.run_id) + _txt(row.version) + _txt(row.when)
            + f"<td>{_badge(row.verdict)}</td>"
            + f'<td><a href="{esc(row.href)}">{esc(row.kind)} report</a></td>')


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
    >>> from modelgate.reports.views import IndexRow
    >>> row = IndexRow("drift", "d1", "7", "2026-11-29", "drift", "d1.html")
    >>> page = render_model_index(ModelIndexView("churn", runs=(row,)))
    >>> page.count("<tr>")  # header row + one run
    2
    """
    headers = ("Kind", "Run", "Version", "When", "Verdict", "Report")
    body = [f"<h1>Reports — {esc(view.model_name)}</h1>",
            f'<p class="sub">{len(view.runs):,} run{"" if len(view.runs) == 1 else "s"}</p>',
            _table("runs", "Evaluation and drift runs", headers,
                   [_index_row(r) for r in view.runs])]
    return _page(f"Reports — {view.model_name}", body, "Generated by modelgate")
