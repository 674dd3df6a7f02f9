"""Waterfall chart of one row's SHAP values, as PNG bytes.

Drawn directly with matplotlib's object-oriented API on an Agg canvas (no pyplot global
state, so it is safe in worker threads), in the layout of ``shap.plots.waterfall``: bars
from the base value to the model output, largest contributions on top. Labels show the
raw feature values as plain text (math-text parsing is off, so ``$`` and the like are
drawn literally); HTML escaping is left to the report that embeds the image.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from .explain import Explanation

__all__ = ["waterfall_png"]

_DPI = 90
_POSITIVE, _NEGATIVE = "#ff0051", "#008bfb"  # shap's red and blue
_MAX_LABEL_CHARS = 40


def waterfall_png(
    explanation: Explanation,
    row_index: int,
    *,
    max_display: int = 10,
    title: str | None = None,
) -> bytes:
    """Render the SHAP values of one explained row as a waterfall chart.

    Parameters
    ----------
    explanation : Explanation
        Result of :func:`modelgate.reports.explain.explain`.
    row_index : int
        Row of ``explanation`` to draw (0-based, negative counts from the end).
    max_display : int, default 10
        Most bars; when there are more features, the smallest are summed into one
        "N other features" bar.
    title : str, optional
        Chart title; defaults to ``"Row {row_index}: f(x) = {output:.3f}"``.

    Returns
    -------
    bytes
        A PNG image (about 90 dpi, a few tens of kB), byte-identical for equal inputs.

    Raises
    ------
    ValueError
        If ``row_index`` is out of range or ``max_display`` < 2.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from modelgate.reports.explain import explain
    >>> predict = lambda f: 1 / (1 + np.exp(-(f["a"] + 2 * f["b"]).to_numpy()))
    >>> bg = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    >>> png = waterfall_png(explain(predict, bg, bg, features=["a", "b"]), 1)
    >>> png[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    n_rows = explanation.values.shape[0]
    if isinstance(row_index, bool) or not -n_rows <= row_index < n_rows:
        raise ValueError(f"row_index must be in [{-n_rows}, {n_rows}); got {row_index!r}")
    if isinstance(max_display, bool) or max_display < 2:
        raise ValueError(f"max_display must be an integer >= 2; got {max_display!r}")
    labels, values = _bars(explanation, row_index, max_display)
    base = float(explanation.base_values[row_index])
    output = float(explanation.model_output[row_index])
    if title is None:
        title = f"Row {row_index}: f(x) = {output:.3f}"
    fig = _draw(labels, values, base, output, title, explanation.output)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    return buf.getvalue()


def _bars(
    explanation: Explanation, row_index: int, max_display: int
) -> tuple[list[str], np.ndarray]:
    """Labels and values of the bars, largest |value| first, the rest summed."""
    values = explanation.values[row_index]
    raw = explanation.feature_values[row_index]
    order = np.argsort(-np.abs(values), kind="stable")
    shown = order if len(order) <= max_display else order[: max_display - 1]
    labels = [f"{explanation.features[i]} = {_short(raw[i])}" for i in shown]
    bar_values = list(values[shown])
    if len(shown) < len(order):
        rest = order[len(shown) :]
        labels.append(f"{len(rest)} other features")
        bar_values.append(float(values[rest].sum()))
    return labels, np.asarray(bar_values, dtype=np.float64)


def _short(value: object) -> str:
    """Raw value as one short line of plain text."""
    if isinstance(value, float | np.floating):
        text = f"{float(value):.4g}"
    else:
        text = " ".join(str(value).split())
    if len(text) > _MAX_LABEL_CHARS:
        text = text[: _MAX_LABEL_CHARS - 3] + "..."
    return text


def _draw(
    labels: list[str], values: np.ndarray, base: float, output: float, title: str, space: str
) -> Figure:
    """Horizontal waterfall: each bar starts where the previous one ended."""
    n = len(values)
    fig = Figure(figsize=(7.0, 1.0 + 0.4 * n))
    ax = fig.add_subplot()
    # bars are stacked from the base value, the smallest contribution first (bottom)
    ends = base + np.cumsum(values[::-1])
    starts = ends - values[::-1]
    ypos = np.arange(n)
    colours = [_POSITIVE if v >= 0 else _NEGATIVE for v in values[::-1]]
    ax.barh(ypos, values[::-1], left=starts, color=colours, height=0.6)
    # Value labels sit 3 points beyond the bar end (an offset in points, not data units, so
    # the gap does not change with the x range); _fit_labels then widens the x range until
    # every label is inside the axes and so clear of the feature names left of them.
    labels_drawn = [
        ax.annotate(f"{v:+.3f}", (s + v, float(y)), xytext=(3 if v >= 0 else -3, 0),
                    textcoords="offset points", va="center", ha="left" if v >= 0 else "right",
                    fontsize=8, annotation_clip=False)
        for y, v, s in zip(ypos, values[::-1], starts, strict=True)
    ]
    for text in labels_drawn:
        text.set_parse_math(False)
    ax.axvline(base, color="#888888", linestyle="--", linewidth=0.8)
    ax.axvline(output, color="#333333", linestyle=":", linewidth=0.8)
    ax.set_yticks(ypos, labels=labels[::-1], fontsize=8)
    for tick in ax.get_yticklabels():
        tick.set_parse_math(False)
    ax.set_xlabel(f"E[f(X)] = {base:.3f}   ->   f(x) = {output:.3f}   ({space})", fontsize=8)
    ax.set_title(title, fontsize=9).set_parse_math(False)
    ax.margins(x=0.15)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    _fit_labels(fig, ax, labels_drawn)
    return fig


def _fit_labels(fig: Figure, ax: Axes, texts: Sequence[Text], *, pad_px: float = 4.0) -> None:
    """Lay the figure out, then widen the x range until every text lies inside the axes.

    A few rounds suffice: each widening shrinks the bars, which only moves the labels
    inwards, and the final ``tight_layout`` changes the axes width by a few pixels at most.
    """
    canvas = FigureCanvasAgg(fig)
    for _ in range(6):
        fig.tight_layout()
        renderer = canvas.get_renderer()
        box = ax.get_window_extent(renderer)
        extents = [t.get_window_extent(renderer) for t in texts]
        over_left = max([box.x0 - e.x0 + pad_px for e in extents] + [0.0])
        over_right = max([e.x1 - box.x1 + pad_px for e in extents] + [0.0])
        if over_left <= 0.5 and over_right <= 0.5:  # inside, up to rounding
            return
        lo, hi = ax.get_xlim()
        per_px = (hi - lo) / box.width
        ax.set_xlim(lo - over_left * per_px, hi + over_right * per_px)
