"""Small hand-built inline SVG charts for the HTML reports.

Why not matplotlib: its SVG output is 50-200 KB per chart (every glyph a path, every tick a
group), and a report holds a dozen charts plus embedded waterfall PNGs while we target
reports under 2 MB. These charts are a few dozen elements each (a few KB), need no fonts,
scripts or stylesheets beyond what the page inlines, and are byte-for-byte deterministic.

One module per chart family: bars, intervals, histograms, lines and the reliability diagram
here, the SHAP charts in :mod:`~.shap_charts`; the escaping, number formats, scale and axes
they share are in :mod:`~.svg`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .svg import (
    BOTTOM,
    CHANGE_POINT_COLOUR,
    MAX_LINE_POINTS,
    MIN_PLOT_WIDTH,
    REFERENCE_COLOUR,
    ROW_HEIGHT,
    TONE_COLOURS,
    TOP,
    WIDTH,
    Scale,
    Tone,
    clip_label,
    coord,
    css,
    esc,
    format_number,
    label_room,
    nice_ticks,
    open_svg,
    row_label,
    text_width,
    threshold_tick,
    x_axis,
    y_axis,
)


@dataclass(frozen=True, slots=True)
class Bar:
    """One horizontal bar; ``marker`` draws a threshold tick on its row."""

    label: str
    value: float
    marker: float | None = None
    tone: Tone = "neutral"


@dataclass(frozen=True, slots=True)
class Interval:
    """One point estimate with its interval whiskers; ``threshold`` draws a tick on its row."""

    label: str
    value: float
    lower: float
    upper: float
    threshold: float | None = None
    tone: Tone = "neutral"


def bar_chart(bars: Sequence[Bar], *, title: str, x_label: str, left: float | None = None) -> str:
    """Horizontal bars in the order given, value printed at the bar end.

    Parameters
    ----------
    bars : sequence of Bar
        Non-negative finite values; ``marker`` (e.g. a threshold) is drawn as a dashed tick.
    title, x_label : str
        Chart title and x-axis label (escaped).
    left : float, optional
        Width in pixels reserved for row labels; by default the widest label's (labels
        over ``LABEL_CHARS`` characters are cut, with the full text as a tooltip). The
        chart grows wider than ``WIDTH`` when the labels need it.

    Returns
    -------
    str
        An ``<svg>`` element.

    Raises
    ------
    ValueError
        If a value or marker is negative or not finite.

    Examples
    --------
    >>> svg = bar_chart([Bar("age", 0.3), Bar("<x>", 0.1)], title="T", x_label="mean |SHAP|")
    >>> svg.startswith("<svg") and "&lt;x&gt;" in svg and "<x>" not in svg
    True
    """
    for bar in bars:
        for value in (bar.value, bar.marker):
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"bars[{bar.label!r}] needs finite values >= 0, got {value!r}")
    top_value = max([b.value for b in bars] + [b.marker or 0.0 for b in bars] + [0.0])
    ticks = nice_ticks(0.0, top_value)
    height = TOP + ROW_HEIGHT * max(len(bars), 1) + BOTTOM
    left = label_room([b.label for b in bars]) if left is None else left
    value_room = max((text_width(format_number(b.value)) for b in bars), default=0.0) + 16.0
    width = max(WIDTH, round(left + MIN_PLOT_WIDTH + value_room))
    scale = Scale(0.0, ticks[-1], left, width - value_room)
    parts = open_svg(height, title, width)
    for i, bar in enumerate(bars):
        y = TOP + ROW_HEIGHT * (i + 0.5)
        colour = TONE_COLOURS[bar.tone]
        parts.append(row_label(bar.label, y, left))
        parts.append(f'<rect x="{coord(left)}" y="{coord(y - 7)}" width="{coord(scale(bar.value) - left)}" '
                     f'height="14" fill="{colour}"/>')
        parts.append(f'<text x="{coord(scale(bar.value) + 4)}" y="{coord(y)}" {css("vl")}>'
                     f"{esc(format_number(bar.value))}</text>")
        if bar.marker is not None:
            parts.append(threshold_tick(scale(bar.marker), y))
    parts += x_axis(scale, ticks, TOP + ROW_HEIGHT * max(len(bars), 1), x_label)
    parts.append("</svg>")
    return "\n".join(parts)


def _interval_marks(row: Interval, scale: Scale, y: float) -> list[str]:
    colour = TONE_COLOURS[row.tone]
    if not all(math.isfinite(v) for v in (row.value, row.lower, row.upper)):
        return [f'<text x="{coord(scale.start + 4)}" y="{coord(y)}" {css("vl")}>undefined</text>']
    lo, hi, mid = scale(row.lower), scale(row.upper), scale(row.value)
    return [
        f'<line x1="{coord(lo)}" y1="{coord(y)}" x2="{coord(hi)}" y2="{coord(y)}" stroke="{colour}" '
        'stroke-width="2"/>',
        f'<path d="M{coord(lo)} {coord(y - 5)}v10M{coord(hi)} {coord(y - 5)}v10" stroke="{colour}" '
        'stroke-width="2"/>',
        f'<circle cx="{coord(mid)}" cy="{coord(y)}" r="4" fill="{colour}"/>',
    ]


def interval_chart(
    rows: Sequence[Interval], *, title: str, x_label: str, left: float | None = None
) -> str:
    """Point estimates with interval whiskers and per-row threshold ticks (dashed).

    Rows whose value or bounds are not finite are labelled "undefined". The estimate and its
    interval are printed at the right.

    Parameters
    ----------
    rows : sequence of Interval
        One row per estimate, drawn top to bottom.
    title, x_label : str
        Chart title and x-axis label (escaped).
    left : float, optional
        Width in pixels reserved for row labels; by default the widest label's. The chart
        grows wider than ``WIDTH`` when the labels and printed intervals need it.

    Returns
    -------
    str
        An ``<svg>`` element.

    Examples
    --------
    >>> svg = interval_chart([Interval("tpr gap", 0.08, 0.03, 0.13, 0.1, "warn")],
    ...                      title="Gaps", x_label="gap")
    >>> svg.count("<circle")
    1
    """
    finite = [v for r in rows for v in (r.lower, r.upper, r.value, r.threshold)
              if v is not None and math.isfinite(v)]
    ticks = nice_ticks(min(finite + [0.0]), max(finite + [0.0]))
    height = TOP + ROW_HEIGHT * max(len(rows), 1) + BOTTOM
    texts = [f"{format_number(r.value)} [{format_number(r.lower)}, {format_number(r.upper)}]"
             for r in rows]
    left = label_room([r.label for r in rows]) if left is None else left
    value_room = max((text_width(t) for t in texts), default=0.0) + 24.0
    width = max(WIDTH, round(left + MIN_PLOT_WIDTH + value_room))
    scale = Scale(ticks[0], ticks[-1], left, width - value_room)
    parts = open_svg(height, title, width)
    for i, (row, text) in enumerate(zip(rows, texts, strict=True)):
        y = TOP + ROW_HEIGHT * (i + 0.5)
        parts.append(row_label(row.label, y, left))
        if row.threshold is not None:
            parts.append(threshold_tick(scale(row.threshold), y))
        parts += _interval_marks(row, scale, y)
        parts.append(f'<text x="{coord(width - value_room + 16)}" y="{coord(y)}" {css("vl")}>'
                     f"{esc(text)}</text>")
    parts += x_axis(scale, ticks, TOP + ROW_HEIGHT * max(len(rows), 1), x_label)
    parts.append("</svg>")
    return "\n".join(parts)


def _legend(entries: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    parts = []
    for i, (label, colour) in enumerate(entries):
        ex = x + 130 * i
        parts.append(f'<rect x="{coord(ex)}" y="{coord(y - 9)}" width="10" height="10" '
                     f'fill="{colour}"/>')
        parts.append(f'<text x="{coord(ex + 14)}" y="{coord(y)}" {css("lg")}>{esc(label)}</text>')
    return parts


def histogram_chart(
    bin_labels: Sequence[str],
    reference: Sequence[float],
    current: Sequence[float],
    *,
    title: str,
    x_label: str,
) -> str:
    """Reference (grey, wide) and current (blue, narrow) bin probabilities, overlaid.

    Bin labels are thinned out to about 12 when there are more bins, and slanted (the
    chart growing taller) when they do not fit side by side; none is cut short below
    ``LABEL_CHARS`` characters.

    Parameters
    ----------
    bin_labels : sequence of str
        One label per bin (escaped).
    reference, current : sequence of float
        Probabilities per bin, same length as ``bin_labels``.
    title, x_label : str
        Chart title and x-axis label (escaped).

    Returns
    -------
    str
        An ``<svg>`` element.

    Raises
    ------
    ValueError
        If the three sequences differ in length.

    Examples
    --------
    >>> svg = histogram_chart(["a", "b"], [0.5, 0.5], [0.9, 0.1], title="x", x_label="bin")
    >>> svg.count("<rect")  # 2 bins x 2 series + 2 legend swatches
    6
    """
    if not len(bin_labels) == len(reference) == len(current):
        raise ValueError(
            "bin_labels, reference and current must have the same length, got "
            f"{len(bin_labels)!r}, {len(reference)!r} and {len(current)!r}"
        )
    n_bins, bottom = max(len(bin_labels), 1), 220.0
    ticks = nice_ticks(0.0, max(list(reference) + list(current) + [0.0]), count=4)
    y_scale = Scale(0.0, ticks[-1], bottom, TOP + 24)
    every = max(1, math.ceil(len(bin_labels) / 12))
    shown = [clip_label(label) for label in bin_labels[::every]]
    widest = max((text_width(label) for label in shown), default=0.0)
    left = 56.0
    rotate = widest > (WIDTH - 20 - left) / n_bins * every - 8
    if rotate:  # slanted labels hang down-left of their bin: room below and to the left
        reach = widest * math.cos(math.radians(_SLANT)) - (WIDTH - 20 - left) / n_bins / 2
        left = max(left, reach + 8)
    width = (WIDTH - 20 - left) / n_bins
    drop = widest * math.sin(math.radians(_SLANT)) + 8 if rotate else 0.0
    height = bottom + 50 + drop
    parts = open_svg(height, title)
    parts += _legend([("reference", REFERENCE_COLOUR), ("current", TONE_COLOURS["neutral"])],
                     WIDTH - 270, TOP + 4)
    for i, (label, ref, cur) in enumerate(zip(bin_labels, reference, current, strict=True)):
        x = left + i * width
        parts.append(f'<rect x="{coord(x + 1)}" y="{coord(y_scale(ref))}" width="{coord(width - 2)}" '
                     f'height="{coord(bottom - y_scale(ref))}" fill="{REFERENCE_COLOUR}" '
                     f'fill-opacity="0.55"><title>{esc(label)}: reference '
                     f"{esc(format_number(ref))}</title></rect>")
        parts.append(f'<rect x="{coord(x + width * 0.25)}" y="{coord(y_scale(cur))}" '
                     f'width="{coord(width * 0.5)}" height="{coord(bottom - y_scale(cur))}" '
                     f'fill="{TONE_COLOURS["neutral"]}"><title>{esc(label)}: current '
                     f"{esc(format_number(cur))}</title></rect>")
        if i % every == 0:
            parts.append(_bin_label(label, x + width / 2, bottom, rotate))
    parts.append(f'<line x1="{coord(left)}" y1="{coord(bottom)}" x2="{coord(WIDTH - 20)}" '
                 f'y2="{coord(bottom)}" {css("ax")}/>')
    parts.append(f'<text x="{coord((left + WIDTH - 20) / 2)}" y="{coord(bottom + 34 + drop)}" '
                 f'{css("al")}>{esc(x_label)}</text>')
    parts += y_axis(y_scale, ticks, left, "probability")
    parts.append("</svg>")
    return "\n".join(parts)


_SLANT = 40.0
"""Degrees bin labels are turned when they do not fit side by side."""


def _bin_label(label: str, x: float, bottom: float, rotate: bool) -> str:
    """A bin's label under the axis: level, or slanted and ending under its bin."""
    if not rotate:
        return f'<text x="{coord(x)}" y="{coord(bottom + 14)}" {css("tk")}>{esc(clip_label(label))}</text>'
    y = bottom + 10
    return (f'<text x="{coord(x)}" y="{coord(y)}" {css("tk tky")} '
            f'transform="rotate(-{_SLANT:g} {coord(x)} {coord(y)})">'
            f"<title>{esc(label)}</title>{esc(clip_label(label))}</text>")


def downsample(points: Sequence[tuple[int, float]], limit: int) -> list[tuple[float, float]]:
    """Average consecutive points in equal-count buckets so that at most ``limit`` remain.

    Examples
    --------
    >>> downsample([(0, 0.0), (1, 1.0), (2, 0.0), (3, 1.0)], 2)
    [(0.5, 0.5), (2.5, 0.5)]
    """
    if len(points) <= limit:
        return [(float(p), float(v)) for p, v in points]
    size = math.ceil(len(points) / limit)
    out = []
    for start in range(0, len(points), size):
        chunk = points[start : start + size]
        out.append((sum(p for p, _ in chunk) / len(chunk), sum(v for _, v in chunk) / len(chunk)))
    return out


def _value_near(points: Sequence[tuple[int, float]], position: float) -> float:
    """The value of the point whose position is nearest ``position`` (0.0 without points).

    >>> _value_near([(0, 0.1), (10, 0.3)], 7)
    0.3
    """
    if not points:
        return 0.0
    return min(points, key=lambda p: (abs(p[0] - position), p[0]))[1]


def line_chart(
    points: Sequence[tuple[int, float]],
    markers: Sequence[tuple[int, str]],
    *,
    title: str,
    x_label: str,
    y_label: str,
) -> str:
    """A line over positions with labelled markers on it (e.g. change points).

    More than 600 points are averaged down (see :func:`downsample`) to keep the SVG small.

    Parameters
    ----------
    points : sequence of (int, float)
        ``(position, value)`` in increasing position.
    markers : sequence of (int, str)
        ``(position, tooltip)``; drawn as red rings on the line at the value plotted nearest
        the position (a position outside the line's range at its nearer end), numbered 1, 2, ...
        above the ring.
    title, x_label, y_label : str
        Chart title and axis labels (escaped).

    Returns
    -------
    str
        An ``<svg>`` element.

    Examples
    --------
    >>> svg = line_chart([(0, 0.1), (10, 0.2)], [(5, "x")], title="t", x_label="i", y_label="e")
    >>> svg.count("<polyline"), svg.count('class="cp"')
    (1, 1)
    """
    height, left, bottom = 270.0, 64.0, 214.0
    positions = [p for p, _ in points] or [p for p, _ in markers]
    x_lo, x_hi = (min(positions), max(positions)) if positions else (0, 1)
    x_scale = Scale(float(x_lo), float(max(x_hi, x_lo + 1)), left, WIDTH - 24.0)
    y_ticks = nice_ticks(0.0, max([v for _, v in points] + [0.0]), count=4)
    y_scale = Scale(0.0, y_ticks[-1], bottom, TOP + 24)
    parts = open_svg(height, title)
    coords = " ".join(f"{coord(x_scale(p))},{coord(y_scale(v))}"
                      for p, v in downsample(points, MAX_LINE_POINTS))
    parts.append(f'<polyline points="{coords}" fill="none" stroke="{TONE_COLOURS["neutral"]}" '
                 'stroke-width="1.5"/>')
    rings: list[str] = []  # drawn after the line, so the line does not cover them
    for i, (position, tooltip) in enumerate(markers, start=1):
        # on the series: the value plotted nearest the change point (inside the plotted range)
        at = min(max(float(position), x_scale.lo), x_scale.hi)
        x, y = x_scale(at), y_scale(_value_near(points, at))
        rings.append(f'<circle cx="{coord(x)}" cy="{coord(y)}" r="5" {css("cp")} '
                     f'stroke="{CHANGE_POINT_COLOUR}"><title>{esc(tooltip)}</title></circle>')
        # the number above the mark, kept clear of the y-axis ticks on the left
        rings.append(f'<text x="{coord(max(x, left + 10))}" y="{coord(max(y - 9, TOP + 9))}" {css("tk")} '
                     f'fill="{CHANGE_POINT_COLOUR}">{i}</text>')
    parts += rings
    parts += x_axis(x_scale, [t for t in nice_ticks(x_scale.lo, x_scale.hi)
                               if x_scale.lo <= t <= x_scale.hi], bottom, x_label)
    parts += y_axis(y_scale, y_ticks, left, y_label)
    parts.append("</svg>")
    return "\n".join(parts)


def reliability_chart(points: Sequence[tuple[float, float]], *, title: str) -> str:
    """Observed rate against mean predicted probability, with the diagonal of perfect calibration.

    Points with a non-finite coordinate are skipped.

    Parameters
    ----------
    points : sequence of (float, float)
        ``(mean predicted, observed rate)`` per bin, in [0, 1].
    title : str
        Chart title (escaped).

    Returns
    -------
    str
        An ``<svg>`` element.

    Examples
    --------
    >>> reliability_chart([(0.1, 0.12), (0.9, 0.8)], title="Calibration").count("<circle")
    2
    """
    height, left, bottom, size = 310.0, 64.0, 260.0, 200.0
    ticks = (0.0, 0.25, 0.5, 0.75, 1.0)
    x_scale = Scale(0.0, 1.0, left, left + size)
    y_scale = Scale(0.0, 1.0, bottom, bottom - size)
    kept = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    parts = open_svg(height, title, width=300)
    parts.append(f'<line x1="{coord(left)}" y1="{coord(bottom)}" x2="{coord(left + size)}" '
                 f'y2="{coord(bottom - size)}" {css("th")} stroke="{REFERENCE_COLOUR}"/>')
    coords = " ".join(f"{coord(x_scale(x))},{coord(y_scale(y))}" for x, y in kept)
    parts.append(f'<polyline points="{coords}" fill="none" stroke="{TONE_COLOURS["neutral"]}" '
                 'stroke-width="1.5"/>')
    parts += [f'<circle cx="{coord(x_scale(x))}" cy="{coord(y_scale(y))}" r="3.5" '
              f'fill="{TONE_COLOURS["neutral"]}"/>' for x, y in kept]
    parts += x_axis(x_scale, ticks, bottom, "mean predicted probability")
    parts += y_axis(y_scale, ticks, left, "observed rate")
    parts.append("</svg>")
    return "\n".join(parts)
