"""Inline SVG charts of SHAP summaries: a beeswarm and mean SHAP by group.

Hand-built like :mod:`modelgate.reports.charts` (same reasons: a few KB per chart,
deterministic bytes, no fonts or scripts), with its escaping, number format and axes. Each
chart carries its title as ``aria-label`` and ``<title>``; the report puts a table with the
same numbers beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .summary_views import GroupShapSection, ShapSwarmRow
from .svg import (
    BOTTOM,
    REFERENCE_COLOUR,
    TOP,
    WIDTH,
    Scale,
    coord,
    css,
    esc,
    label_room,
    nice_ticks,
    open_svg,
    row_label,
    text_width,
    x_axis,
)

__all__ = ["MAX_GROUPS_DRAWN", "MAX_SWARM_FEATURES", "beeswarm_chart", "group_shap_chart", "space_axis_label"]

#: How each output space reads on an axis (issue #40: a chart of margin values says so).
SPACE_WORDS = {"probability": "probability", "logit": "log-odds, before the sigmoid",
               "margin": "class score (margin), before the softmax", "value": "predicted value"}

#: Most features drawn in one chart; the tables list every feature.
MAX_SWARM_FEATURES = 15
#: Most groups drawn per feature in the group chart; the table lists every group.
MAX_GROUPS_DRAWN = 8

def space_axis_label(label: str, output_space: str) -> str:
    """``label`` with the space the SHAP values explain, for an axis.

    Parameters
    ----------
    label : str
        What the axis shows (``"mean |SHAP value|"``).
    output_space : str
        ``"probability"``, ``"logit"``, ``"margin"`` or ``"value"``; ``""`` (not known: a run
        recorded before the space was kept) leaves ``label`` as it is.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        On another space.

    Examples
    --------
    >>> space_axis_label("mean |SHAP value|", "logit")
    'mean |SHAP value| (log-odds, before the sigmoid)'
    >>> space_axis_label("SHAP value", "")
    'SHAP value'
    """
    if output_space == "":
        return label
    if output_space not in SPACE_WORDS:
        raise ValueError(f"output_space must be one of {sorted(SPACE_WORDS)} or '', got {output_space!r}")
    return f"{label} ({SPACE_WORDS[output_space]})"


_LOW, _HIGH = (0x00, 0x8B, 0xFB), (0xFF, 0x00, 0x51)  # shap's blue and red
_SWARM_ROW = 30.0
_DOT_R = 2.5
# Okabe-Ito: distinguishable with the common colour-vision deficiencies
_GROUP_COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442",
                  "#000000")


def value_colour(position: float) -> str:
    """Colour of a feature value at ``position`` in [0, 1]: shap's blue (low) to red (high);
    grey for NaN.

    Examples
    --------
    >>> value_colour(0.0), value_colour(1.0), value_colour(float("nan"))
    ('#008bfb', '#ff0051', '#8c959f')
    """
    if math.isnan(position):
        return REFERENCE_COLOUR
    rgb = (round(lo + (hi - lo) * position) for lo, hi in zip(_LOW, _HIGH, strict=True))
    return "#" + "".join(f"{v:02x}" for v in rgb)


def _swarm_offsets(xs: Sequence[float], limit: float) -> list[float]:
    """Vertical offsets so dots at nearly the same x stack up and down instead of overlapping
    (dots are bucketed by one diameter; past ``limit`` they overlap, at ``+/-limit``)."""
    seen: dict[int, int] = {}
    offsets = []
    for x in xs:
        bucket = round(x / (2 * _DOT_R))
        k = seen.get(bucket, 0)
        seen[bucket] = k + 1
        offset = ((k + 1) // 2) * 2 * _DOT_R * 0.9 * (1 if k % 2 else -1)
        offsets.append(max(-limit, min(limit, offset)))
    return offsets


def _value_legend(x: float, y: float) -> list[str]:
    parts = [f'<text x="{coord(x)}" y="{coord(y)}" {css("lg")}>feature value: low</text>']
    x += text_width("feature value: low") + 6
    for i in range(5):
        parts.append(f'<rect x="{coord(x + 12 * i)}" y="{coord(y - 5)}" width="12" height="10" '
                     f'fill="{value_colour(i / 4)}"/>')
    x += 66
    parts.append(f'<text x="{coord(x)}" y="{coord(y)}" {css("lg")}>high</text>')
    x += text_width("high") + 18
    parts.append(f'<circle cx="{coord(x)}" cy="{coord(y)}" r="{_DOT_R + 1}" fill="{REFERENCE_COLOUR}"/>')
    parts.append(f'<text x="{coord(x + 8)}" y="{coord(y)}" {css("lg")}>not numeric or missing</text>')
    return parts


def beeswarm_chart(rows: Sequence[ShapSwarmRow], *, title: str, x_label: str) -> str:
    """SHAP summary: one row per feature, one dot per explained row at its SHAP value,
    coloured by the feature's value (blue low, red high, grey not numeric), in the order given
    (at most ``MAX_SWARM_FEATURES`` rows).

    Parameters
    ----------
    rows : sequence of ShapSwarmRow
    title, x_label : str
        Chart title and x-axis label (escaped).

    Returns
    -------
    str
        An ``<svg>`` element.

    Examples
    --------
    >>> svg = beeswarm_chart([ShapSwarmRow("<a>", (0.1, 0.1, -0.2), (0.0, 1.0, float("nan")),
    ...                                    0.13, float("nan"))], title="t", x_label="SHAP")
    >>> svg.count('class="dot"'), "&lt;a&gt;" in svg and "<a>" not in svg
    (3, True)
    """
    shown = list(rows[:MAX_SWARM_FEATURES])
    everything = [v for r in shown for v in r.values] + [0.0]
    ticks = nice_ticks(min(everything), max(everything))
    left = label_room([r.feature for r in shown])
    width = max(WIDTH + 120, round(left + 420))
    bottom = TOP + _SWARM_ROW * max(len(shown), 1)
    height = bottom + BOTTOM + 26
    scale = Scale(ticks[0], ticks[-1], left, width - 24)
    parts = open_svg(height, title, width)
    zero = coord(scale(0.0))
    parts.append(f'<line x1="{zero}" y1="{coord(TOP)}" x2="{zero}" y2="{coord(bottom)}" {css("th")} '
                 f'stroke="{REFERENCE_COLOUR}"/>')
    for i, row in enumerate(shown):
        y = TOP + _SWARM_ROW * (i + 0.5)
        parts.append(row_label(row.feature, y, left))
        order = sorted(range(len(row.values)), key=lambda k: (row.values[k], k))
        xs = [scale(row.values[k]) for k in order]
        for k, x, dy in zip(order, xs, _swarm_offsets(xs, _SWARM_ROW / 2 - _DOT_R - 1), strict=True):
            parts.append(f'<circle class="dot" cx="{coord(x)}" cy="{coord(y + dy)}" r="{_DOT_R}" '
                         f'fill="{value_colour(row.colours[k])}" fill-opacity="0.85"/>')
    parts += x_axis(scale, ticks, bottom, x_label)
    parts += _value_legend(left, bottom + BOTTOM + 12)
    parts.append("</svg>")
    return "\n".join(parts)


def _group_legend(groups: Sequence[str], x: float, y: float, right: float) -> tuple[list[str], float]:
    """Swatches with group names, wrapped at ``right``; returns the parts and the last line's y."""
    parts, start = [], x
    for i, group in enumerate(groups):
        room = 14 + text_width(group) + 16
        if x + room > right and x > start:
            x, y = start, y + 18
        parts.append(f'<rect x="{coord(x)}" y="{coord(y - 5)}" width="10" height="10" '
                     f'fill="{_GROUP_COLOURS[i % len(_GROUP_COLOURS)]}"/>')
        parts.append(f'<text x="{coord(x + 14)}" y="{coord(y)}" {css("lg")}>{esc(group)}</text>')
        x += room
    return parts, y


def group_shap_chart(section: GroupShapSection, *, title: str, x_label: str,
                     max_features: int = 10) -> str:
    """Mean SHAP per feature (rows, in the order given) and group (one coloured bar each,
    from zero), at most ``max_features`` features and ``MAX_GROUPS_DRAWN`` groups.

    Parameters
    ----------
    section : GroupShapSection
    title, x_label : str
        Chart title and x-axis label (escaped).
    max_features : int, default 10

    Returns
    -------
    str
        An ``<svg>`` element.

    Examples
    --------
    >>> s = GroupShapSection("sex", ("F", "M"), (3, 2), ("age", "x"), ((0.1, -0.1), (0.0, 0.2)),
    ...                      ((0.1, 0.1), (0.0, 0.2)), (0.2, 0.2))
    >>> group_shap_chart(s, title="t", x_label="mean SHAP").count('class="gbar"')
    4
    """
    groups = section.groups[:MAX_GROUPS_DRAWN]
    rows = section.rows[:max_features]
    bar_h = 7.0
    row_h = bar_h * len(groups) + 10
    everything = [v for _, mean, _, _ in rows for v in mean[:len(groups)]] + [0.0]
    ticks = nice_ticks(min(everything), max(everything))
    left = label_room([feature for feature, *_ in rows])
    width = max(WIDTH, round(left + 420))
    scale = Scale(ticks[0], ticks[-1], left, width - 24)
    legend_top = TOP + 6
    legend, legend_end = _group_legend(groups, left, legend_top, width - 10)
    top = legend_end + 16
    bottom = top + row_h * max(len(rows), 1)
    parts = open_svg(bottom + BOTTOM, title, width)
    parts += legend
    zero = coord(scale(0.0))
    for i, (feature, mean, _, _) in enumerate(rows):
        y0 = top + row_h * i + 5
        parts.append(row_label(feature, y0 + bar_h * len(groups) / 2, left))
        for j, value in enumerate(mean[:len(groups)]):
            x0, x1 = sorted((scale(0.0), scale(value)))
            parts.append(f'<rect class="gbar" x="{coord(x0)}" y="{coord(y0 + bar_h * j)}" '
                         f'width="{coord(max(x1 - x0, 0.5))}" height="{coord(bar_h - 1)}" '
                         f'fill="{_GROUP_COLOURS[j % len(_GROUP_COLOURS)]}"/>')
    parts.append(f'<line x1="{zero}" y1="{coord(top)}" x2="{zero}" y2="{coord(bottom)}" {css("ax")}/>')
    parts += x_axis(scale, ticks, bottom, x_label)
    parts.append("</svg>")
    return "\n".join(parts)
