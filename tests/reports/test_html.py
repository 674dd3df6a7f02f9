"""Tests for the HTML reports: escaping, structure, embedded images, banners, determinism, size.

Views are built by hand, with hostile strings in every data-derived text field. Structure is
checked with Python's own ``html.parser`` and, for the SVG fragments, ``xml.etree`` — never
by the renderer's own helpers.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import struct
import zlib
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from modelgate.reports.drift_views import (
    ChangePointRow,
    DriftReportView,
    FeatureDriftRow,
    HistogramView,
)
from modelgate.reports.html import (
    render_drift_report,
    render_evaluation_report,
    render_model_index,
)
from modelgate.reports.index_views import IndexRow, ModelIndexView
from modelgate.reports.views import (
    CalibrationRow,
    EvaluationReportView,
    FairnessSection,
    GapRow,
    GateCheckRow,
    GateView,
    GroupRow,
    MetricRow,
    WaterfallImage,
)

from modelgate.display_text import escape_hidden

SCRIPT = "<script>alert(1)</script>"
SQL = "'; DROP TABLE x; --"
QUOTED = '"quoted"'
HOSTILE = (SCRIPT, SQL, QUOTED)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SORTABLE_JS = (Path(__file__).resolve().parents[2] / "reports/templates/sortable.js").read_text(
    encoding="utf-8")
SVG_NS = "{http://www.w3.org/2000/svg}"
VOID = {"meta", "img", "br", "hr", "link", "input", "wbr"}
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "main", "footer", "section", "span", "div",
    "h1", "h2", "h3", "p", "dl", "dt", "dd", "code", "table", "caption", "thead", "tbody",
    "tr", "th", "td", "figure", "figcaption", "img", "a",
    "svg", "text", "line", "rect", "path", "circle", "polyline",
}


def make_png(n_bytes: int, seed: int = 0) -> bytes:
    """A valid RGB PNG of random pixels (incompressible), about ``n_bytes`` long."""
    side = int((n_bytes / 3) ** 0.5)
    pixels = np.random.default_rng(seed).integers(0, 256, size=(side, side, 3), dtype=np.uint8)
    raw = b"".join(b"\x00" + pixels[r].tobytes() for r in range(side))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (PNG_MAGIC + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b""))


class Page(HTMLParser):
    """Collects tags, text, images, tables rows and the banner; checks nesting as it goes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.rows: dict[str, int] = {}
        self.table: str | None = None
        self.in_tbody = False
        self.banner_class = ""
        self.banner_text: list[str] = []
        self.meta: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._record(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._record(tag, attrs)

    def _record(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        found = dict(attrs)
        if tag == "img":
            self.images.append(found)
        if tag == "meta":
            self.meta.append(found)
        if tag == "table":
            self.table = found.get("id") or ""
            self.rows[self.table] = 0
        if tag == "tbody":
            self.in_tbody = True
        if tag == "tr" and self.in_tbody and self.table is not None:
            self.rows[self.table] += 1
        if found.get("id") == "banner":
            self.banner_class = found.get("class") or ""

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]!r}")
        else:
            self.stack.pop()
        if tag == "tbody":
            self.in_tbody = False
        if tag == "table":
            self.table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if "section" in self.stack and self.banner_class:
            self.banner_text.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    assert parser.errors == []
    assert parser.stack == []
    return parser


def svg_fragments(page: str) -> list[ElementTree.Element]:
    return [ElementTree.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", page, re.S)]


def evaluation_view(*, passed: bool = False, n_waterfalls: int = 2, png_bytes: int = 2000,
                    check_verdicts: tuple[str, ...] = ("fail", "pass")) -> EvaluationReportView:
    checks = tuple(
        GateCheckRow("fairness", "tpr_difference", SCRIPT, "<= 0.1", 0.12, 0.05, 0.19, 800,
                     verdict, "block", f"{QUOTED} gap {SQL}")  # type: ignore[arg-type]
        for verdict in check_verdicts
    )
    groups = (
        GroupRow(SCRIPT, 800, 0.3, 0.28, 0.7, 0.1, 0.75, 0.3, small_group=False,
                 tpr_ci_lower=0.862, tpr_ci_upper=1.0, fpr_ci_lower=0.0567, fpr_ci_upper=0.5098),
        GroupRow(SQL, 650, 0.25, 0.2, 0.6, 0.08, 0.7, 0.4, small_group=False),
        GroupRow(QUOTED, 12, 0.5, 0.5, float("nan"), 0.0, 1.0, float("nan"), small_group=True),
    )
    gaps = (GapRow("tpr_difference", 0.1, 0.04, 0.16, 0.1, "inconclusive"),
            GapRow(SCRIPT, float("nan"), float("nan"), float("nan"), None, "skipped"))
    return EvaluationReportView(
        title=f"Evaluation {QUOTED}", model_name=SCRIPT, model_version=SQL,
        model_sha256="0123456789abcdef" * 4, data_fingerprint="fedcba9876543210" * 4,
        dataset_name=QUOTED, run_id="run-42", created_at="2026-11-29T21:00:00Z",
        provider="CPUExecutionProvider", rows_scored=12345,
        metrics=(MetricRow("roc_auc", 0.123456789, 0.1, 0.15, 0.11, 0.0134, -0.002, 0.03, 5000),
                 MetricRow(SCRIPT, 0.9, 0.88, 0.92, None, None, None, None, 5000),
                 MetricRow(SQL, 0.5, 0.4, 0.6, 0.5, 0.0, -0.1, 0.1, 5000)),
        calibration=(CalibrationRow(0.0, 0.5, 100, 0.2, 0.25),
                     CalibrationRow(0.5, 1.0, 0, float("nan"), float("nan"))),
        fairness=(FairnessSection(SCRIPT, groups, gaps), FairnessSection(QUOTED, groups[:2], ())),
        shap_importance=((SCRIPT, 0.4), (SQL, 0.1), (QUOTED, 0.25)),
        waterfalls=tuple(WaterfallImage(f"row {i} {SCRIPT}", f"reason {QUOTED}",
                                        make_png(png_bytes, seed=i))
                         for i in range(n_waterfalls)),
        gate=GateView(passed, f"summary {SCRIPT}", checks),
        drift_context=f"drift {SQL}", budget_notes=f"budget {QUOTED}",
    )


def drift_view(verdict: str = "drift", feature: str = SCRIPT) -> DriftReportView:
    features = (
        FeatureDriftRow("b_small", "numeric", 0.5, 0.05, 0.02, 0.1, "ok", 990, 10, ()),
        FeatureDriftRow(feature, "categorical", None, None, 0.4, 0.1, "drift", 1000, 0,
                        (SCRIPT, SQL, QUOTED)),
        FeatureDriftRow(QUOTED, "numeric", 3.0, 0.2, 0.05, 0.15, "warn", 1000, 0, (),
                        statistic="wasserstein_normalised"),
        FeatureDriftRow("a_small", "numeric", 0.5, 0.05, 0.02, 0.1, "ok", 990, 10, ()),
    )
    return DriftReportView(
        model_name=SCRIPT, model_version=SQL, interval_start="2026-11-28T00:00:00Z",
        interval_end="2026-11-29T00:00:00Z", run_id="drift-7", rows_sampled=5000,
        features=features,
        histograms=(HistogramView(feature, (SCRIPT, SQL, QUOTED), (0.5, 0.3, 0.2),
                                  (0.2, 0.3, 0.5)),),
        error_rate=tuple((i * 10, 0.1 + 0.1 * (i >= 50)) for i in range(100)),
        change_points=(ChangePointRow(500, f"t {SCRIPT}", 0.1, 0.2),
                       ChangePointRow(800, "2026-11-28T20:00:00Z", 0.2, 0.2)),
        summary=f"1 feature drifted: {SCRIPT}", verdict=verdict,  # type: ignore[arg-type]
    )


def index_view() -> ModelIndexView:
    runs = (IndexRow("evaluation", SCRIPT, SQL, QUOTED, "blocked", "eval/run-1.html"),
            IndexRow("drift", "drift-7", "7", "2026-11-29", "drift",
                     "https://s3.example/r.html?X-Amz-Signature=ab&x=1"))
    return ModelIndexView(SCRIPT, runs)


RENDERS: list[Callable[[], str]] = [
    lambda: render_evaluation_report(evaluation_view()),
    lambda: render_drift_report(drift_view()),
    lambda: render_model_index(index_view()),
]
RENDER_IDS = ["evaluation", "drift", "index"]


@pytest.mark.parametrize("render", RENDERS, ids=RENDER_IDS)
def test_hostile_strings_are_escaped_and_shown_as_text(render: Callable[[], str]) -> None:
    # the evaluation report's one script, allowed by its hash (tests/reports/test_sortable_tables.py)
    page = render().replace(f"<script>{SORTABLE_JS}</script>", "", 1)
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#x27;; DROP TABLE x; --" in page
    parsed = parse(page)
    assert set(parsed.tags) <= ALLOWED_TAGS
    assert not [name for name, _ in parsed.attrs if name.startswith("on")]
    text = "".join(parsed.text)
    assert SCRIPT in text and SQL in text


@pytest.mark.parametrize("render", RENDERS[:2], ids=RENDER_IDS[:2])
def test_quoted_text_is_escaped(render: Callable[[], str]) -> None:
    page = render()
    assert "&quot;quoted&quot;" in page
    assert QUOTED in "".join(parse(page).text)


@pytest.mark.parametrize("render", RENDERS, ids=RENDER_IDS)
def test_page_is_self_contained(render: Callable[[], str]) -> None:
    page = render()
    parsed = parse(page)
    assert page.startswith("<!DOCTYPE html>")
    assert {"name": "generator", "content": "modelgate"} in parsed.meta
    for name, value in parsed.attrs:
        if name in ("src", "href") and value and value.startswith("data:"):
            continue
        if name == "src":
            pytest.fail(f"non-data src {value!r}")
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "font-face" not in page


@pytest.mark.parametrize("render", RENDERS[:2], ids=RENDER_IDS[:2])
def test_svg_fragments_are_well_formed_xml(render: Callable[[], str]) -> None:
    svgs = svg_fragments(render())
    assert svgs
    for svg in svgs:
        assert svg.tag == f"{SVG_NS}svg"
        assert svg.find(f"{SVG_NS}title") is not None
        assert len(list(svg.iter())) < 250


def test_hostile_labels_survive_inside_svg() -> None:
    svgs = svg_fragments(render_drift_report(drift_view()))
    texts = {"".join(el.itertext()) for svg in svgs for el in svg.iter()}
    assert SCRIPT in texts  # the row label's full-text tooltip
    assert any(t.startswith(f"{SCRIPT}: reference") for t in texts)  # histogram bin tooltip


def test_waterfalls_are_embedded_png_data_uris_with_alt_text() -> None:
    view = evaluation_view(n_waterfalls=3)
    parsed = parse(render_evaluation_report(view))
    assert len(parsed.images) == 3
    for image, source in zip(parsed.images, view.waterfalls, strict=True):
        src = image["src"] or ""
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        decoded = base64.b64decode(src[len(prefix):], validate=True)
        assert decoded[:8] == PNG_MAGIC
        assert decoded == source.png
        assert image["alt"] == f"SHAP waterfall for {source.row_label} ({source.reason})"


def test_evaluation_tables_have_one_row_per_item() -> None:
    view = evaluation_view()
    rows = parse(render_evaluation_report(view)).rows
    assert rows == {"gate-checks": 2, "metrics": 3, "calibration": 2,
                    "gaps-0": 2, "groups-0": 3, "groups-1": 2}


def test_drift_and_index_tables_have_one_row_per_item() -> None:
    assert parse(render_drift_report(drift_view())).rows == {
        "features": 4, "unseen-categories": 1, "change-points": 2}
    assert parse(render_model_index(index_view())).rows == {"runs": 2}


def test_index_links_are_escaped_attributes() -> None:
    parsed = parse(render_model_index(index_view()))
    hrefs = [value for name, value in parsed.attrs if name == "href"]
    assert hrefs == ["eval/run-1.html", "https://s3.example/r.html?X-Amz-Signature=ab&x=1"]


@pytest.mark.parametrize(
    ("passed", "verdicts", "word", "tone"),
    [
        (False, ("fail", "pass"), "BLOCKED", "tone-bad"),
        (True, ("pass", "pass"), "PASSED", "tone-good"),
        (True, ("pass", "warn"), "WARN", "tone-warn"),
        (True, ("pass", "inconclusive"), "WARN", "tone-warn"),
        (True, (), "PASSED", "tone-good"),
    ],
    ids=["blocked", "passed", "passed-with-warning", "passed-inconclusive", "no-checks"],
)
def test_evaluation_banner(passed: bool, verdicts: tuple[str, ...], word: str, tone: str) -> None:
    view = evaluation_view(passed=passed, check_verdicts=verdicts)
    parsed = parse(render_evaluation_report(view))
    assert tone in parsed.banner_class.split()
    assert parsed.banner_text[0] == word
    assert parsed.banner_text[1] == f"summary {SCRIPT}"


@pytest.mark.parametrize(("verdict", "word", "tone"),
                         [("drift", "DRIFT", "tone-bad"), ("ok", "OK", "tone-good"),
                          ("warn", "WARN", "tone-warn")], ids=["drift", "ok", "warn"])
def test_drift_banner(verdict: str, word: str, tone: str) -> None:
    parsed = parse(render_drift_report(drift_view(verdict)))
    assert tone in parsed.banner_class.split()
    assert parsed.banner_text[0] == word


def test_model_sha256_and_metadata_visible() -> None:
    text = "".join(parse(render_evaluation_report(evaluation_view())).text)
    assert "0123456789abcdef" * 4 in text
    assert "fedcba9876543210" * 4 in text
    assert "12,345" in text


def test_numbers_use_four_significant_digits() -> None:
    text = parse(render_evaluation_report(evaluation_view())).text
    assert "0.1235" in text  # candidate 0.123456789
    assert "0.0134" in text and "[-0.002, 0.03]" in text
    assert "0.123456789" not in "".join(text)
    assert text.count("n/a") >= 2  # undefined TPR/FNR of the small group
    assert "[0.862, 1]" in text and "[0.0567, 0.5098]" in text  # a group's Wilson intervals


def test_drift_features_are_ordered_by_threshold_multiple_descending() -> None:
    page = render_drift_report(drift_view())
    table = page[page.index('id="features"'):].split("</table>", 1)[0]
    order = re.findall(r"<tr><td>(.*?)</td>", table)
    # multiples: SCRIPT js 0.4 / 0.1, QUOTED w_norm 0.2 / 0.15, a_small / b_small js 0.02 / 0.1
    # (tie broken by name)
    assert order == ["&lt;script&gt;alert(1)&lt;/script&gt;", "&quot;quoted&quot;",
                     "a_small", "b_small"]
    bars = svg_fragments(page)[0]
    labels = [t.text for t in bars.iter(f"{SVG_NS}text") if t.get("class") == "rl"]
    assert labels == [None] * 4  # the visible label follows the <title> child
    tooltips = [el.findtext(f"{SVG_NS}title") for el in bars.iter(f"{SVG_NS}text")
                if el.get("class") == "rl"]
    assert tooltips == [f"{SCRIPT} (JS 0.4)", f"{QUOTED} (W norm 0.2)", "a_small (JS 0.02)",
                        "b_small (JS 0.02)"]


def test_a_small_js_far_over_its_threshold_ranks_and_draws_above_a_large_wasserstein() -> None:
    """The tester's case: JS 0.089 against 0.01 (8.9x) is worse than a normalised
    Wasserstein of 1.3 against 1.0 (1.3x), though its raw value is 15 times smaller."""
    view = drift_view()
    rows = (FeatureDriftRow("childs", "numeric", 2.0, 1.3, 0.05, 1.0, "drift", 990, 0, (),
                            statistic="wasserstein_normalised"),
            FeatureDriftRow("educcat", "categorical", None, None, 0.089, 0.01, "drift", 990, 0, ()))
    page = render_drift_report(DriftReportView(**{
        **{f: getattr(view, f) for f in DriftReportView.__dataclass_fields__}, "features": rows}))
    table = page[page.index('id="features"'):].split("</table>", 1)[0]
    assert re.findall(r"<tr><td>(.*?)</td>", table) == ["educcat", "childs"]
    assert "<td>8.9x</td>" in table and "<td>1.3x</td>" in table
    assert "worst: educcat, JS 0.089 (threshold 0.01, 8.9x)" in page
    bars = svg_fragments(page)[0]
    widths = [float(r.get("width")) for r in bars.iter(f"{SVG_NS}rect")  # type: ignore[arg-type]
              if r.get("height") == "14"]
    assert widths[0] / widths[1] == pytest.approx(0.089 / 0.01 / 1.3, rel=0.02)


def test_a_change_point_is_marked_on_the_plotted_series_clear_of_the_axis() -> None:
    """Each ring sits on a vertex of the line (the change point's position, and the rate
    plotted there); one before the first plotted point (the rolling window's first end) sits
    on the line's first vertex, not on the y-axis, and no number is drawn over the ticks."""
    view = drift_view()
    early = DriftReportView(**{
        **{f: getattr(view, f) for f in DriftReportView.__dataclass_fields__},
        "error_rate": tuple((100 + i * 10, 0.1 + 0.1 * (i >= 40)) for i in range(90)),
        "change_points": (ChangePointRow(20, "", 0.1, 0.2), ChangePointRow(500, "", 0.1, 0.2))})
    svg = svg_fragments(render_drift_report(early))[-1]
    vertices = [tuple(map(float, p.split(","))) for p in
                svg.find(f"{SVG_NS}polyline").get("points").split()]  # type: ignore[union-attr]
    rings = [(float(c.get("cx")), float(c.get("cy")))  # type: ignore[arg-type]
             for c in svg.iter(f"{SVG_NS}circle") if c.get("class") == "cp"]
    assert rings == [vertices[0], vertices[40]]  # positions 100 (clamped from 20) and 500
    axis_x = min(x for x, _ in vertices)
    numbers = [el for el in svg.iter(f"{SVG_NS}text") if el.text in ("1", "2")
               and el.get("fill") is not None]
    assert len(numbers) == 2 and all(float(n.get("x")) > axis_x + 5  # type: ignore[arg-type]
                                     for n in numbers)


def test_timeline_marks_each_change_point_and_stays_small() -> None:
    view = drift_view()
    svg = svg_fragments(render_drift_report(view))[-1]
    marks = [el for el in svg.iter(f"{SVG_NS}circle") if el.get("class") == "cp"]
    assert len(marks) == 2
    long_view = DriftReportView(**{
        **{f: getattr(view, f) for f in DriftReportView.__dataclass_fields__},
        "error_rate": tuple((i, (i % 7) / 7) for i in range(20_000)),
    })
    long_svg = svg_fragments(render_drift_report(long_view))[-1]
    points = long_svg.find(f"{SVG_NS}polyline").get("points").split()  # type: ignore[union-attr]
    assert 100 < len(points) <= 600


@pytest.mark.parametrize("render", RENDERS, ids=RENDER_IDS)
def test_rendering_is_deterministic(render: Callable[[], str]) -> None:
    assert render().encode() == render().encode()


def test_report_with_ten_40kb_waterfalls_stays_under_2mb() -> None:
    view = evaluation_view(n_waterfalls=10, png_bytes=40_000)
    assert all(len(w.png) > 38_000 for w in view.waterfalls)
    size = len(render_evaluation_report(view).encode("utf-8"))
    assert 10 * 38_000 * 4 / 3 < size < 2_000_000


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.text(max_size=40))
def test_any_feature_name_is_rendered_as_text_only(name: str) -> None:
    """Shown as text, with the characters that hide or reorder text written as escapes."""
    page = render_drift_report(drift_view(feature=name))
    # the page's one script is its table sorter (tests/reports/test_sortable_tables.py)
    parsed = parse(page.replace(f"<script>{SORTABLE_JS}</script>", "", 1))
    assert set(parsed.tags) <= ALLOWED_TAGS
    assert any(escape_hidden(name, keep="\n\t") in chunk for chunk in parsed.text)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: IndexRow("drift", "r", "1", "t", "ok", "javascript:alert(1)"), "scheme"),
        (lambda: IndexRow("drift", "r", "1", "t", "ok", "a b.html"), "whitespace"),
        (lambda: IndexRow("drift", "r", "1", "t", "fine", "a.html"), "IndexRow.verdict"),
        (lambda: WaterfallImage("r", "x", b"GIF89a"), "PNG signature"),
        (lambda: HistogramView("f", ("a", "b"), (1.0,), (0.5, 0.5)), "HistogramView.reference"),
        (lambda: GapRow("g", 0.1, 0.0, 0.2, 0.1, "maybe"), "GapRow.verdict"),  # type: ignore[arg-type]
        (lambda: MetricRow("m", 0.5, 0.6, 0.4, None, None, None, None, 10), "MetricRow.ci"),
        (lambda: GroupRow("g", -1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, False), "GroupRow.n"),
        (lambda: FeatureDriftRow("f", "categorical", None, None, 0.1, 0.1, "ok", 1, 0, (),
                                 statistic="wasserstein_normalised"), "wasserstein_normalised"),
        (lambda: FeatureDriftRow("f", "numeric", 1.0, 0.1, float("nan"), 0.1, "ok", 1, 0, ()),
         "FeatureDriftRow.js"),
        (lambda: FeatureDriftRow("f", "numeric", 1.0, 0.1, 0.1, -0.1, "ok", 1, 0, ()),
         "FeatureDriftRow.threshold"),
        (lambda: DriftReportView(**{**{f: getattr(drift_view(), f) for f in
                                       DriftReportView.__dataclass_fields__},
                                    "error_rate": ((5, 0.1), (5, 0.2))}), "increase"),
    ],
    ids=["js-href", "space-href", "index-verdict", "not-png", "hist-length", "gap-verdict",
         "metric-ci-order", "negative-n", "missing-w-norm", "nan-js", "negative-threshold",
         "timeline-order"],
)
def test_views_reject_malformed_input(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        build()


def test_evaluation_view_rejects_bad_sha256() -> None:
    view = evaluation_view()
    fields = {f: getattr(view, f) for f in EvaluationReportView.__dataclass_fields__}
    with pytest.raises(ValueError, match=r"model_sha256 .*'not-a-hash'"):
        EvaluationReportView(**{**fields, "model_sha256": "not-a-hash"})


def test_banner_shows_one_line_per_check() -> None:
    view = evaluation_view()
    summary = ("Promotion gate FAILED: 1 blocking failure(s)\nBLOCK   value:auc: low\n"
               "WARN    value:brier: high")
    fields = {f: getattr(view, f) for f in EvaluationReportView.__dataclass_fields__}
    view = EvaluationReportView(**{**fields, "gate": GateView(False, summary, view.gate.checks)})
    parsed = parse(render_evaluation_report(view))
    assert parsed.banner_text == ["BLOCKED", "Promotion gate FAILED: 1 blocking failure(s)",
                                  "BLOCK   value:auc: low", "WARN    value:brier: high"]


LONG = "demographic_parity_difference_of_age"  # 36 characters, under LABEL_CHARS


def test_chart_labels_are_not_cut_short() -> None:
    from modelgate.reports.charts import Bar, Interval, bar_chart, histogram_chart, interval_chart

    charts = [
        bar_chart([Bar(LONG, 0.3)], title="t", x_label="x"),
        interval_chart([Interval(LONG, 0.08832, 0.05976, 0.1287, 0.1)], title="t", x_label="x"),
        histogram_chart([f"{LONG} {i}" for i in range(6)], [1 / 6] * 6, [1 / 6] * 6,
                        title="t", x_label="x"),
    ]
    for svg in charts:
        texts = ["".join(t.itertext()) for t in ElementTree.fromstring(svg).iter(f"{SVG_NS}text")]
        assert not any("…" in t for t in texts), texts
        assert any(LONG in t for t in texts)
    assert "0.08832 [0.05976, 0.1287]" in charts[1]
    assert 'transform="rotate(' in charts[2]  # six long bin labels do not fit side by side


def test_change_point_without_event_time_is_not_blank() -> None:
    view = drift_view()
    view = DriftReportView(**{**{f: getattr(view, f) for f in DriftReportView.__dataclass_fields__},
                              "change_points": (ChangePointRow(500, "", 0.1, 0.2),)})
    page = render_drift_report(view)
    table = page[page.index('id="change-points"'):]
    assert re.findall(r"<tr>(.*?)</tr>", table)[1].count("<td></td>") == 0


DISGUISED = "churn\u202egnp.exe\u200b\u2066x\u2069\x1b[2J"
"""A model name that a browser would show reordered (U+202E, U+2066/9), with an invisible
zero-width space and a terminal escape."""


@pytest.mark.parametrize("render", [
    lambda: render_evaluation_report(dataclasses.replace(evaluation_view(), model_name=DISGUISED)),
    lambda: render_drift_report(dataclasses.replace(drift_view(), model_name=DISGUISED)),
    lambda: render_model_index(ModelIndexView(DISGUISED, index_view().runs)),
], ids=RENDER_IDS)
def test_bidirectional_and_zero_width_characters_in_a_name_are_shown_escaped(
        render: Callable[[], str]) -> None:
    page = render()
    for hidden in ("\u202e", "\u200b", "\u2066", "\u2069", "\x1b"):
        assert hidden not in page
    assert "churn\\u202egnp.exe\\u200b\\u2066x\\u2069\\x1b[2J" in "".join(parse(page).text)
