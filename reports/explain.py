"""Model-agnostic SHAP values for raw-column models, batched over whole blocks of rows.

The models explained here take RAW feature columns (preprocessing lives inside the ONNX
graph), so every column, categorical ones included, is explained as one whole feature.
The model is seen only through ``predict(frame) -> probability of the positive class``.

Estimators
----------
``"permutation"``
    The estimator of ``shap.PermutationExplainer``: for each sampled feature ordering and
    its reverse (antithetic pair), features are switched on one at a time and each
    feature is credited with the change in the masked model output. ``shap`` calls the
    model once per explained row and spends most of its time in Python bookkeeping;
    this module is hand-written so that ALL masked inputs for a block of rows
    (rows x coalitions x background rows) go to the model in one ``predict`` call per
    chunk of at most ``max_batch_rows`` rows. Coalitions repeated across orderings of
    the same row are evaluated once.
``"exact"``
    Exact Shapley values over all ``2**M`` coalitions (``shap.ExactExplainer``).
``"kernel"``
    The estimator of ``shap.KernelExplainer``: coalitions chosen by its scheme (whole subset
    sizes, smallest and largest first, enumerated while the budget allows, the rest sampled
    from the Shapley kernel in complementary pairs), then the weighted least-squares fit with
    ``sum(values) == model_output - base_value`` imposed. The budget is
    ``2 * n_permutations * (M - 1)`` coalitions, the permutation estimator's; at that budget its
    error is about half the permutation estimator's (the regression uses every coalition for
    every feature). The coalitions are drawn once and shared by the rows of the call.
``"auto"``
    ``"exact"`` when it needs no more coalitions than the permutation budget; else
    ``"kernel"`` when the budget covers at least a quarter of the ``2**M - 2`` proper
    coalitions (``M <= 9`` features at the default 10 pairs), where it was 2-8x closer to
    exact values than the permutation estimator at the same cost (bench/RESULTS.md, SHAP);
    else ``"permutation"``, which did as well or better at 10 and 12 features.

Masker: a feature that is "absent" from a coalition takes its value from each row of a
background sample in turn, and the model output is averaged over the background rows
(``shap.maskers.Independent``). When many masked inputs are identical (columns with few
distinct values: categories, counts, flags; repeated rows), each distinct input is scored
once and counted with its multiplicity, which gives the same values with fewer model rows;
whether that pays is decided from a sample of the inputs (it does not change the values).
Inputs are identical when every float column has the same bits and every other column
compares equal. With ``output="logit"`` each model output is turned into log-odds BEFORE
averaging, so a logistic-regression model has the closed form
``SHAP_i = w_i * (x_i - mean_background(x_i))``; this differs from ``shap``'s
``link=shap.links.logit``, which takes the logit of the averaged probability.

The base value is the mean output over the background and the coalition of all features
is the model output on the row itself; both endpoints are shared by every ordering, so
``base_value + sum(values) == model_output`` holds by construction and is checked.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

Algorithm = Literal["permutation", "exact", "kernel", "auto"]
Output = Literal["probability", "logit", "value"]
Reason = Literal["highest_score", "lowest_score", "false_positive", "false_negative", "random",
                 "largest_error", "smallest_error"]
Predict = Callable[[pd.DataFrame], npt.ArrayLike]

#: Background rows used by the masker; a larger background is subsampled (seeded).
DEFAULT_BACKGROUND_SIZE = 100
#: Antithetic permutation pairs per explained row (as ``shap``'s default of 10).
DEFAULT_N_PERMUTATIONS = 10
#: Most rows one call of :func:`explain` accepts.
DEFAULT_MAX_ROWS = 50
#: Most model input rows sent to ``predict`` in one call.
DEFAULT_MAX_BATCH_ROWS = 100_000
#: Largest feature count accepted by the exact algorithm (``2**12`` coalitions per row).
EXACT_MAX_FEATURES = 12
#: Largest allowed gap between ``base_value + sum(values)`` and the model output.
ADDITIVITY_TOLERANCE = 1e-6

__all__ = [
    "ADDITIVITY_TOLERANCE",
    "AdditivityError",
    "Explanation",
    "ExplanationBudget",
    "RowSelection",
    "explain",
    "global_importance",
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
        inputs are scored once). For the
        permutation algorithm this is the upper bound ``2 * n_permutations * (M - 1) + 2``
        (coalitions repeated across orderings are evaluated once).
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
    """SHAP values of a block of rows.

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
    output : {"probability", "logit", "value"}
        Space in which the model output was explained.
    algorithm : {"permutation", "exact", "kernel"}
        Algorithm actually used.
    budget : ExplanationBudget
        Work spent per row.
    """

    features: tuple[str, ...]
    values: npt.NDArray[np.float64]
    base_values: npt.NDArray[np.float64]
    model_output: npt.NDArray[np.float64]
    feature_values: npt.NDArray[np.object_]
    output: Output
    algorithm: Literal["permutation", "exact", "kernel"]
    budget: ExplanationBudget


@dataclass(frozen=True, slots=True, eq=False)
class RowSelection:
    """Rows chosen for explanation and why.

    Attributes
    ----------
    indices : ndarray of int64
        Positions of the chosen rows (use with ``frame.iloc``), in order of choice.
    reasons : tuple of tuple of str
        For each chosen row, every reason it was chosen for (``"highest_score"``,
        ``"lowest_score"``, ``"false_positive"``, ``"false_negative"``, ``"random"``).
    """

    indices: npt.NDArray[np.int64]
    reasons: tuple[tuple[Reason, ...], ...]


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
    algorithm : {"auto", "permutation", "exact", "kernel"}
        See the module docstring. ``"auto"`` picks ``"exact"`` when ``2**M - 2`` is at most
        ``B = 2 * n_permutations * (M - 1)``, the permutation budget, ``"kernel"`` when
        ``4 * B >= 2**M - 2``, else ``"permutation"``.
    n_permutations : int, default 10
        Antithetic permutation pairs per row (each pair is an ordering and its reverse).
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
    .. [2] shap.PermutationExplainer, https://shap.readthedocs.io

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> predict = lambda f: 1 / (1 + np.exp(-(f["a"] + 2 * f["b"]).to_numpy()))
    >>> bg = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    >>> ex = explain(predict, bg.iloc[[1]], bg, features=["a", "b"], output="logit")
    >>> ex.algorithm, np.round(ex.values, 6).tolist()
    ('exact', [[0.5, 1.0]])
    """
    feats = _validate_features(features, rows, background)
    _validate_options(algorithm, output, n_permutations, background_size, max_rows, max_batch_rows)
    if len(rows) == 0:
        raise ValueError("rows is empty; pass at least one row to explain")
    if len(rows) > max_rows:
        raise ValueError(f"rows has {len(rows)} rows, more than max_rows={max_rows!r}")
    rng = np.random.default_rng(seed)
    bg = _subsample(background, background_size, rng)
    x_cols, bg_cols = _columns(rows, bg, feats)
    evaluator = _Evaluator(predict, feats, x_cols, bg_cols, output, max_batch_rows)
    m = len(feats)
    chosen = _choose_algorithm(algorithm, m, n_permutations)
    if chosen == "exact":
        values, base, full = _exact_values(evaluator, len(rows), m)
        evals, n_perm = 2**m, 0
    elif chosen == "kernel":
        n_coalitions = min(2 * n_permutations * max(m - 1, 0), 2**m - 2)
        values, base, full = _kernel_values(evaluator, len(rows), m, n_coalitions, rng)
        evals, n_perm = n_coalitions + 2, 0
    else:
        values, base, full = _permutation_values(evaluator, len(rows), m, n_permutations, rng)
        evals, n_perm = 2 * n_permutations * max(m - 1, 0) + 2, n_permutations
    _check_additivity(values, base, full)
    budget = ExplanationBudget(evals, n_perm, len(bg), max_rows)
    raw = np.empty((len(rows), m), dtype=object)
    for j, col in enumerate(x_cols):
        raw[:, j] = col
    return Explanation(
        feats, _frozen(values), _frozen(base), _frozen(full), _frozen(raw), output, chosen, budget
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
    value differs per class).

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
    parts: dict[int, Explanation] = {}
    for k in np.unique(explained):
        def predict_k(frame: pd.DataFrame, k: int = int(k)) -> npt.NDArray[np.float64]:
            return np.asarray(predict_classes(frame), dtype=np.float64)[:, k]

        parts[int(k)] = explain(predict_k, rows.iloc[np.flatnonzero(explained == k)], background,
                                features=features, **options)  # type: ignore[arg-type]
    first = next(iter(parts.values()))
    fields = {name: np.empty((len(rows), *getattr(first, name).shape[1:]),
                             dtype=getattr(first, name).dtype)
              for name in ("values", "base_values", "model_output", "feature_values")}
    for k, part in parts.items():
        where = np.flatnonzero(explained == k)
        for name, out in fields.items():
            out[where] = getattr(part, name)
    merged = Explanation(first.features, _frozen(fields["values"]), _frozen(fields["base_values"]),
                         _frozen(fields["model_output"]), _frozen(fields["feature_values"]),
                         first.output, first.algorithm, first.budget)
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


def select_rows(
    scores: npt.ArrayLike,
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    *,
    n_each: int = 3,
    n_random: int = 3,
    seed: int = 0,
) -> RowSelection:
    """Choose rows worth explaining and say why each was chosen.

    Picks the ``n_each`` highest and lowest scores, the ``n_each`` most confident false
    positives (highest scores) and false negatives (lowest scores), then ``n_random``
    further rows drawn at random (seeded) from those not yet chosen. Ties go to the
    earlier row. A row chosen for several reasons appears once with all its reasons.

    Parameters
    ----------
    scores : array-like of float, shape (n,)
        Model scores (probability of the positive class).
    y_true, y_pred : array-like of {0, 1}, shape (n,)
        True and predicted labels.
    n_each : int, default 3
        Rows per deterministic reason.
    n_random : int, default 3
        Random rows added.
    seed : int, default 0
        Seeds the random rows.

    Returns
    -------
    RowSelection

    Raises
    ------
    ValueError
        For arrays of different lengths, non-binary labels, non-finite scores or
        negative counts.

    Examples
    --------
    >>> sel = select_rows([0.9, 0.2, 0.6, 0.1], [0, 1, 1, 0], [1, 0, 1, 0], n_each=1, n_random=0)
    >>> sel.indices.tolist(), sel.reasons
    ([0, 3, 1], (('highest_score', 'false_positive'), ('lowest_score',), ('false_negative',)))
    """
    s, t, p = _validate_selection(scores, y_true, y_pred, n_each, n_random)
    by_high = np.argsort(-s, kind="stable")
    by_low = np.argsort(s, kind="stable")
    return _pick(len(s), [
        ("highest_score", by_high),
        ("lowest_score", by_low),
        ("false_positive", by_high[(p[by_high] == 1) & (t[by_high] == 0)]),
        ("false_negative", by_low[(p[by_low] == 0) & (t[by_low] == 1)]),
    ], n_each, n_random, seed)


def select_error_rows(errors: npt.ArrayLike, *, n_each: int = 3, n_random: int = 3,
                      seed: int = 0) -> RowSelection:
    """Choose rows of a multiclass or regression model to explain: the worst and best.

    Picks the ``n_each`` rows with the largest and the smallest ``errors`` (ties to the
    earlier row), then ``n_random`` further rows drawn at random (seeded) from the rest;
    what an error is belongs to the caller (``1 - p(true class)``, ``|prediction - y|``).

    Parameters
    ----------
    errors : array-like of float, shape (n,)
        One finite error per row, larger is worse.
    n_each, n_random, seed
        As for :func:`select_rows`.

    Returns
    -------
    RowSelection

    Raises
    ------
    ValueError
        For non-finite errors or negative counts.

    Examples
    --------
    >>> sel = select_error_rows([0.5, 2.0, 0.1, 1.0], n_each=1, n_random=0)
    >>> sel.indices.tolist(), sel.reasons
    ([1, 2], (('largest_error',), ('smallest_error',)))
    """
    e = np.asarray(errors, dtype=np.float64)
    if e.ndim != 1 or not np.all(np.isfinite(e)):
        raise ValueError(f"errors must be a 1-D array of finite floats; got shape {e.shape!r}")
    _validate_selection(e, np.zeros(e.shape), np.zeros(e.shape), n_each, n_random)
    return _pick(len(e), [("largest_error", np.argsort(-e, kind="stable")),
                          ("smallest_error", np.argsort(e, kind="stable"))], n_each, n_random, seed)


def _pick(n: int, candidates: list[tuple[Reason, npt.NDArray[np.intp]]], n_each: int,
          n_random: int, seed: int) -> RowSelection:
    """The first ``n_each`` rows of each ordering, with their reasons, then ``n_random``
    seeded random rows of the rest."""
    picks: dict[int, list[Reason]] = {}
    for reason, order in candidates:
        for i in order[:n_each]:
            picks.setdefault(int(i), []).append(reason)
    rest = np.setdiff1d(np.arange(n), np.fromiter(picks, dtype=np.int64, count=len(picks)))
    rng = np.random.default_rng(seed)
    for i in rng.choice(rest, size=min(n_random, len(rest)), replace=False):
        picks[int(i)] = ["random"]
    indices = np.fromiter(picks, dtype=np.int64, count=len(picks))
    return RowSelection(_frozen(indices), tuple(tuple(r) for r in picks.values()))


# --------------------------------------------------------------------------- internals


class _Evaluator:
    """Evaluates masked coalitions of explained rows, averaged over the background.

    Every (row, coalition, background row) triple is one masked model input. Identical
    inputs are scored once: each column is coded over the values of the explained rows
    and the background together, a triple's input gets an integer key (mixed radix over
    the column codes) and only the first triple of each key goes to ``predict``. A
    coalition's value is then the plain mean over its background rows, exactly as if
    every triple had been scored.
    """

    def __init__(
        self,
        predict: Predict,
        names: tuple[str, ...],
        x_cols: list[np.ndarray],
        bg_cols: list[np.ndarray],
        output: Output,
        max_batch_rows: int,
    ) -> None:
        self.predict, self.names = predict, names
        self.output, self.max_batch_rows = output, max_batch_rows
        self.n_rows, self.n_bg = len(x_cols[0]), len(bg_cols[0])
        pooled = [np.concatenate([x, bg]) for x, bg in zip(x_cols, bg_cols, strict=True)]
        coded = [_value_codes(col) for col in pooled]
        codes = [c for c, _ in coded]
        self.x_codes = np.column_stack([c[: self.n_rows] for c in codes])
        self.bg_codes = np.column_stack([c[self.n_rows :] for c in codes])
        self.cards = [int(c.max()) + 1 for c in codes]
        # Non-numeric columns go to predict as pandas categoricals over these codes where
        # the values allow it: building a masked column is then integer work and a model
        # scorer can feed codes (modelgate.onnx_codes) instead of strings.
        self.dtypes = [_categorical_dtype(values) for _, values in coded]
        self.pooled = [
            col if d is None else c.astype(_code_dtype(card))
            for c, d, col, card in zip(codes, self.dtypes, pooled, self.cards, strict=True)
        ]
        self.x_cols = [c[: self.n_rows] for c in self.pooled]
        self.bg_cols = [c[self.n_rows :] for c in self.pooled]

    def endpoints(self) -> tuple[float, npt.NDArray[np.float64]]:
        """Mean output over the background, and the output on each explained row."""
        base = self._call(self.bg_cols).mean()
        return float(base), self._call(self.x_cols)

    def coalitions(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64]:
        """Masked output of row ``row_idx[k]`` with features ``masks[k]`` present."""
        # Hand-written instead of shap's explainers: they call the model once per explained
        # row (and spend most of their time in per-row Python); here the masked inputs of a
        # whole block of (row, coalition) pairs go out in as few predict calls as
        # max_batch_rows allows.
        out = np.empty(len(row_idx), dtype=np.float64)
        step = max(1, _DEDUP_TRIPLES // self.n_bg)
        for start in range(0, len(row_idx), step):
            sl = slice(start, start + step)
            if self._worth_deduplicating(row_idx[sl], masks[sl]):
                out[sl] = self._distinct_means(row_idx[sl], masks[sl])
            else:
                out[sl] = self._all_means(row_idx[sl], masks[sl])
        return out

    def _worth_deduplicating(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> bool:
        """Whether the first pairs repeat enough inputs for deduplication to pay off."""
        n = max(len(row_idx) // 8, min(len(row_idx), 64))
        keys = self._input_keys(row_idx[:n], masks[:n])
        return len(pd.unique(keys.ravel())) <= (1.0 - _DEDUP_MIN_SAVING) * keys.size

    def _distinct_means(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64]:
        """Coalition means, scoring each distinct masked input once."""
        inverse, first = _first_occurrences(self._input_keys(row_idx, masks).ravel())
        pair, bg_row = np.divmod(first, self.n_bg)
        scored = self._score(row_idx[pair], masks[pair], bg_row)
        return scored[inverse].reshape(-1, self.n_bg).mean(axis=1)

    def _all_means(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64]:
        """Coalition means, scoring every (pair, background row) input."""
        out = np.empty(len(row_idx), dtype=np.float64)
        step = max(1, self.max_batch_rows // self.n_bg)
        for start in range(0, len(row_idx), step):
            sl = slice(start, start + step)
            cols = [
                _masked_column(masks[sl, j], x[row_idx[sl]], bg)
                for j, (x, bg) in enumerate(zip(self.x_cols, self.bg_cols, strict=True))
            ]
            out[sl] = self._call(cols).reshape(-1, self.n_bg).mean(axis=1)
        return out

    def _input_keys(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        """One int64 per (pair, background row), pair-major; equal iff the inputs are equal."""
        kinds, kind_of = _unique_rows(masks)
        keys: npt.NDArray[np.int64] | None = None
        for group in _radix_groups(self.cards):
            weights = np.cumprod([1] + [self.cards[j] for j in group[:-1]], dtype=np.int64)
            present = masks[:, group] * (self.x_codes[row_idx][:, group] * weights)
            absent = (~kinds[:, group] * weights) @ self.bg_codes[:, group].T
            part = present.sum(axis=1)[:, None] + absent[kind_of.ravel()]
            keys = part if keys is None else _pair_key(keys, part)
        assert keys is not None
        return keys.ravel()

    def _score(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_], bg_row: np.ndarray
    ) -> npt.NDArray[np.float64]:
        """Output on the masked inputs (row ``row_idx[i]``, background row ``bg_row[i]``)."""
        out = np.empty(len(row_idx), dtype=np.float64)
        # source[j, i]: position in pooled[j] (explained rows, then background) of input i
        source = np.where(masks.T, row_idx, self.n_rows + bg_row)
        for start in range(0, len(row_idx), self.max_batch_rows):
            sl = slice(start, start + self.max_batch_rows)
            out[sl] = self._call([col.take(source[j, sl]) for j, col in enumerate(self.pooled)])
        return out

    def _call(self, cols: list[np.ndarray]) -> npt.NDArray[np.float64]:
        series = {
            name: _series(col, dtype) for name, col, dtype in zip(self.names, cols, self.dtypes, strict=True)
        }
        frame = pd.DataFrame(series, copy=False)
        prob = np.asarray(self.predict(frame), dtype=np.float64)
        if prob.shape != (len(frame),):
            raise ValueError(f"predict must return shape ({len(frame)},); got {prob.shape!r}")
        if self.output == "value":  # a regression's raw output: any finite number
            if not np.isfinite(prob).all():
                raise ValueError("predict must return finite values; got NaN or infinity")
            return prob
        if not np.all((prob >= 0.0) & (prob <= 1.0)):
            bad = float(prob[~((prob >= 0.0) & (prob <= 1.0))][0])
            raise ValueError(f"predict must return probabilities in [0, 1]; got {bad!r}")
        if self.output == "probability":
            return prob
        if np.any((prob == 0.0) | (prob == 1.0)):
            raise ValueError(
                "output='logit' needs probabilities strictly inside (0, 1); predict "
                "returned 0 or 1 (saturated model); use output='probability'"
            )
        return np.log(prob) - np.log1p(-prob)


def _series(col: np.ndarray, dtype: pd.CategoricalDtype | None) -> pd.Series:
    """``col`` as a Series: codes of ``dtype`` as a categorical, else values as they are."""
    if dtype is not None:
        return pd.Series(pd.Categorical.from_codes(col, dtype=dtype, validate=False), copy=False)
    # an explicit dtype keeps object columns as object (pandas 3 would infer "str", slowly)
    return pd.Series(col, dtype=col.dtype, copy=False)


def _masked_column(present: npt.NDArray[np.bool_], x: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """Flat ``(pair, background row)`` column: ``x[pair]`` where present, else ``bg``.

    Tiling the background and overwriting the present pairs is about twice as fast as
    ``np.where`` with broadcasting.
    """
    out = np.empty((len(present), len(bg)), dtype=bg.dtype)
    out[...] = bg
    out[present] = x[present][:, None]
    return out.ravel()


#: Most (row, coalition, background row) triples deduplicated together (bounds memory).
_DEDUP_TRIPLES = 2_000_000
#: Smallest share of repeated masked inputs (in a sample) for which deduplicating pays off:
#: hashing every input costs about as much as scoring 20% of them with a small ONNX model.
_DEDUP_MIN_SAVING = 0.3
#: Largest product of column cardinalities combined into one int64 key.
_RADIX_LIMIT = 2**62


def _value_codes(col: np.ndarray) -> tuple[npt.NDArray[np.int64], list[object] | None]:
    """Integer code per value, and for object columns the value of each code.

    Equal codes mean identical model input values. Floats are compared by bit pattern
    (-0.0 and 0.0 differ); other objects by type and equality (1, 1.0 and True differ),
    unhashable ones by identity.
    """
    if col.dtype.kind == "f":
        col = col.view(np.dtype(f"i{col.dtype.itemsize}"))
    elif col.dtype.kind == "O":
        seen: dict[object, int] = {}
        values: list[object] = []
        codes = np.empty(len(col), dtype=np.int64)
        for i, v in enumerate(col):
            code = seen.setdefault(_object_key(v), len(seen))
            if code == len(values):
                values.append(v)
            codes[i] = code
        return codes, values
    codes, _ = pd.factorize(col, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), None


def _code_dtype(cardinality: int) -> type[np.signedinteger]:
    """Smallest signed integer type for codes ``0 .. cardinality - 1`` (as pandas stores them)."""
    for dtype in (np.int8, np.int16, np.int32):
        if cardinality <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _categorical_dtype(values: list[object] | None) -> pd.CategoricalDtype | None:
    """A categorical dtype whose categories are ``values`` (code order), if it is faithful.

    ``values`` are an object column's distinct values from :func:`_value_codes` (None for
    other columns). Faithful: they are hashable, not missing, and stay distinct as pandas
    categories (``1`` and ``1.0``, or ``0.0`` and ``-0.0``, would merge); then
    ``Categorical.from_codes`` gives back exactly the original values.
    """
    if values is None:
        return None
    try:
        categories = pd.Index(values, dtype=object)
        if categories.hasnans or not categories.is_unique:
            return None
        return pd.CategoricalDtype(categories)
    except TypeError:  # unhashable values
        return None


def _object_key(value: object) -> object:
    if isinstance(value, float | complex | np.inexact):
        return type(value), np.asarray(value).tobytes()
    try:
        hash(value)
    except TypeError:
        return id(value)
    return type(value), value


def _radix_groups(cards: list[int]) -> list[list[int]]:
    """Split columns into groups whose code combinations fit in one int64."""
    groups: list[list[int]] = [[]]
    size = 1
    for j, card in enumerate(cards):
        if groups[-1] and size * card >= _RADIX_LIMIT:
            groups.append([])
            size = 1
        groups[-1].append(j)
        size *= card
    return groups


def _pair_key(
    left: npt.NDArray[np.int64], right: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Key of the pair (left, right), elementwise, without overflow."""
    a, _ = pd.factorize(left.ravel())
    b, _ = pd.factorize(right.ravel())
    return (a.astype(np.int64) * (int(b.max()) + 1) + b).reshape(left.shape)


def _unique_rows(a: np.ndarray) -> tuple[np.ndarray, npt.NDArray[np.intp]]:
    """``np.unique(a, axis=0, return_inverse=True)`` for a 2-D array of small integers >= 0.

    Rows are packed into one int64 each (first column most significant, so the order is
    the same) when the column ranges allow; ``np.unique`` on rows is much slower.
    """
    cards = [int(c) + 1 for c in a.max(axis=0, initial=0)]
    if math.prod(cards) >= _RADIX_LIMIT:
        unique, inverse = np.unique(a, axis=0, return_inverse=True)
        return unique, inverse.ravel()
    weights = np.cumprod([1] + cards[:0:-1], dtype=np.int64)[::-1]
    packed = a.astype(np.int64, copy=False) @ weights
    _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
    return a[first], inverse


def _first_occurrences(
    keys: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Code of each key (first-seen order) and the position where each code first occurs."""
    inverse, uniques = pd.factorize(keys)
    first = np.empty(len(uniques), dtype=np.intp)
    first[inverse[::-1]] = np.arange(len(keys) - 1, -1, -1)
    return inverse, first


def _permutation_values(
    ev: _Evaluator, n_rows: int, m: int, n_permutations: int, rng: np.random.Generator
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Antithetic permutation SHAP values; returns (values, base_values, model_output)."""
    base, full = ev.endpoints()
    forward = rng.permuted(np.tile(np.arange(m), (n_rows, n_permutations, 1)), axis=2)
    orders = np.concatenate([forward, forward[:, :, ::-1]], axis=1)  # (rows, 2P, M)
    rank = np.argsort(orders, axis=2)  # rank[r, o, f] = position of feature f
    steps = np.arange(1, m)
    masks = rank[:, :, None, :] < steps[None, None, :, None]  # (rows, 2P, M-1, M)
    row_of = np.broadcast_to(np.arange(n_rows)[:, None, None], masks.shape[:3])
    keyed = np.concatenate([row_of.reshape(-1, 1), masks.reshape(-1, m)], axis=1)
    unique, inverse = _unique_rows(keyed.astype(np.int64))
    v_unique = ev.coalitions(unique[:, 0].astype(np.intp), unique[:, 1:].astype(bool))
    v = np.empty(masks.shape[:3][:2] + (m + 1,), dtype=np.float64)
    v[:, :, 0] = base
    v[:, :, m] = full[:, None]
    v[:, :, 1:m] = v_unique[inverse.ravel()].reshape(masks.shape[:3])
    step_gain = np.diff(v, axis=2)  # gain of the feature added at each position
    values = np.take_along_axis(step_gain, rank, axis=2).mean(axis=1)
    return values, np.full(n_rows, base), full


def _exact_values(
    ev: _Evaluator, n_rows: int, m: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Exact Shapley values over all coalitions; returns (values, base, model_output)."""
    base, full = ev.endpoints()
    codes = np.arange(2**m)
    bits = ((codes[:, None] >> np.arange(m)) & 1).astype(bool)
    inner = codes[1:-1]
    v = np.empty((n_rows, 2**m), dtype=np.float64)
    v[:, 0], v[:, -1] = base, full
    if len(inner):
        row_idx = np.repeat(np.arange(n_rows), len(inner))
        masks = np.tile(bits[inner], (n_rows, 1))
        v[:, 1:-1] = ev.coalitions(row_idx, masks).reshape(n_rows, len(inner))
    size = bits.sum(axis=1)
    weight = np.array(
        [math.factorial(s) * math.factorial(m - s - 1) / math.factorial(m) for s in range(m)]
    )
    values = np.empty((n_rows, m), dtype=np.float64)
    for i in range(m):
        without = codes[~bits[:, i]]
        gains = v[:, without | (1 << i)] - v[:, without]
        values[:, i] = gains @ weight[size[without]]
    return values, np.full(n_rows, base), full


def _kernel_coalitions(
    m: int, budget: int, rng: np.random.Generator
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """Coalitions and regression weights of ``shap.KernelExplainer``'s scheme (its ``explain``)."""
    n_sizes, n_paired = math.ceil((m - 1) / 2), (m - 1) // 2
    size_weight = np.array([(m - 1) / (s * (m - s)) for s in range(1, n_sizes + 1)])
    size_weight[:n_paired] *= 2
    size_weight /= size_weight.sum()
    masks: list[npt.NDArray[np.bool_]] = []
    weights: list[float] = []
    left, remaining, n_full = budget, size_weight.copy(), 0
    for size in range(1, n_sizes + 1):
        n_subsets = math.comb(m, size) * (2 if size <= n_paired else 1)
        if left * remaining[size - 1] / n_subsets < 1.0 - 1e-8:
            break
        n_full, left = n_full + 1, left - n_subsets
        if remaining[size - 1] < 1.0:
            remaining /= 1 - remaining[size - 1]
        w = size_weight[size - 1] / n_subsets
        for inds in itertools.combinations(range(m), size):
            mask = np.zeros(m, dtype=bool)
            mask[list(inds)] = True
            masks += [mask, ~mask] if size <= n_paired else [mask]
            weights += [w, w] if size <= n_paired else [w]
    if n_full < n_sizes and left > 0:
        _sample_coalitions(m, left, size_weight, n_full, n_paired, rng, masks, weights)
    return np.array(masks, dtype=bool).reshape(-1, m), np.array(weights, dtype=np.float64)


def _sample_coalitions(
    m: int, left: int, size_weight: npt.NDArray[np.float64], n_full: int, n_paired: int,
    rng: np.random.Generator, masks: list[npt.NDArray[np.bool_]], weights: list[float],
) -> None:
    """Sampled part of the scheme: paired draws; a repeated draw adds weight instead of a row."""
    p = size_weight.copy()
    p[:n_paired] /= 2  # two coalitions per draw
    p = p[n_full:] / p[n_full:].sum()
    seen: dict[bytes, tuple[int, int | None]] = {}  # mask -> (its index, its complement's)
    sampled: list[float] = []
    for ind in rng.choice(len(p), 4 * left, p=p):
        if left <= 0:
            break
        size = int(ind) + n_full + 1
        mask = np.zeros(m, dtype=bool)
        mask[rng.permutation(m)[:size]] = True
        key = mask.tobytes()
        if key in seen:
            own, other = seen[key]
            sampled[own] += 1.0
            if other is not None:
                sampled[other] += 1.0
            continue
        own, other = len(sampled), None
        masks.append(mask)
        sampled.append(1.0)
        left -= 1
        if left > 0 and size <= n_paired:
            other = len(sampled)
            masks.append(~mask)
            sampled.append(1.0)
            left -= 1
        seen[key] = (own, other)
    total_left = float(size_weight[n_full:].sum())
    weights += [w * total_left / sum(sampled) for w in sampled]


def _kernel_values(
    ev: _Evaluator, n_rows: int, m: int, budget: int, rng: np.random.Generator
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Kernel SHAP values (shared coalitions); returns (values, base_values, model_output)."""
    base, full = ev.endpoints()
    if m == 1:
        return (full - base)[:, None], np.full(n_rows, base), full
    masks, weights = _kernel_coalitions(m, budget, rng)
    k = len(masks)
    v = ev.coalitions(np.repeat(np.arange(n_rows), k), np.tile(masks, (n_rows, 1))).reshape(n_rows, k)
    z = masks.astype(np.float64)
    delta = full - base
    # impose sum(values) = delta by eliminating the last feature, then weighted least squares
    x = z[:, :-1] - z[:, -1:]
    target = (v - base) - np.outer(delta, z[:, -1])  # (rows, K)
    # lstsq, not solve: a small budget can leave the sampled coalitions rank-deficient
    # (shap falls back the same way); additivity holds either way, by the elimination
    root = np.sqrt(weights)[:, None]
    head = np.linalg.lstsq(root * x, root * target.T, rcond=None)[0].T  # (rows, M - 1)
    values = np.column_stack([head, delta - head.sum(axis=1)])
    return values, np.full(n_rows, base), full


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


def _choose_algorithm(
    algorithm: Algorithm, m: int, n_permutations: int
) -> Literal["permutation", "exact", "kernel"]:
    if algorithm == "exact":
        if m > EXACT_MAX_FEATURES:
            raise ValueError(
                f"algorithm='exact' allows at most {EXACT_MAX_FEATURES} features; got {m!r}"
            )
        return "exact"
    if algorithm in ("permutation", "kernel"):
        return algorithm
    budget, proper = 2 * n_permutations * (m - 1), 2**m - 2
    if proper <= budget:
        return "exact"
    # the kernel regression wins while its coalitions cover much of the space (measured)
    return "kernel" if 4 * budget >= proper else "permutation"


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
) -> None:
    if algorithm not in get_args(Algorithm):
        raise ValueError(f"algorithm must be one of {get_args(Algorithm)!r}; got {algorithm!r}")
    if output not in get_args(Output):
        raise ValueError(f"output must be one of {get_args(Output)!r}; got {output!r}")
    for name, value in (
        ("n_permutations", n_permutations),
        ("background_size", background_size),
        ("max_rows", max_rows),
        ("max_batch_rows", max_batch_rows),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1; got {value!r}")


def _validate_selection(
    scores: npt.ArrayLike, y_true: npt.ArrayLike, y_pred: npt.ArrayLike, n_each: int, n_random: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be a 1-D array of finite floats; got shape {s.shape!r}")
    labels = []
    for name, arr in (("y_true", y_true), ("y_pred", y_pred)):
        a = np.asarray(arr)
        if a.shape != s.shape:
            raise ValueError(f"{name} must have shape {s.shape!r} like scores; got {a.shape!r}")
        if not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0 and 1; got {np.unique(a)[:5]!r}")
        labels.append(a.astype(np.int64))
    for name, value in (("n_each", n_each), ("n_random", n_random)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0; got {value!r}")
    return s, labels[0], labels[1]


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
