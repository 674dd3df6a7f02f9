"""The SVG building blocks of the report charts: escaping, number and coordinate formats,
label widths, the linear scale, axes, row labels and the shared colours and sizes.

The chart families (:mod:`~.charts`, :mod:`~.shap_charts`) draw with these, so every chart
escapes, formats and lays out its text the same way.  Every label that comes from data is
escaped with :func:`esc` (``html.escape(quote=True)``) in text nodes and attributes alike,
so the fragments are well-formed XML.  Numbers shown to readers use :func:`format_number`
(4 significant digits); coordinates use :func:`coord` (one decimal).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from modelgate.display_text import escape_hidden

Tone = Literal["good", "warn", "bad", "neutral"]
"""Colour role of a mark: good (green), warn (amber), bad (red), neutral (blue)."""

TONE_COLOURS: dict[str, str] = {
    "good": "#1a7f37",
    "warn": "#b35900",
    "bad": "#cf222e",
    "neutral": "#4063a6",
}
REFERENCE_COLOUR = "#8c959f"
THRESHOLD_COLOUR = "#1f2328"
CHANGE_POINT_COLOUR = "#cf222e"

WIDTH = 640
ROW_HEIGHT = 22
TOP = 34
BOTTOM = 46
LABEL_CHARS = 48
"""Longest row label drawn in full; a longer one is cut with "…" (its tooltip has it all)."""
MIN_PLOT_WIDTH = 260.0
MAX_LINE_POINTS = 600
FONT = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"


def esc(value: object) -> str:
    """Escape a value for HTML or XML text and attributes; characters that would hide or
    reorder a name (controls, bidirectional overrides, zero-width spaces) are written as
    visible escapes (:func:`modelgate.display_text.escape_hidden`; newlines and tabs kept).

    Examples
    --------
    >>> esc('<b title="x">')
    '&lt;b title=&quot;x&quot;&gt;'
    >>> esc("churn\u202e1v")
    'churn\\\\u202e1v'
    """
    return html.escape(escape_hidden(str(value), keep="\n\t"), quote=True)


def format_number(value: float | None) -> str:
    """Format a number for readers: 4 significant digits, em dash for None, n/a for NaN.

    Examples
    --------
    >>> [format_number(v) for v in (0.123456, 1234567.0, -0.0, None, float("nan"))]
    ['0.1235', '1.235e+06', '0', '—', 'n/a']
    """
    if value is None:
        return "—"
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    text = f"{value:.4g}"
    return "0" if text == "-0" else text


def coord(value: float) -> str:
    """Format an SVG coordinate (one decimal, no negative zero)."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def clip_label(label: str, chars: int = LABEL_CHARS) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "…"


_NARROW = frozenset("iljtfrI.,;:'|!()[] ")
_WIDE = frozenset("mwMWOQGDHNU@%")


def text_width(text: str, font_size: float = 11.0) -> float:
    """A generous estimate of the rendered width of ``text`` in pixels (sans-serif).

    The charts have no font metrics (no fonts are shipped); laying out by this estimate,
    which errs wide, keeps labels inside their SVG. The browser test checks the real
    bounding boxes.

    Examples
    --------
    >>> text_width("0.1235") < text_width("demographic_parity_difference")
    True
    """
    em = sum(0.36 if ch in _NARROW else 0.95 if ch in _WIDE else 0.62 for ch in text)
    return em * font_size


def label_room(labels: Sequence[str]) -> float:
    """Pixels to reserve left of the plot for row labels (clipped at ``LABEL_CHARS``)."""
    widest = max((text_width(clip_label(label)) for label in labels), default=0.0)
    return max(60.0, widest + 14.0)


@dataclass(frozen=True, slots=True)
class Scale:
    """Linear map from data ``[lo, hi]`` to pixels ``[start, end]``."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        clamped = min(max(value, self.lo), self.hi)
        return self.start + (clamped - self.lo) / (self.hi - self.lo) * (self.end - self.start)


def nice_ticks(lo: float, hi: float, count: int = 5) -> tuple[float, ...]:
    """Round tick values (steps of 1, 2 or 5 times a power of ten) covering ``[lo, hi]``.

    Examples
    --------
    >>> nice_ticks(0.0, 0.87)
    (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    """
    if not hi > lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)
    first = math.floor(lo / step)
    last = math.ceil(hi / step - 1e-9)
    return tuple(round(i * step, 12) + 0.0 for i in range(first, last + 1))


_MIDDLE = 'text-anchor="middle" dy="0.35em"'
_CLASS_ATTRS: dict[str, str] = {
    "ct": f'{_MIDDLE} font-size="13" font-weight="600"',
    "tk": _MIDDLE,
    "al": _MIDDLE,
    "tk tky": 'text-anchor="end" dy="0.35em"',
    "rl": 'text-anchor="end" dy="0.35em"',
    "vl": 'dy="0.35em"',
    "lg": 'dy="0.35em"',
    "ax": 'stroke="#59636e"',
    "th": 'stroke-dasharray="4 3" stroke-width="2"',
    "cp": 'stroke-width="2" fill="none"',
}


def css(name: str) -> str:
    """A class plus the presentation attributes it stands for.

    The attributes make a chart render the same without the page's stylesheet (PDF
    converters, an SVG saved on its own); the class lets the page restyle it.
    """
    return f'class="{name}" {_CLASS_ATTRS[name]}'


def open_svg(height: float, title: str, width: int = WIDTH) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} '
        f'{coord(height)}" width="{width}" height="{coord(height)}" role="img" '
        f'aria-label="{esc(title)}" font-size="11" font-family="{FONT}" fill="#1f2328">',
        f"<title>{esc(title)}</title>",
        f'<text x="{width / 2:.1f}" y="20" {css("ct")}>{esc(title)}</text>',
    ]


def x_axis(scale: Scale, ticks: Sequence[float], y: float, label: str) -> list[str]:
    parts = [f'<line x1="{coord(scale.start)}" y1="{coord(y)}" x2="{coord(scale.end)}" '
             f'y2="{coord(y)}" {css("ax")}/>']
    for tick in ticks:
        x = coord(scale(tick))
        parts.append(f'<line x1="{x}" y1="{coord(y)}" x2="{x}" y2="{coord(y + 4)}" {css("ax")}/>')
        parts.append(f'<text x="{x}" y="{coord(y + 15)}" {css("tk")}>'
                     f"{esc(format_number(tick))}</text>")
    mid = (scale.start + scale.end) / 2
    parts.append(f'<text x="{coord(mid)}" y="{coord(y + 34)}" {css("al")}>{esc(label)}</text>')
    return parts


def y_axis(scale: Scale, ticks: Sequence[float], x: float, label: str) -> list[str]:
    parts = [f'<line x1="{coord(x)}" y1="{coord(scale.start)}" x2="{coord(x)}" '
             f'y2="{coord(scale.end)}" {css("ax")}/>']
    for tick in ticks:
        y = coord(scale(tick))
        parts.append(f'<line x1="{coord(x - 4)}" y1="{y}" x2="{coord(x)}" y2="{y}" {css("ax")}/>')
        parts.append(f'<text x="{coord(x - 6)}" y="{y}" {css("tk tky")}>'
                     f"{esc(format_number(tick))}</text>")
    mid = (scale.start + scale.end) / 2
    parts.append(f'<text x="14" y="{coord(mid)}" {css("al")} '
                 f'transform="rotate(-90 14 {coord(mid)})">{esc(label)}</text>')
    return parts


def row_label(label: str, y: float, left: float) -> str:
    return (f'<text x="{coord(left - 8)}" y="{coord(y)}" {css("rl")}>'
            f"<title>{esc(label)}</title>{esc(clip_label(label))}</text>")


def threshold_tick(x: float, y: float) -> str:
    return (f'<line x1="{coord(x)}" y1="{coord(y - 9)}" x2="{coord(x)}" y2="{coord(y + 9)}" '
            f'{css("th")} stroke="{THRESHOLD_COLOUR}"/>')

