"""How drift rows are named for people: the model's output score beside the features.

The drift pipeline compares the distribution of the model's output score with the reference
like a numeric feature, under the internal name :data:`SCORE_FEATURE` (``feature_drift.kind``
``'prediction'``). People never see that name: reports, the CLI, logs and the analyst views
(``analytics.feature_drift_by_interval.drift_of``, migration 0022) call it
:data:`MODEL_OUTPUT_LABEL`, and a feature that could be mistaken for it is quoted.
"""

from __future__ import annotations

SCORE_FEATURE = "__score__"  # the prediction distribution, drifted like a numeric feature
#: How the drift of the model's output score is named wherever people read it (reports, CLI,
#: logs, the analyst views); the internal name above is never shown.
MODEL_OUTPUT_LABEL = "model score"


def shown_feature(name: str) -> str:
    """A stored drift feature name as people read it, never mistaken for another.

    The model's output score, drifted under the internal name ``__score__``, is shown as
    :data:`MODEL_OUTPUT_LABEL`. A feature whose own name could be read as that label (it starts
    with it) or as a quoted name (it starts with a quote) is shown quoted (``repr``): an
    unquoted "model score" is always the model's output, and no two names look alike.

    >>> shown_feature("__score__"), shown_feature("age"), shown_feature("model score")
    ('model score', 'age', "'model score'")
    >>> print(shown_feature("'age'"))
    "'age'"
    """
    if name == SCORE_FEATURE:
        return MODEL_OUTPUT_LABEL
    if name.startswith((MODEL_OUTPUT_LABEL, "'", '"')):
        return repr(name)
    return name
