"""Model-agnostic SHAP values for raw-column models: exact where exact is cheap.

The models explained here take RAW feature columns (preprocessing lives inside the ONNX
graph), so every column, categorical ones included, is explained as one whole feature.
The model is seen only through ``predict(frame) -> probability of the positive class``.
Every value comes with the algorithm that produced it and a standard error.

Algorithms
----------
``"exact"``
    Exact Shapley values over all ``2**M`` coalitions (``shap.ExactExplainer``); standard
    errors 0. Its cost is ``2**M x background rows x explained rows`` model evaluations
    (before identical inputs are merged), sent to the model in batches of
    ``max_batch_rows``.
``"permutation"``
    An estimate: antithetic permutation sampling (``shap.PermutationExplainer``'s
    estimator) stratified by position, the first and last positions computed exactly, with
    the standard error of every value from its ``n_permutations`` independent pairs
    (:mod:`modelgate.reports.explain_estimators` says how, and why this one).
``"auto"``
    ``"exact"`` for ``M <= 10`` features (shap's own threshold) at any size, and for
    ``M <= 16`` while ``2**M x background rows x explained rows`` is at most
    ``EXACT_EVALUATION_BUDGET`` (``2**25``, about 33.5 million model evaluations: a few
    seconds of batched ONNX Runtime on a small model, bench/RESULTS.md); else
    ``"permutation"``. With the pipelines' 100 background rows and blocks of 10 rows,
    models of up to 15 features are explained exactly.

Masker (:mod:`modelgate.reports.explain_masking`): a feature that is "absent" from a
coalition takes its value from each row of a background sample in turn, and the model
output is averaged over the background rows (``shap.maskers.Independent``); identical
masked inputs are scored once. With ``output="logit"`` each model output is turned into
log-odds BEFORE averaging, so a logistic-regression model has the closed form
``SHAP_i = w_i * (x_i - mean_background(x_i))``; this differs from ``shap``'s
``link=shap.links.logit``, which takes the logit of the averaged probability.

The base value is the mean output over the background and the coalition of all features
is the model output on the row itself; both endpoints are shared by every ordering, so
``base_value + sum(values) == model_output`` holds by construction and is checked.
Rows worth a waterfall are chosen in :mod:`modelgate.reports.explain_rows`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from .explain_estimators import Estimate, exact_values, permutation_evaluations, permutation_values
from .explain_masking import MaskedEvaluator, Output, Predict
from .explain_rows import Reason, RowSelection, select_error_rows, select_rows

Algorithm = Literal["permutation", "exact", "auto"]
#: ``"tree_interventional"`` / ``"linear_interventional"``: exact values read from a
#: tree-ensemble or linear graph (:mod:`modelgate.reports.exact_explanation`), never chosen by
#: :func:`choose_algorithm`.
Chosen = Literal["permutation", "exact", "tree_interventional", "linear_interventional"]
#: The space an Explanation's values are in: the masker's outputs, or a tree ensemble's
#: raw per-class score before its softmax (``"margin"``).
Space = Literal["probability", "logit", "value", "margin"]

#: Background rows used by the masker; a larger background is subsampled (seeded).
DEFAULT_BACKGROUND_SIZE = 100
#: Antithetic permutation pairs per explained row (as ``shap``'s default of 10).
DEFAULT_N_PERMUTATIONS = 10
#: Most rows one call of :func:`explain` accepts.
DEFAULT_MAX_ROWS = 50
#: Most model input rows sent to ``predict`` in one call.
DEFAULT_MAX_BATCH_ROWS = 100_000
#: Models with at most this many features are always explained exactly (shap's threshold).
EXACT_ALWAYS_FEATURES = 10
#: Most model evaluations (coalitions x background rows x explained rows) ``"auto"``
#: spends on exact values above ``EXACT_ALWAYS_FEATURES`` features.
EXACT_EVALUATION_BUDGET = 2**25
#: Largest feature count the exact algorithm accepts (``2**16`` coalitions per row).
EXACT_MAX_FEATURES = 16
#: Largest allowed gap between ``base_value + sum(values)`` and the model output.
ADDITIVITY_TOLERANCE = 1e-6

__all__ = [
    "ADDITIVITY_TOLERANCE",
    "EXACT_ALWAYS_FEATURES",
    "EXACT_EVALUATION_BUDGET",
    "EXACT_MAX_FEATURES",
    "AdditivityError",
    "Explanation",
    "ExplanationBudget",
    "Reason",
    "RowSelection",
    "Space",
    "choose_algorithm",
    "explain",
    "explain_class",
    "global_importance",
    "importance_standard_errors",
    "select_error_rows",
    "select_rows",
]


class AdditivityError(ArithmeticError):
    """Raised when ``base_value + sum(SHAP values)`` misses the model output."""


@dataclass(frozen=True, slots=True)
class ExplanationBudget:
    """Work spent per explained row.

    Attributes
    ----------
    evaluations_per_row : int
        Coalitions evaluated per row, counting the two endpoints (no features, all
        features); each is averaged over ``background_size`` masked inputs (identical
        inputs are scored once). ``2**M`` for the exact algorithm; for the permutation
        algorithm the upper bound ``2 * n_permutations * (M - 3) + 2 * M + 2`` (the
        orderings' inner prefixes, the end strata and the endpoints; coalitions repeated
        across orderings are evaluated once).
    n_permutations : int
        Antithetic permutation pairs per row (0 for the exact algorithm).
    background_size : int
        Background rows used by the masker.
    max_rows : int
        Most rows the call would accept.
    """

    evaluations_per_row: int
    n_permutations: int
    background_size: int
    max_rows: int


@dataclass(frozen=True, slots=True, eq=False)
class Explanation:
    """SHAP values of a block of rows, with the standard error of each.

    Attributes
    ----------
    features : tuple of str
        Explained feature (column) names, in the column order of ``values``.
    values : ndarray of float64, shape (n_rows, n_features)
        SHAP value of each feature for each row, in the ``output`` space.
    base_values : ndarray of float64, shape (n_rows,)
        Mean model output over the background (the same for every row).
    model_output : ndarray of float64, shape (n_rows,)
        Model output for each row; equals ``base_values + values.sum(axis=1)``.
    feature_values : ndarray of object, shape (n_rows, n_features)
        Raw feature values of the explained rows (for display).
    output : {"probability", "logit", "value", "margin"}
        Space in which the model output was explained (``"margin"``: a multiclass tree
        ensemble's raw class score, see :mod:`modelgate.reports.exact_explanation`).
    algorithm : {"exact", "permutation", "tree_interventional", "linear_interventional"}
        Algorithm actually used: exact values (all coalitions, or read from the trees or
        the linear model), or an estimate.
    budget : ExplanationBudget
        Work spent per row.
    standard_errors : ndarray of float64, shape (n_rows, n_features)
        Standard error of each value from the sampling of the estimator: 0 for exact
        values; for permutation estimates the sample standard deviation of the
        antithetic pair means over ``sqrt(n_permutations)``.
    """

    features: tuple[str, ...]
    values: npt.NDArray[np.float64]
    base_values: npt.NDArray[np.float64]
    model_output: npt.NDArray[np.float64]
    feature_values: npt.NDArray[np.object_]
    output: Space
    algorithm: Chosen
    budget: ExplanationBudget
    standard_errors: npt.NDArray[np.float64]


def choose_algorithm(
    n_features: int,
    n_background: int,
    n_rows: int,
    *,
    algorithm: Algorithm = "auto",
    exact_budget: int = EXACT_EVALUATION_BUDGET,
) -> Chosen:
    """The algorithm :func:`explain` runs for a call of this size.

    Parameters
    ----------
    n_features, n_background, n_rows : int
        Features ``M``, background rows (after subsampling) and rows explained.
    algorithm : {"auto", "exact", "permutation"}
        What was asked for.
    exact_budget : int, default ``EXACT_EVALUATION_BUDGET``
        Most model evaluations ``2**M * n_background * n_rows`` spent on exact values
        above ``EXACT_ALWAYS_FEATURES`` features.

    Returns
    -------
    {"exact", "permutation"}

    Raises
    ------
    ValueError
        If ``algorithm`` is not one of the three names; if ``"exact"`` is asked for beyond
        ``EXACT_MAX_FEATURES`` features, or above ``EXACT_ALWAYS_FEATURES`` features beyond
        ``exact_budget``.

    Examples
    --------
    >>> choose_algorithm(10, 1000, 50), choose_algorithm(14, 40, 40), choose_algorithm(14, 100, 50)
    ('exact', 'exact', 'permutation')
    """
    _check_algorithm(algorithm)
    evaluations = 2**n_features * n_background * n_rows
    fits = n_features <= EXACT_ALWAYS_FEATURES or (
        n_features <= EXACT_MAX_FEATURES and evaluations <= exact_budget)
    if algorithm == "permutation":
        return "permutation"
    if algorithm == "exact" and not fits:
        raise ValueError(
            f"algorithm='exact' with {n_features} features needs {evaluations} model evaluations, "
            f"more than exact_budget={exact_budget!r} (or more than {EXACT_MAX_FEATURES} features); "
            "use algorithm='auto' or 'permutation', or fewer rows or background rows")
    return "exact" if fits else "permutation"


def _check_algorithm(algorithm: object) -> None:
    if algorithm not in get_args(Algorithm):
        raise ValueError(f"algorithm must be one of {get_args(Algorithm)!r}; got {algorithm!r}")


def explain(
    predict: Predict,
    rows: pd.DataFrame,
    background: pd.DataFrame,
    *,
    features: Sequence[str],
    algorithm: Algorithm = "auto",
    n_permutations: int = DEFAULT_N_PERMUTATIONS,
    seed: int = 0,
    background_size: int = DEFAULT_BACKGROUND_SIZE,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_batch_rows: int = DEFAULT_MAX_BATCH_ROWS,
    output: Output = "probability",
    exact_budget: int = EXACT_EVALUATION_BUDGET,
) -> Explanation:
    """Explain ``predict`` on ``rows`` with SHAP values against ``background``.

    Parameters
    ----------
    predict : callable
        ``predict(frame)`` returns the probability of the positive class, one float per
        row of ``frame``; ``frame`` holds the columns ``features``: numeric columns as a
        numeric dtype, others as a pandas ``category`` whose categories are the distinct
        values of ``rows`` and ``background`` (or as ``object`` when those values cannot
        all be categories unchanged: missing values, unhashable values, or values that are
        equal but not identical, like ``1`` and ``1.0``).
    rows : DataFrame
        Rows to explain (at most ``max_rows``); must hold every column in ``features``.
    background : DataFrame
        Background sample for the masker; must hold every column in ``features``.
    features : sequence of str
        The model's input columns, all explained; ``predict`` receives exactly these
        columns, in this order (other columns of ``rows`` and ``background`` are dropped).
    algorithm : {"auto", "exact", "permutation"}
        See the module docstring and :func:`choose_algorithm`.
    n_permutations : int, default 10
        Antithetic permutation pairs per row (each pair is an ordering and its reverse);
        at least 2 when the permutation estimator runs (its standard error needs them).
    seed : int, default 0
        Seeds the permutations and the background subsample.
    background_size : int, default 100
        A larger ``background`` is subsampled to this many rows, without replacement.
    max_rows : int, default 50
        Most rows accepted.
    max_batch_rows : int, default 100_000
        Most rows passed to one ``predict`` call.
    output : {"probability", "logit", "value"}
        Explain the probability, or its log-odds (averaged in log-odds space), or, for a
        regression model, the raw predicted value (any finite number).
    exact_budget : int, default ``EXACT_EVALUATION_BUDGET`` (``2**25``)
        Most model evaluations (``2**M`` x background rows x rows) spent on exact values
        above 10 features; see :func:`choose_algorithm`.

    Returns
    -------
    Explanation

    Raises
    ------
    ValueError
        For a missing feature column, empty ``rows`` or ``background``, too many rows, a
        bad option, or a ``predict`` result of the wrong shape or outside ``[0, 1]``.
    AdditivityError
        If ``base_values + values.sum(axis=1)`` misses ``model_output`` by more than 1e-6.

    References
    ----------
    .. [1] Lundberg, S. M. and Lee, S.-I. (2017). A Unified Approach to Interpreting
       Model Predictions. NeurIPS 30.
    .. [2] shap.ExactExplainer, shap.PermutationExplainer, https://shap.readthedocs.io

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> predict = lambda f: 1 / (1 + np.exp(-(f["a"] + 2 * f["b"]).to_numpy()))
    >>> bg = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    >>> ex = explain(predict, bg.iloc[[1]], bg, features=["a", "b"], output="logit")
    >>> ex.algorithm, np.round(ex.values, 6).tolist(), ex.standard_errors.tolist()
    ('exact', [[0.5, 1.0]], [[0.0, 0.0]])
    """
    feats = _validate_features(features, rows, background)
    _validate_options(algorithm, output, n_permutations, background_size, max_rows, max_batch_rows,
                      exact_budget)
    if len(rows) == 0:
        raise ValueError("rows is empty; pass at least one row to explain")
    if len(rows) > max_rows:
        raise ValueError(f"rows has {len(rows)} rows, more than max_rows={max_rows!r}")
    rng = np.random.default_rng(seed)
    bg = _subsample(background, background_size, rng)
    m = len(feats)
    chosen = choose_algorithm(m, len(bg), len(rows), algorithm=algorithm, exact_budget=exact_budget)
    if chosen == "permutation" and n_permutations < 2 and m > 1:
        raise ValueError("n_permutations must be >= 2 for the permutation estimator (its standard "
                         f"error needs two independent pairs); got {n_permutations!r}")
    x_cols, bg_cols = _columns(rows, bg, feats)
    evaluator = MaskedEvaluator(predict, feats, x_cols, bg_cols, output, max_batch_rows)
    est: Estimate
    if chosen == "exact" or m == 1:  # one feature: every ordering is the same, exact is free
        est, evals, n_perm = exact_values(evaluator, len(rows), m), 2**m, 0
        chosen = "exact"
    else:
        est = permutation_values(evaluator, len(rows), m, n_permutations, rng)
        evals, n_perm = permutation_evaluations(m, n_permutations), n_permutations
    _check_additivity(est.values, est.base_values, est.model_output)
    raw = np.empty((len(rows), m), dtype=object)
    for j, col in enumerate(x_cols):
        raw[:, j] = col
    return Explanation(
        feats, _frozen(est.values), _frozen(est.base_values), _frozen(est.model_output),
        _frozen(raw), output, chosen, ExplanationBudget(evals, n_perm, len(bg), max_rows),
        _frozen(est.standard_errors),
    )


def explain_class(
    predict_classes: Callable[[pd.DataFrame], npt.ArrayLike],
    rows: pd.DataFrame,
    background: pd.DataFrame,
    *,
    features: Sequence[str],
    class_index: int | None = None,
    **options: object,
) -> tuple[Explanation, npt.NDArray[np.int64]]:
    """SHAP values of a multiclass model: each row's predicted class, or one given class.

    The probability of class ``k`` is explained with :func:`explain`; rows are grouped by
    the class explained, so each group is one :func:`explain` call, and the results are
    put back in row order (the background, and so the base value, is shared; the base
    value differs per class). The algorithm is chosen once, for all the rows together, so
    every group is computed the same way.

    Parameters
    ----------
    predict_classes : callable
        ``predict_classes(frame)`` returns the ``[N, C]`` class probabilities.
    rows, background, features
        As for :func:`explain`.
    class_index : int, optional
        Explain this class for every row; by default each row's most probable class.
    **options
        Passed on to :func:`explain` (``seed``, ``algorithm``, ``output``...).

    Returns
    -------
    (Explanation, ndarray of int64)
        The explanation, and the class explained for each row.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> def proba(f):
    ...     z = np.exp(np.column_stack([f["a"], f["b"], 0 * f["a"]]))
    ...     return z / z.sum(axis=1, keepdims=True)
    >>> bg = pd.DataFrame({"a": [0.0, 1.0, 0.0], "b": [0.0, 0.0, 2.0]})
    >>> ex, explained = explain_class(proba, bg.iloc[[1, 2]], bg, features=["a", "b"])
    >>> explained.tolist(), bool(np.allclose(ex.base_values + ex.values.sum(axis=1), ex.model_output))
    ([0, 1], True)
    """
    all_proba = np.asarray(predict_classes(rows[list(features)]), dtype=np.float64)
    if all_proba.ndim != 2 or all_proba.shape[0] != len(rows):
        raise ValueError(f"predict_classes must return shape ({len(rows)}, C); got {all_proba.shape!r}")
    if class_index is not None and not 0 <= class_index < all_proba.shape[1]:
        raise ValueError(f"class_index must be in 0..{all_proba.shape[1] - 1}; got {class_index!r}")
    explained = (np.full(len(rows), class_index, dtype=np.int64) if class_index is not None
                 else all_proba.argmax(axis=1).astype(np.int64))
    n_background = min(len(background), int(options.get("background_size",  # type: ignore[call-overload]
                                                         DEFAULT_BACKGROUND_SIZE)))
    options["algorithm"] = choose_algorithm(
        len(features), n_background, len(rows),
        algorithm=options.get("algorithm", "auto"),  # type: ignore[arg-type]
        exact_budget=options.get("exact_budget", EXACT_EVALUATION_BUDGET))  # type: ignore[arg-type]
    parts: dict[int, Explanation] = {}
    for k in np.unique(explained):
        def predict_k(frame: pd.DataFrame, k: int = int(k)) -> npt.NDArray[np.float64]:
            return np.asarray(predict_classes(frame), dtype=np.float64)[:, k]

        parts[int(k)] = explain(predict_k, rows.iloc[np.flatnonzero(explained == k)], background,
                                features=features, **options)  # type: ignore[arg-type]
    first = next(iter(parts.values()))
    fields = {name: np.empty((len(rows), *getattr(first, name).shape[1:]),
                             dtype=getattr(first, name).dtype)
              for name in ("values", "base_values", "model_output", "feature_values", "standard_errors")}
    for k, part in parts.items():
        where = np.flatnonzero(explained == k)
        for name, out in fields.items():
            out[where] = getattr(part, name)
    merged = Explanation(first.features, _frozen(fields["values"]), _frozen(fields["base_values"]),
                         _frozen(fields["model_output"]), _frozen(fields["feature_values"]),
                         first.output, first.algorithm, first.budget,
                         _frozen(fields["standard_errors"]))
    return merged, explained


def global_importance(explanation: Explanation) -> tuple[tuple[str, float], ...]:
    """Mean absolute SHAP value per feature, largest first.

    Parameters
    ----------
    explanation : Explanation

    Returns
    -------
    tuple of (feature, mean_abs_shap)
        Ordered by decreasing importance; ties keep the feature order.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> predict = lambda f: 1 / (1 + np.exp(-(f["a"] + 2 * f["b"]).to_numpy()))
    >>> bg = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    >>> ex = explain(predict, bg, bg, features=["a", "b"], output="logit")
    >>> [(f, round(v, 6)) for f, v in global_importance(ex)]
    [('b', 1.0), ('a', 0.5)]
    """
    mean_abs = np.abs(explanation.values).mean(axis=0)
    order = np.argsort(-mean_abs, kind="stable")
    return tuple((explanation.features[i], float(mean_abs[i])) for i in order)


def importance_standard_errors(explanation: Explanation) -> dict[str, float]:
    """Standard error of each feature's mean |SHAP| that comes from the estimator.

    Each row's values are estimated from its own orderings, independently of the other
    rows, so to first order (delta method; ``|v|`` has slope ``sign(v)``) the error of the
    mean of ``n`` rows is ``sqrt(sum of squared standard errors) / n``. It is 0 for exact
    values. It does not cover the choice of rows: another sample of rows gives another mean.

    Parameters
    ----------
    explanation : Explanation

    Returns
    -------
    dict of str to float
        Feature name to standard error, in feature order.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> predict = lambda f: 1 / (1 + np.exp(-(f["a"] + 2 * f["b"]).to_numpy()))
    >>> bg = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    >>> importance_standard_errors(explain(predict, bg, bg, features=["a", "b"]))
    {'a': 0.0, 'b': 0.0}
    """
    se = explanation.standard_errors
    per_feature = np.sqrt(np.square(se).sum(axis=0)) / se.shape[0]
    return {f: float(v) for f, v in zip(explanation.features, per_feature, strict=True)}


# --------------------------------------------------------------------------- internals


def _check_additivity(
    values: npt.NDArray[np.float64],
    base: npt.NDArray[np.float64],
    full: npt.NDArray[np.float64],
    tolerance: float = ADDITIVITY_TOLERANCE,
) -> None:
    """Raise :class:`AdditivityError` unless ``base + values.sum(1)`` matches ``full``."""
    gap = np.abs(base + values.sum(axis=1) - full)
    gap = np.where(np.isnan(gap), np.inf, gap)
    worst = int(np.argmax(gap))
    if float(gap[worst]) > tolerance:
        raise AdditivityError(
            f"SHAP values are not additive: row {worst} has base + sum(values) - model_output "
            f"= {float(gap[worst])!r}, above the tolerance {tolerance!r}"
        )


def _validate_features(
    features: Sequence[str], rows: pd.DataFrame, background: pd.DataFrame
) -> tuple[str, ...]:
    feats = (features,) if isinstance(features, str) else tuple(features)
    if not feats:
        raise ValueError("features is empty; name at least one column to explain")
    dupes = sorted({f for f in feats if feats.count(f) > 1})
    if dupes:
        raise ValueError(f"features must be unique; repeated: {dupes!r}")
    for name, frame in (("rows", rows), ("background", background)):
        missing = [f for f in feats if f not in frame.columns]
        if missing:
            raise ValueError(f"{name} is missing feature columns {missing!r}")
    if len(background) == 0:
        raise ValueError("background is empty; pass at least one background row")
    return feats


def _validate_options(
    algorithm: str,
    output: str,
    n_permutations: int,
    background_size: int,
    max_rows: int,
    max_batch_rows: int,
    exact_budget: int,
) -> None:
    _check_algorithm(algorithm)
    if output not in get_args(Output):
        raise ValueError(f"output must be one of {get_args(Output)!r}; got {output!r}")
    for name, value in (
        ("n_permutations", n_permutations),
        ("background_size", background_size),
        ("max_rows", max_rows),
        ("max_batch_rows", max_batch_rows),
        ("exact_budget", exact_budget),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}")


def _subsample(background: pd.DataFrame, size: int, rng: np.random.Generator) -> pd.DataFrame:
    if len(background) <= size:
        return background
    return background.iloc[np.sort(rng.choice(len(background), size=size, replace=False))]


def _columns(
    rows: pd.DataFrame, background: pd.DataFrame, features: tuple[str, ...]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-feature numpy columns: numeric as a shared numeric dtype, anything else object."""
    x_cols, bg_cols = [], []
    for f in features:
        x, bg = rows[f].to_numpy(), background[f].to_numpy()
        if x.dtype.kind in "biuf" and bg.dtype.kind in "biuf":
            dtype = np.result_type(x.dtype, bg.dtype)
        else:
            dtype = np.dtype(object)
        x_cols.append(x.astype(dtype, copy=False))
        bg_cols.append(bg.astype(dtype, copy=False))
    return x_cols, bg_cols


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a
