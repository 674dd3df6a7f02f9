"""Waterfall chart of one row's SHAP values, as PNG bytes.

Drawn directly with matplotlib's object-oriented API on an Agg canvas (no pyplot global
state, so it is safe in worker threads), in the layout of ``shap.plots.waterfall``: bars
from the base value to the model output, largest contributions on top. Labels show the
raw feature values as plain text (math-text parsing is off, so ``$`` and the like are
drawn literally); HTML escaping is left to the report that embeds the image.

The axis label names the algorithm and the space explained (a tree ensemble's exact values
explain its margin: log-odds, or a class's raw score before the softmax). For estimated
values each bar's label adds its standard error (``+0.120 ± 0.004``), and a bar whose 95% t
interval ``value ± q SE`` contains zero is hatched: its sign is not established by the
estimate. ``q`` is Student's t quantile with ``pairs - 1`` degrees of freedom (2.26 at 10
pairs), since the standard error is itself estimated from the pairs
(:mod:`modelgate.reports.explain_errors`). The "N other features" bar is a sum whose
standard error is not known from the per-value ones, so it is never marked.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from .explain_errors import interval_quantile, interval_words
from .explanation import Explanation

__all__ = ["uncertain_sign", "waterfall_png"]

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
        Result of :func:`modelgate.reports.explanation.explain`.
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
    >>> from modelgate.reports.explanation import explain
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
    labels, values, errors = _bars(explanation, row_index, max_display)
    base = float(explanation.base_values[row_index])
    output = float(explanation.model_output[row_index])
    if title is None:
        title = f"Row {row_index}: f(x) = {output:.3f}"
    pairs = explanation.budget.n_permutations
    estimated = explanation.algorithm != "exact" and pairs >= 2
    space = (f"{explanation.output}; {explanation.algorithm} estimate ± 1 standard error;\n"
             f"hatched: {interval_words(pairs)} crosses 0" if estimated
             else _exact_label(explanation))
    fig = _draw(labels, values, base, output, title, space,
                errors=errors if estimated else None,
                quantile=interval_quantile(pairs) if estimated else 0.0)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    return buf.getvalue()


def uncertain_sign(values: np.ndarray, standard_errors: np.ndarray, quantile: float) -> np.ndarray:
    """Whether each value's interval ``value ± quantile * SE`` contains zero.

    Parameters
    ----------
    values, standard_errors : ndarray of float
        Values and their standard errors, same shape (NaN errors are never marked).
    quantile : float
        The interval's multiple of the standard error, e.g.
        :func:`~modelgate.reports.explain_errors.interval_quantile` of the pairs.

    Returns
    -------
    ndarray of bool

    Examples
    --------
    >>> uncertain_sign(np.array([0.10, -0.04, 0.0]), np.array([0.01, 0.02, 0.0]), 2.262).tolist()
    [False, True, False]
    """
    return np.abs(values) < quantile * standard_errors


def _bars(
    explanation: Explanation, row_index: int, max_display: int
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Labels, values and standard errors of the bars, largest |value| first, the rest summed
    (the summed bar's standard error is NaN: unknown)."""
    values = explanation.values[row_index]
    errors = explanation.standard_errors[row_index]
    raw = explanation.feature_values[row_index]
    order = np.argsort(-np.abs(values), kind="stable")
    shown = order if len(order) <= max_display else order[: max_display - 1]
    labels = [f"{explanation.features[i]} = {_short(raw[i])}" for i in shown]
    bar_values, bar_errors = list(values[shown]), list(errors[shown])
    if len(shown) < len(order):
        rest = order[len(shown) :]
        labels.append(f"{len(rest)} other features")
        bar_values.append(float(values[rest].sum()))
        bar_errors.append(float("nan"))
    return labels, np.asarray(bar_values, dtype=np.float64), np.asarray(bar_errors, dtype=np.float64)


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
    labels: list[str], values: np.ndarray, base: float, output: float, title: str, space: str,
    *, errors: np.ndarray | None = None, quantile: float = 0.0,
) -> Figure:
    """Horizontal waterfall: each bar starts where the previous one ended; with ``errors``
    (estimates) the labels carry them and bars whose interval ``± quantile * SE`` crosses 0
    are hatched."""
    n = len(values)
    fig = Figure(figsize=(7.0, 1.0 + 0.4 * n))
    ax = fig.add_subplot()
    # bars are stacked from the base value, the smallest contribution first (bottom)
    ends = base + np.cumsum(values[::-1])
    starts = ends - values[::-1]
    ypos = np.arange(n)
    colours = [_POSITIVE if v >= 0 else _NEGATIVE for v in values[::-1]]
    bars = ax.barh(ypos, values[::-1], left=starts, color=colours, height=0.6)
    texts = [f"{v:+.3f}" for v in values[::-1]]
    if errors is not None:
        texts = [t if np.isnan(e) else f"{t} ± {e:.2g}" for t, e in zip(texts, errors[::-1], strict=True)]
        for bar, unsure in zip(bars, uncertain_sign(values[::-1], errors[::-1], quantile),
                                strict=True):
            if unsure:
                bar.set_hatch("////")
                bar.set_alpha(0.45)
    # Value labels sit 3 points beyond the bar end (an offset in points, not data units, so
    # the gap does not change with the x range); _fit_labels then widens the x range until
    # every label is inside the axes and so clear of the feature names left of them.
    labels_drawn = [
        ax.annotate(text, (s + v, float(y)), xytext=(3 if v >= 0 else -3, 0),
                    textcoords="offset points", va="center", ha="left" if v >= 0 else "right",
                    fontsize=8, annotation_clip=False)
        for y, v, s, text in zip(ypos, values[::-1], starts, texts, strict=True)
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
    # The layout is final: without this, savefig would run tight_layout once more for nothing.
    fig.set_layout_engine(None)
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


def _exact_label(explanation: Explanation) -> str:
    """Axis label of exact values: the space, and for tree values that they are the margin's."""
    if explanation.algorithm not in ("tree_interventional", "linear_interventional"):
        return f"{explanation.output}; exact SHAP"
    space = {"logit": "log-odds (margin, before the sigmoid)",
             "margin": "class score (margin, before the softmax)"}.get(explanation.output,
                                                                       explanation.output)
    model = "TreeSHAP" if explanation.algorithm == "tree_interventional" else "linear SHAP"
    return f"{space}; exact interventional {model}"
