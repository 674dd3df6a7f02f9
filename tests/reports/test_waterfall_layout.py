"""The SHAP waterfall's value labels stay inside the plot, clear of the feature names.

Checked on the laid-out matplotlib figure: every value label's box lies inside the axes
box, so it cannot overlap the y tick labels (the feature names) left of the axes.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from modelgate.reports.explanation import Explanation, explain
from modelgate.reports.waterfall import _draw, waterfall_png


def _explanation(weights: np.ndarray, seed: int = 0) -> Explanation:
    names = [f"a_rather_long_feature_name_{i}" for i in range(len(weights))]
    rng = np.random.default_rng(seed)
    import pandas as pd

    background = pd.DataFrame(rng.normal(size=(30, len(weights))), columns=names)
    rows = pd.DataFrame(rng.normal(size=(8, len(weights))) * 2, columns=names)

    def predict(frame: pd.DataFrame) -> np.ndarray:
        return 1 / (1 + np.exp(-(frame.to_numpy() @ weights)))

    return explain(predict, rows, background, features=names)


@pytest.mark.parametrize("weights", [
    np.array([3.0, -2.5, 1.0, -1.0, 0.5, -0.3, 0.2, -4.0]),  # big negative bars at the left edge
    np.array([-6.0, 0.1, 0.05]),
    np.array([5.0, 4.0, 3.0, 0.01]),
], ids=["mixed", "one-large-negative", "all-positive"])
@pytest.mark.parametrize("with_errors", [False, True], ids=["exact", "estimate"])
def test_value_labels_lie_inside_the_axes(weights: np.ndarray, with_errors: bool) -> None:
    exp = _explanation(weights)
    # an estimate's labels are longer ("+0.120 ± 0.0041"); they must fit as well
    errors = np.full(len(weights), 0.004123) if with_errors else None
    for row in range(exp.values.shape[0]):
        labels = [f"{exp.features[i]} = {exp.feature_values[row][i]:.4g}" for i in range(len(weights))]
        order = np.argsort(-np.abs(exp.values[row]), kind="stable")
        fig = _draw([labels[i] for i in order], exp.values[row][order],
                    float(exp.base_values[row]), float(exp.model_output[row]), "t", exp.output,
                    errors=errors)
        renderer = FigureCanvasAgg(fig).get_renderer()
        (ax,) = fig.axes
        box = ax.get_window_extent(renderer)
        values = [t for t in ax.texts if t.get_text().startswith(("+", "-"))]
        assert len(values) == len(weights)
        names = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
        for text in values:
            extent = text.get_window_extent(renderer)
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1, (text.get_text(), extent, box)
            assert not any(extent.overlaps(name) for name in names), text.get_text()


def test_png_is_still_deterministic() -> None:
    exp = _explanation(np.array([3.0, -2.5, 1.0]))
    assert waterfall_png(exp, 0) == waterfall_png(exp, 0)
