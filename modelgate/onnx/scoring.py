"""Scoring with ONNX Runtime: session settings, frame validation and streamed parquet scoring.

The graph is fed one input per manifest feature (numeric columns ``[N, 1]`` in the graph
input's own element type, float32, float64 or int64; categorical columns as string
(object) ``[N, 1]``, or as int64 codes where the graph was rewritten to take them,
:mod:`modelgate.onnx.codes`: same function, no per-element string conversion), or, with
the manifest's ``input_tensor``, one ``[N, F]`` tensor of the features in manifest order.
Missing values are refused unless the manifest feature says ``allow_missing`` (the graph
handles them, e.g. a skl2onnx ``SimpleImputer``); then missing numerics are fed as NaN and
missing categoricals as ``""``. Every numeric feed is range-checked for the graph input's
type: infinite values and values beyond float32's range are refused, and so are missing,
fractional or out-of-range values (a float 1e30, a uint64 >= 2**63) for an integer input,
which a cast would wrap silently. The model's output is checked the same way for every
caller (``score`` and ``evaluate`` alike): NaN or infinite outputs, and class probabilities
outside [0, 1], are refused. Errors name the column (or output), the count of bad rows and
the first one's id (the manifest's ``id_column`` when the data has it, else its 0-based
position), never other values of the row.

The output read is the manifest's: class probabilities ``[N, C]`` (a ``ZipMap`` is
rewritten away in memory by :func:`modelgate.onnx.layouts.unzip_probabilities`) or a
regression's values ``[N]``/``[N, 1]``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import os
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

import numpy as np
import onnxruntime as ort
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.onnx import devices
from modelgate.onnx.artifact import Feature, LoadedModel, Manifest
from modelgate.onnx.codes import code_string_inputs
from modelgate.onnx.layouts import unzip_probabilities

__all__ = [
    "ModelScorer",
    "ScoringError",
    "ScoringRun",
    "SessionSettings",
    "open_session",
    "score_parquet",
    "settings_from_os_environ",
]

logger = logging.getLogger("modelgate.onnx.scoring")

Provider = Literal["auto", "cpu", "cuda"]
GraphOpt = Literal["disable", "basic", "extended", "all"]
OrtLogLevel = Literal["verbose", "info", "warning", "error", "fatal"]
CPU = devices.CPU
CUDA = devices.CUDA
#: ONNX Runtime's severity numbers (``SessionOptions.log_severity_level``).
_ORT_SEVERITY = {"verbose": 0, "info": 1, "warning": 2, "error": 3, "fatal": 4}
#: Rows per parquet batch when none is given: larger on CUDA, where a ``run`` call's fixed
#: cost (launches, copies) is spread over more rows.
DEFAULT_BATCH_ROWS = {CPU: 65536, CUDA: 262144}
_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
_ENV_PREFIX = "MODELGATE_ORT_"
PROGRESS_EVERY_S = 5.0
_CHUNK = 1 << 20


class ScoringError(ValueError):
    """Input data, settings or runtime cannot be used to score."""


class RowsRefused(ScoringError):
    """Rows a check refused, with the position of the first one in the frame checked.

    Whoever knows the rows' ids names that row with :meth:`at`.
    """

    def __init__(self, message: str, first: int) -> None:
        super().__init__(message)
        self.message, self.first = message, first

    def at(self, index: pd.Index) -> ScoringError:
        """The same error naming the first refused row by ``index`` (its name: the id column;
        unnamed: positions, shown as ``row``).

        >>> str(RowsRefused("column 'x': 2 rows overflow INT64", 1).at(pd.Index([7, 9], name="id")))
        "column 'x': 2 rows overflow INT64 (first: id 9)"
        >>> str(RowsRefused("column 'x': 1 row is NaN", 0).at(pd.RangeIndex(5, 8)))
        "column 'x': 1 row is NaN (first: row 5)"
        """
        return ScoringError(f"{self.message} (first: {index.name or 'row'} "
                            f"{_shown_id(index[self.first])})")


def _shown_id(value: Any) -> str:
    """A row id as one short line: numbers as they are, strings quoted, at most 40 characters."""
    from modelgate.logsafe import escape_for_log

    value = value.item() if isinstance(value, np.generic) else value
    text = repr(value) if isinstance(value, str) else str(value)
    return escape_for_log(text if len(text) <= 40 else f"{text[:37]}...")


def _refused(message: str, bad: np.ndarray) -> RowsRefused:
    """:class:`RowsRefused` for the rows where ``bad`` is true (at least one)."""
    count = int(bad.sum())
    return RowsRefused(message.format(rows=f"{count} rows"),
                       int(np.argmax(bad)))


def _positive_or_none(value: int | None, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ScoringError(f"{name}: expected a positive integer or None, got {value!r}")


def _env_int(environ: Mapping[str, str], key: str) -> int | None:
    raw = environ.get(key, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ScoringError(f"{key}: expected a positive integer, got {raw!r}") from None
    if value < 1:
        raise ScoringError(f"{key}: expected a positive integer, got {raw!r}")
    return value


def _env_bool(environ: Mapping[str, str], key: str) -> bool:
    raw = environ.get(key, "").strip().lower()
    if raw in ("", "0", "false", "no"):
        return False
    if raw in ("1", "true", "yes"):
        return True
    raise ScoringError(f"{key}: expected true or false, got {raw!r}")


def _env_choice(environ: Mapping[str, str], key: str, allowed: tuple[str, ...],
                default: str) -> str:
    raw = environ.get(key, "").strip().lower() or default
    if raw not in allowed:
        raise ScoringError(f"{key}: expected one of {list(allowed)}, got {raw!r}")
    return raw


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """How to open an ONNX Runtime session.

    Parameters
    ----------
    provider
        ``"auto"`` uses CUDA when ONNX Runtime lists it and otherwise the CPU;
        ``"cpu"`` forces the CPU; ``"cuda"`` fails unless CUDA really loads.
    graph_optimization_level
        ONNX Runtime graph optimisation level.
    intra_op_threads
        Threads per operator (None: one when ``parallel_runs`` is above one, else ONNX
        Runtime's default, one per core).
    gpu_mem_limit_mb
        CUDA arena limit in MiB (None: no limit). CUDA runs are split into slices sized
        from it (or from 2 GiB without one); a slice that still runs out of device memory
        is halved and retried.
    allow_tf32
        Let CUDA round matrix-product inputs to TF32 (faster on Ampere and later; scores
        then differ from the CPU's by about 1e-3). Off by default: ``use_tf32=0``.
        Recorded on every run.
    ort_log_level
        Least severity ONNX Runtime itself prints (``"error"``; ``modelgate --debug``
        makes it ``"warning"``).
    parallel_runs
        Concurrent ``run`` calls that one prediction's rows are split over, in slices of
        at most 4096 rows (None: one per usable core on the CPU when ``intra_op_threads``
        is not set, else 1). On small tabular models ONNX Runtime's intra-op threads
        mostly spin; one single-threaded run per core scored about 1.2-1.9x more rows/s
        here (bench/RESULTS.md).

    Examples
    --------
    >>> s = SessionSettings.from_env({"MODELGATE_ORT_PROVIDER": "cpu",
    ...                               "MODELGATE_ORT_INTRA_OP_THREADS": "2"})
    >>> s.provider, s.graph_optimization_level, s.intra_op_threads, s.gpu_mem_limit_mb
    ('cpu', 'all', 2, None)
    >>> s.allow_tf32, s.ort_log_level
    (False, 'error')
    >>> s.resolved_threads(cuda=False, cores=4)  # (intra-op threads, parallel runs)
    (2, 1)
    >>> SessionSettings().resolved_threads(cuda=False, cores=4)
    (1, 4)
    """

    provider: Provider = "auto"
    graph_optimization_level: GraphOpt = "all"
    intra_op_threads: int | None = None
    gpu_mem_limit_mb: int | None = None
    parallel_runs: int | None = None
    allow_tf32: bool = False
    ort_log_level: OrtLogLevel = "error"

    def __post_init__(self) -> None:
        if self.provider not in get_args(Provider):
            raise ScoringError(
                f"provider: expected one of {list(get_args(Provider))}, got {self.provider!r}")
        if self.graph_optimization_level not in _OPT_LEVELS:
            raise ScoringError(
                f"graph_optimization_level: expected one of {list(_OPT_LEVELS)}, "
                f"got {self.graph_optimization_level!r}")
        _positive_or_none(self.intra_op_threads, "intra_op_threads")
        _positive_or_none(self.gpu_mem_limit_mb, "gpu_mem_limit_mb")
        _positive_or_none(self.parallel_runs, "parallel_runs")
        if not isinstance(self.allow_tf32, bool):
            raise ScoringError(f"allow_tf32: expected True or False, got {self.allow_tf32!r}")
        if self.ort_log_level not in _ORT_SEVERITY:
            raise ScoringError(f"ort_log_level: expected one of {list(_ORT_SEVERITY)}, "
                               f"got {self.ort_log_level!r}")

    def resolved_threads(self, *, cuda: bool, cores: int) -> tuple[int | None, int]:
        """``(intra_op_threads, parallel_runs)`` to use; None leaves ONNX Runtime's default.

        Parameters
        ----------
        cuda
            Whether CUDA is among the requested providers (then one run at a time).
        cores
            Usable CPU cores.
        """
        if self.parallel_runs is not None:
            runs = self.parallel_runs
        elif cuda or self.intra_op_threads is not None:
            runs = 1
        else:
            runs = max(1, cores)
        intra = self.intra_op_threads if self.intra_op_threads is not None or runs == 1 else 1
        return intra, runs

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> SessionSettings:
        """Read ``MODELGATE_ORT_PROVIDER``, ``MODELGATE_ORT_GRAPH_OPT``,
        ``MODELGATE_ORT_INTRA_OP_THREADS``, ``MODELGATE_ORT_GPU_MEM_LIMIT_MB``,
        ``MODELGATE_ORT_PARALLEL_RUNS``, ``MODELGATE_ORT_ALLOW_TF32`` (true/false) and
        ``MODELGATE_ORT_LOG_LEVEL`` from ``environ``; unset or empty variables keep the
        defaults."""
        provider = _env_choice(environ, f"{_ENV_PREFIX}PROVIDER", get_args(Provider), "auto")
        level = _env_choice(environ, f"{_ENV_PREFIX}GRAPH_OPT", tuple(_OPT_LEVELS), "all")
        log_level = _env_choice(environ, f"{_ENV_PREFIX}LOG_LEVEL", tuple(_ORT_SEVERITY), "error")
        return cls(provider=cast(Provider, provider),
                   graph_optimization_level=cast(GraphOpt, level),
                   intra_op_threads=_env_int(environ, f"{_ENV_PREFIX}INTRA_OP_THREADS"),
                   gpu_mem_limit_mb=_env_int(environ, f"{_ENV_PREFIX}GPU_MEM_LIMIT_MB"),
                   parallel_runs=_env_int(environ, f"{_ENV_PREFIX}PARALLEL_RUNS"),
                   allow_tf32=_env_bool(environ, f"{_ENV_PREFIX}ALLOW_TF32"),
                   ort_log_level=cast(OrtLogLevel, log_level))


def settings_from_os_environ() -> SessionSettings:
    """:meth:`SessionSettings.from_env` over ``os.environ`` (the only env read here)."""
    return SessionSettings.from_env(os.environ)


#: How to fix a refused missing value (the manifest's ``allow_missing``, and when it is right).
_ALLOW_MISSING_HINT = ("(if the graph handles missing values itself, e.g. with an imputer, set "
                       "\"allow_missing\": true on this feature in the manifest)")
#: numpy type fed for each ONNX Runtime input type of a numeric feature.
_NUMERIC_FEEDS: dict[str, np.dtype] = {
    "tensor(float)": np.dtype(np.float32), "tensor(double)": np.dtype(np.float64),
    "tensor(int64)": np.dtype(np.int64), "tensor(int32)": np.dtype(np.int32)}
#: ONNX's name of each fed integer type, for messages.
_ONNX_NAMES = {np.dtype(np.int64): "INT64", np.dtype(np.int32): "INT32",
               np.dtype(np.float32): "FLOAT", np.dtype(np.float64): "DOUBLE"}


def _frame_feed(feature: Feature, series: pd.Series, dtype: np.dtype | None = None) -> np.ndarray:
    if feature.kind == "numeric":
        return _numeric_feed(feature, series, dtype or np.dtype(np.float32))
    return _categorical_feed(feature, series)


def _numeric_feed(feature: Feature, series: pd.Series,
                  dtype: np.dtype = np.dtype(np.float32)) -> np.ndarray:  # noqa: B008
    """The column as ``[N, 1]`` of ``dtype`` (the graph input's type), range-checked for it.

    Raises :class:`RowsRefused` naming the column, the count and the first bad row.
    """
    if not pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
        raise ScoringError(
            f"column {feature.name!r}: expected a numeric dtype, got {str(series.dtype)!r}")
    if dtype.kind == "f":
        return _float_feed(feature, series, dtype)
    if pd.api.types.is_integer_dtype(series.dtype):
        return _int_from_ints(feature, series, dtype)
    return _int_from_floats(feature, series, dtype)


def _float_feed(feature: Feature, series: pd.Series, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):  # a double beyond float32's range becomes inf: refused
        values = series.to_numpy(dtype=dtype, na_value=np.nan)
    missing = np.isnan(values)
    infinite = np.isinf(values)
    if infinite.any():
        raise _refused(f"column {feature.name!r}: {{rows}} are infinite or overflow "
                       f"{_ONNX_NAMES[dtype]} ({dtype.name})", infinite)
    if missing.any() and not feature.allow_missing:
        raise _refused(f"column {feature.name!r}: {{rows}} are missing (NaN) and the manifest "
                       f"does not allow missing values for this feature {_ALLOW_MISSING_HINT}",
                       missing)
    return values.reshape(-1, 1)


def _refuse_int_missing(feature: Feature, missing: np.ndarray, dtype: np.dtype) -> None:
    if missing.any():
        raise _refused(f"column {feature.name!r}: {{rows}} are missing (NaN) and the graph takes "
                       f"this feature as {_ONNX_NAMES[dtype]}, which cannot hold missing values",
                       missing)


def _out_of_range(feature: Feature, dtype: np.dtype) -> str:
    info = np.iinfo(dtype)
    return (f"column {feature.name!r}: {{rows}} are outside {_ONNX_NAMES[dtype]}'s range "
            f"[{info.min}, {info.max}] (the graph takes this feature as {_ONNX_NAMES[dtype]})")


def _int_from_ints(feature: Feature, series: pd.Series, dtype: np.dtype) -> np.ndarray:
    """An integer column, compared with the target's bounds in its own type (a cast to int64
    first would already have wrapped a uint64 >= 2**63)."""
    _refuse_int_missing(feature, series.isna().to_numpy(), dtype)
    raw = series.to_numpy(dtype=getattr(series.dtype, "numpy_dtype", series.dtype))
    target, source = np.iinfo(dtype), np.iinfo(raw.dtype)
    bad = np.zeros(raw.shape, dtype=bool)
    if source.max > target.max:
        bad |= raw > raw.dtype.type(target.max)
    if source.min < target.min:
        bad |= raw < raw.dtype.type(target.min)
    if bad.any():
        raise _refused(_out_of_range(feature, dtype), bad)
    return raw.astype(dtype).reshape(-1, 1)


def _int_from_floats(feature: Feature, series: pd.Series, dtype: np.dtype) -> np.ndarray:
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    _refuse_int_missing(feature, np.isnan(values), dtype)
    if np.isinf(values).any():
        raise _refused(f"column {feature.name!r}: {{rows}} are infinite", np.isinf(values))
    fractional = values != np.round(values)
    if fractional.any():
        raise _refused(f"column {feature.name!r}: {{rows}} are not whole numbers and the graph "
                       f"takes this feature as {_ONNX_NAMES[dtype]}", fractional)
    info = np.iinfo(dtype)
    # Both bounds are exact in float64: -2**63 and 2**63 (the first value past int64's max).
    bad = (values < float(info.min)) | (values >= float(info.max + 1))
    if bad.any():
        raise _refused(_out_of_range(feature, dtype), bad)
    return values.astype(dtype).reshape(-1, 1)


def _refuse_missing(feature: Feature, missing: np.ndarray) -> None:
    if not feature.allow_missing and missing.any():
        raise _refused(f"column {feature.name!r}: {{rows}} are missing and the manifest does not "
                       f"allow missing values for this feature {_ALLOW_MISSING_HINT}", missing)


def _refuse_missing_codes(feature: Feature, codes: np.ndarray) -> None:
    """:func:`_refuse_missing` for codes where ``-1`` marks a missing value."""
    if len(codes) and codes.min() < 0:
        _refuse_missing(feature, codes < 0)


def _categorical_strings(feature: Feature, series: pd.Series) -> np.ndarray:
    """The column as a 1-D object array of str, missing values as ``""``."""
    missing = series.isna().to_numpy()
    _refuse_missing(feature, missing)
    if isinstance(series.dtype, pd.CategoricalDtype):  # cheap: stringify categories only
        values = _category_strings(series.cat.categories)[series.cat.codes.to_numpy()]
    elif pd.api.types.is_string_dtype(series.dtype) and series.dtype != object:
        values = series.to_numpy(dtype=object, na_value="")
    else:  # object, categorical, integer...: stringify non-missing values
        values = series.astype(object).to_numpy(dtype=object, copy=True)
        values[missing] = ""
        values = _as_strings(values)
    return values


def _as_strings(values: np.ndarray) -> np.ndarray:
    """Object array with every non-str element replaced by its ``str`` (in place)."""
    not_str = ~np.fromiter((isinstance(v, str) for v in values), bool, len(values))
    if not_str.any():
        values[not_str] = values[not_str].astype(str)
    return values


def _category_strings(categories: pd.Index) -> np.ndarray:
    """Each category as the string fed to the graph, then ``""`` for code -1 (missing)."""
    return np.append(_as_strings(categories.to_numpy(dtype=object, copy=True)), "")


def _label_codes(labels: pd.Index, strings: np.ndarray) -> np.ndarray:
    """Position of each string in ``labels`` (-1: not a label), int64."""
    return labels.get_indexer(pd.Index(strings, dtype=object)).astype(np.int64)


def _categorical_feed(feature: Feature, series: pd.Series) -> np.ndarray:
    return _categorical_strings(feature, series).reshape(-1, 1)


def _code_feed(feature: Feature, series: pd.Series, labels: pd.Index, strict: bool,
               cache: dict[str, tuple[pd.Index, np.ndarray]]) -> np.ndarray:
    """The column as int64 codes into ``labels`` (``-1``: not a label), shape ``[N, 1]``.

    Codes are computed once per distinct value (a categorical's categories, remembered in
    ``cache`` while the same categories come back, or the factorized strings), so the
    cost per row is one ``take``.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.array.codes
        _refuse_missing_codes(feature, codes)
        categories = series.dtype.categories
        hit = cache.get(feature.name)
        if hit is not None and hit[0] is categories:
            code_of = hit[1]
        else:
            code_of = _label_codes(labels, _category_strings(categories))
            cache[feature.name] = (categories, code_of)
    else:
        codes, distinct = pd.factorize(series)  # missing values get code -1
        if pd.api.types.infer_dtype(distinct, skipna=False) == "string":  # all str: as fed
            _refuse_missing_codes(feature, codes)
            strings = np.append(distinct.to_numpy(dtype=object), "")  # code -1 -> ""
        else:  # mixed types: 1 and 1.0 are one value to factorize, not to str()
            codes, strings = pd.factorize(_categorical_strings(feature, series))
        code_of = _label_codes(labels, strings)
    fed = code_of.take(codes)  # code -1 takes the last entry: the code of ""
    if strict and code_of.size and code_of.min() < 0 and (fed < 0).any():
        raise _refused(
            f"column {feature.name!r}: {{rows}} hold values that are not among the model's "
            f"{len(labels)} known categories (its encoder rejects unknown values)", fed < 0)
    return fed.reshape(-1, 1)


@dataclass(frozen=True, slots=True)
class ModelScorer:
    """An open ONNX Runtime session for one verified model.

    ``provider`` is the execution provider that really runs (``session.get_providers()[0]``),
    ``provider_reason`` why it was chosen, ``tf32_allowed`` whether CUDA may use TF32
    (False on the CPU).
    """

    manifest: Manifest
    session: ort.InferenceSession
    provider: str
    settings: SessionSettings
    provider_reason: str = ""
    tf32_allowed: bool = False
    #: Rows per CUDA ``run`` (None on the CPU); halved for good on an out-of-memory error.
    gpu_slices: devices.SliceBudget | None = None
    #: Categorical features the session takes as int64 codes: the labels, by code.
    coded: Mapping[str, pd.Index] = dataclasses.field(default_factory=dict)
    #: Coded features whose encoder rejects unknown values.
    strict: frozenset[str] = frozenset()
    #: Concurrent ``run`` calls one prediction is split over (see SessionSettings).
    parallel_runs: int = 1
    #: numpy type of each numeric graph input (float32, float64 or int64), by input name.
    input_dtypes: Mapping[str, np.dtype] = dataclasses.field(default_factory=dict)
    _codes_cache: dict[str, tuple[pd.Index, np.ndarray]] = dataclasses.field(
        default_factory=dict, repr=False, compare=False)

    @property
    def feature_names(self) -> tuple[str, ...]:
        """Input column names, in manifest order."""
        return tuple(f.name for f in self.manifest.features)

    def feeds(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Validate ``frame`` and build the ONNX input dict: one ``[N, 1]`` array per
        feature, or one ``[N, F]`` array under the manifest's ``input_tensor``."""
        missing = [f.name for f in self.manifest.features if f.name not in frame.columns]
        if missing:
            raise ScoringError(
                f"column {missing[0]!r} is missing from the data (model needs "
                f"{list(self.feature_names)}; missing {missing})")
        try:
            return self._feeds(frame)
        except RowsRefused as exc:
            raise exc.at(frame.index) from None

    def _feeds(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        tensor = self.manifest.input_tensor
        if tensor is not None:
            dtype = self.input_dtypes[tensor]
            return {tensor: np.hstack([_numeric_feed(f, frame[f.name], dtype)
                                       for f in self.manifest.features])}
        return {
            f.name: (_code_feed(f, frame[f.name], self.coded[f.name], f.name in self.strict,
                                self._codes_cache)
                     if f.name in self.coded else _frame_feed(f, frame[f.name],
                                                              self.input_dtypes.get(f.name)))
            for f in self.manifest.features
        }

    def _predict(self, frame: pd.DataFrame) -> np.ndarray:
        """:meth:`_output_matrix` of ``frame``, a refused output naming its row."""
        try:
            return self._output_matrix(self.feeds(frame), len(frame))
        except RowsRefused as exc:
            raise exc.at(frame.index) from None

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Positive-class probability per row, float64 of shape ``(len(frame),)``
        (binary classifiers; see :meth:`predict_class_proba` and :meth:`predict_value`).

        Raises
        ------
        ScoringError
            A feature column is missing, has a wrong dtype, or holds values the model
            cannot take (message names the column and the count of bad rows); or the
            model is not a binary classifier.
        """
        self._require_task("binary_classification", "predict_proba")
        return self._positive_column(self._predict(frame))

    def predict_class_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Probability of every class, float64 ``(len(frame), C)``, columns in class order
        (classifiers, binary or multiclass)."""
        if self.manifest.task == "regression":
            raise ScoringError(f"model {self.manifest.name!r} is a regression model: use "
                               "predict_value, it has no class probabilities")
        return self._predict(frame)

    def predict_value(self, frame: pd.DataFrame) -> np.ndarray:
        """The predicted value per row, float64 ``(len(frame),)`` (regression models)."""
        self._require_task("regression", "predict_value")
        return self._predict(frame)[:, 0]

    def _require_task(self, task: str, method: str) -> None:
        if self.manifest.task != task:
            raise ScoringError(f"{method} is for task {task}; model {self.manifest.name!r} is "
                               f"{self.manifest.task} (use predict_class_proba for classifiers, "
                               "predict_value for regression)")

    def _predict_feeds(self, feeds: dict[str, np.ndarray], n: int) -> np.ndarray:
        """Positive-class probabilities of a binary classifier."""
        return self._positive_column(self._output_matrix(feeds, n))

    def _positive_column(self, out: np.ndarray) -> np.ndarray:
        n = out.shape[0]
        index = self.manifest.output.positive_index
        if n and (index is None or index >= out.shape[1]):
            raise ScoringError(
                f"output {self.manifest.output.name!r}: expected a column for positive_index "
                f"{index}, got shape {out.shape}")
        return out[:, index] if n else np.empty(0, dtype=np.float64)

    def _output_matrix(self, feeds: dict[str, np.ndarray], n: int) -> np.ndarray:
        """The manifest's output as float64 ``[n, C]`` (``C`` = 1 for regression)."""
        if n == 0:
            width = 1 if self.manifest.task == "regression" else 0
            return np.empty((0, width), dtype=np.float64)
        out = _as_matrix(self._run(feeds, n))
        if out.shape[0] != n or (self.manifest.task == "regression" and out.shape[1] != 1):
            raise ScoringError(
                f"output {self.manifest.output.name!r}: expected {n} rows"
                f"{' of one value' if self.manifest.task == 'regression' else ''}, "
                f"got shape {out.shape}")
        _check_output(out, self.manifest)
        return out

    def _run(self, feeds: dict[str, np.ndarray], n: int) -> np.ndarray:
        """The model output for ``n`` rows of ``feeds``, split over ``parallel_runs`` runs
        (on CUDA: in slices that fit device memory)."""
        names = [self.manifest.output.name]
        if self.gpu_slices is not None:
            return _as_matrix(_run_on_gpu(self.session, names, feeds, n, self.gpu_slices))
        slices = max(self.parallel_runs, -(-n // RUN_SLICE_ROWS)) if self.parallel_runs > 1 else 1
        if slices == 1 or n < 2 * _MIN_SLICE_ROWS:
            return _as_matrix(self.session.run(names, feeds)[0])
        bounds = np.linspace(0, n, min(slices, n // _MIN_SLICE_ROWS) + 1).astype(np.int64)

        def run_slice(k: int) -> np.ndarray:
            part = {name: v[bounds[k]:bounds[k + 1]] for name, v in feeds.items()}
            return _as_matrix(self.session.run(names, part)[0])

        # ONNX Runtime's run is thread-safe and releases the GIL while it computes.
        parts = list(_run_pool(self.parallel_runs).map(run_slice, range(len(bounds) - 1)))
        return np.concatenate(parts)


def _check_output(out: np.ndarray, manifest: Manifest) -> None:
    """Refuse outputs no metric can use, for every caller alike: NaN or infinite values (a
    graph fed NaN where it does not impute), and class probabilities outside [0, 1]."""
    name = manifest.output.name
    bad = np.asarray(~np.isfinite(out).all(axis=1))
    if bad.any():
        allowed = [f.name for f in manifest.features if f.allow_missing]
        hint = (f"; features {allowed} allow missing values: does the graph really impute them?"
                if allowed else "")
        raise _refused(f"model output {name!r}: {{rows}} are NaN or infinite{hint}", bad)
    if manifest.task != "regression":
        outside = np.asarray(((out < 0.0) | (out > 1.0)).any(axis=1))
        if outside.any():
            raise _refused(f"model output {name!r}: {{rows}} hold class probabilities outside "
                           "[0, 1]", outside)


def _run_on_gpu(session: ort.InferenceSession, names: list[str], feeds: dict[str, np.ndarray],
                n: int, budget: devices.SliceBudget) -> np.ndarray:
    try:
        return devices.run_in_slices(lambda part: session.run(names, part)[0], feeds, n, budget)
    except MemoryError as exc:
        raise ScoringError(f"CUDA: {exc}; raise MODELGATE_ORT_GPU_MEM_LIMIT_MB or use the CPU") from exc


def _as_matrix(out: Any) -> np.ndarray:
    """An output as float64 ``[N, C]`` (a ``[N]`` vector becomes one column)."""
    if isinstance(out, list):  # a sequence of maps that unzip_probabilities could not reach
        raise ScoringError("the model output is a sequence of maps not made directly by a ZipMap: "
                           "convert with zipmap=False (skl2onnx, onnxmltools) to get a tensor")
    matrix = np.asarray(out, dtype=np.float64)
    return matrix.reshape(-1, 1) if matrix.ndim == 1 else matrix


#: Most rows per ``run`` call when a prediction is split over parallel runs.
RUN_SLICE_ROWS = 4096
#: Fewest rows per slice: below this, splitting costs more than it saves.
_MIN_SLICE_ROWS = 1024


@functools.cache
def _run_pool(workers: int) -> ThreadPoolExecutor:
    """One thread pool per process and size, shared by every scorer (threads are reused)."""
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="modelgate-ort")


# A forked child (a prefork Celery or LocalExecutor worker) inherits the pool object but not
# its threads: it must build its own, or work queued there would wait forever.
os.register_at_fork(after_in_child=_run_pool.cache_clear)


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _session_options(settings: SessionSettings) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.graph_optimization_level = _OPT_LEVELS[settings.graph_optimization_level]
    if settings.intra_op_threads is not None:
        options.intra_op_num_threads = settings.intra_op_threads
    # Quiet by default: session creation on CUDA warns about every Memcpy node it adds.
    options.log_severity_level = _ORT_SEVERITY[settings.ort_log_level]
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return options


def _device_choice(settings: SessionSettings, work: devices.GraphWork) -> devices.DeviceChoice:
    """Providers for this model (see :func:`modelgate.onnx.devices.choose_device`)."""
    options = devices.cuda_provider_options(allow_tf32=settings.allow_tf32,
                                            gpu_mem_limit_mb=settings.gpu_mem_limit_mb)
    try:
        return devices.choose_device(settings.provider, ort.get_available_providers(), work,
                                     cuda_options=options)
    except ValueError as exc:
        raise ScoringError(str(exc)) from None


def open_session(model: LoadedModel, settings: SessionSettings | None = None) -> ModelScorer:
    """Open an ONNX Runtime session for a verified model.

    Parameters
    ----------
    model
        From :func:`modelgate.onnx.artifact.verify`.
    settings
        Provider, optimisation level and threads; default ``SessionSettings()``.

    Returns
    -------
    ModelScorer
        With ``provider`` set to what ONNX Runtime really uses; ONNX Runtime silently
        falls back to the CPU when CUDA libraries fail to load, so this is read back.

    Raises
    ------
    ScoringError
        ``provider="cuda"`` and CUDA is not available or did not load.
    """
    settings = settings or SessionSettings()
    coded = code_string_inputs(unzip_probabilities(model.onnx_bytes, model.manifest.output.name))
    work = devices.graph_work(coded.onnx_bytes)
    choice = _device_choice(settings, work)
    intra, runs = settings.resolved_threads(cuda=choice.wants_cuda, cores=_usable_cores())
    options = _session_options(dataclasses.replace(settings, intra_op_threads=intra))
    # ONNX Runtime's process-wide logger prints provider-loading messages outside a session.
    ort.set_default_logger_severity(_ORT_SEVERITY[settings.ort_log_level])
    session = ort.InferenceSession(coded.onnx_bytes, sess_options=options,
                                   providers=list(choice.providers))
    actual = session.get_providers()[0]
    reason = choice.reason
    if settings.provider == "cuda" and actual != CUDA:
        raise ScoringError(
            f"provider 'cuda' requested but ONNX Runtime fell back to {actual!r} "
            "(CUDA/cuDNN libraries failed to load; see ONNX Runtime's log)")
    if choice.wants_cuda and actual != CUDA:
        logger.warning("CUDA was listed as available but the session runs on %s", actual)
        reason = f"{reason}; CUDA failed to load, ran on {actual}"
    on_cuda = actual == CUDA
    slices = (devices.SliceBudget(devices.gpu_slice_rows(work, settings.gpu_mem_limit_mb))
              if on_cuda else None)
    logger.info("opened model %s v%s on %s (%s; %d parallel run(s), intra-op threads: %s; "
                "%d categorical input(s) fed as codes%s)", model.manifest.name,
                model.manifest.version, actual, reason, runs, intra or "ONNX Runtime's default",
                len(coded.categories),
                f"; TF32 {'allowed' if settings.allow_tf32 else 'off'}, "
                f"{slices.rows} rows per run" if slices else "")
    logger.info("model %s v%s nodes: %s", model.manifest.name, model.manifest.version,
                devices.node_placement(session, work, actual))
    labels = {name: pd.Index(cats, dtype=object) for name, cats in coded.categories.items()}
    return ModelScorer(manifest=model.manifest, session=session, provider=actual,
                       settings=settings, provider_reason=reason,
                       tf32_allowed=on_cuda and settings.allow_tf32, gpu_slices=slices,
                       coded=labels, strict=coded.unknown_is_error, parallel_runs=runs,
                       input_dtypes=_numeric_input_dtypes(session))


def _numeric_input_dtypes(session: ort.InferenceSession) -> dict[str, np.dtype]:
    """The numpy type to feed each float, double or int64 graph input in."""
    return {i.name: _NUMERIC_FEEDS[i.type] for i in session.get_inputs() if i.type in _NUMERIC_FEEDS}


@dataclass(frozen=True, slots=True)
class ScoringRun:
    """Summary of one :func:`score_parquet` call."""

    rows: int
    seconds: float
    rows_per_s: float
    provider: str
    input_fingerprint: str
    output_path: Path
    #: Why ``provider`` was chosen (see :func:`modelgate.onnx.devices.choose_device`).
    provider_reason: str = ""
    #: Whether CUDA could use TF32 (False on the CPU).
    tf32_allowed: bool = False


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, streamed in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _read_schema(path: Path) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"cannot read parquet file {str(path)!r}: {exc}") from exc


def _open_parquet(path: Path, categorical: Sequence[str] = ()) -> pq.ParquetFile:
    # Categorical features are read dictionary-encoded: far cheaper to stringify. Only
    # columns present are named (pyarrow answers a missing one with a bare KeyError);
    # missing columns are reported by _needed_columns with the column's name.
    schema = _read_schema(path)
    present = [c for c in categorical if c in schema.names]
    for name in present:  # pyarrow answers a nested column with a bare KeyError
        if pa.types.is_nested(schema.field(name).type):
            raise ScoringError(
                f"categorical feature column {name!r} in {str(path)!r}: expected a flat column "
                f"(string, dictionary, integer or boolean), got {schema.field(name).type}")
    try:
        return pq.ParquetFile(path, read_dictionary=present or None)
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"cannot read parquet file {str(path)!r}: {exc}") from exc


def _needed_columns(scorer: ModelScorer, schema: pa.Schema, path: Path,
                    id_column: str | None, keep_columns: Sequence[str]) -> list[str]:
    wanted = [*scorer.feature_names, *([id_column] if id_column else []), *keep_columns]
    chosen = {*([id_column] if id_column else []), *keep_columns}
    clash = {c for c in chosen if c in ("score", "prediction") or c.startswith("proba_")}
    if clash:
        raise ScoringError(f"id_column/keep_columns: {sorted(clash)} clash with output columns")
    for name in wanted:
        if name not in schema.names:
            raise ScoringError(f"column {name!r} is missing from parquet file {str(path)!r}")
    return list(dict.fromkeys(wanted))


def _batches(pf: pq.ParquetFile, path: Path, batch_rows: int,
             columns: list[str]) -> Iterator[pa.RecordBatch]:
    try:
        yield from pf.iter_batches(batch_size=batch_rows, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"cannot read parquet file {str(path)!r}: {exc}") from exc


Prepared = tuple[pa.RecordBatch, dict[str, np.ndarray], pd.Index]


def _row_index(batch: pa.RecordBatch, offset: int, id_column: str | None) -> pd.Index:
    """How a batch's rows are named in errors: their ids, or their 0-based file positions."""
    if id_column is not None:
        return pd.Index(batch.column(id_column).to_pandas(), name=id_column)
    return pd.RangeIndex(offset, offset + batch.num_rows)


def _with_offsets(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    offset = 0
    for batch in batches:
        yield offset, batch
        offset += batch.num_rows


#: Batches read and checked ahead of the one being scored: on CUDA the device outruns one
#: host thread decoding parquet and building feeds, so several batches are built at once.
READ_AHEAD = {CPU: 1, CUDA: 3}


class _ReadAhead:
    """Batches decoded in order by one thread, their feeds built by ``depth`` threads.

    Parquet decoding, pandas conversion and ONNX Runtime mostly release the GIL, so these
    stages overlap the ``run`` of the current batch.
    """

    def __init__(self, scorer: ModelScorer, batches: Iterator[pa.RecordBatch], depth: int,
                 names: str | None = None) -> None:
        self._scorer, self._batches, self._names = scorer, _with_offsets(batches), names
        self._read = ThreadPoolExecutor(max_workers=1, thread_name_prefix="modelgate-read")
        self._build = ThreadPoolExecutor(max_workers=depth, thread_name_prefix="modelgate-feed")
        self._queue: deque[Future[Prepared | None]] = deque()
        for _ in range(depth):
            self._submit()

    def _submit(self) -> None:
        # One reader thread: batches come out of the iterator in file order.
        read = self._read.submit(next, self._batches, None)
        self._queue.append(self._build.submit(self._feeds, read))

    def _feeds(self, read: Future[tuple[int, pa.RecordBatch] | None]) -> Prepared | None:
        item = read.result()
        if item is None:
            return None
        offset, batch = item
        frame = batch.select(list(self._scorer.feature_names)).to_pandas()
        frame.index = _row_index(batch, offset, self._names)
        return batch, self._scorer.feeds(frame), frame.index

    def __next__(self) -> Prepared | None:
        item = self._queue.popleft().result()
        if item is not None:
            self._submit()
        return item

    def close(self) -> None:
        for pool in (self._build, self._read):
            pool.shutdown(wait=True, cancel_futures=True)


def _score_batch(scorer: ModelScorer, prepared: Prepared, schema: pa.Schema,
                 id_column: str | None, keep_columns: Sequence[str]) -> pa.Table:
    batch, feeds, index = prepared
    arrays: dict[str, pa.Array] = {}
    if id_column:
        arrays[id_column] = _as_in_file(batch.column(id_column), schema.field(id_column))
    try:
        arrays.update(_output_columns(scorer, feeds, batch.num_rows))
    except RowsRefused as exc:
        raise exc.at(index) from None
    for name in keep_columns:
        arrays[name] = _as_in_file(batch.column(name), schema.field(name))
    return pa.table(arrays)


def _output_columns(scorer: ModelScorer, feeds: dict[str, np.ndarray], n: int
                    ) -> dict[str, pa.Array]:
    """What one batch's predictions are written as, per task (see :func:`score_parquet`)."""
    task = scorer.manifest.task
    if task == "binary_classification":
        scores = scorer._predict_feeds(feeds, n)
        assert scorer.manifest.threshold is not None  # required for binary models
        prediction = (scores >= scorer.manifest.threshold).astype(np.int8)
        return {"score": pa.array(scores, type=pa.float64()),
                "prediction": pa.array(prediction, type=pa.int8())}
    matrix = scorer._output_matrix(feeds, n)
    if task == "regression":
        return {"prediction": pa.array(matrix[:, 0], type=pa.float64())}
    predicted = matrix.argmax(axis=1)
    columns = {"score": pa.array(matrix[np.arange(n), predicted], type=pa.float64()),
               "prediction": pa.array(predicted.astype(np.int32), type=pa.int32())}
    columns.update({f"proba_{k}": pa.array(matrix[:, k], type=pa.float64())
                    for k in range(matrix.shape[1])})
    return columns


def _as_in_file(column: pa.Array, field: pa.Field) -> pa.Array:
    """Undo the dictionary encoding used for reading categorical features."""
    return column if column.type == field.type else column.cast(field.type)


def score_parquet(scorer: ModelScorer, parquet_path: str | os.PathLike[str],
                  out_path: str | os.PathLike[str], *, batch_rows: int | None = None,
                  id_column: str | None = None, keep_columns: Sequence[str] = (),
                  progress: logging.Logger = logger) -> ScoringRun:
    """Score a parquet file batch by batch and write the scores to another parquet file.

    Only the needed columns are read, ``batch_rows`` at a time; the output holds
    ``id_column`` (if given), the predictions and ``keep_columns``, in input row order.
    The predictions, by task: binary classification ``score`` (float64, the positive
    class's probability) and ``prediction`` (int8, ``score >= manifest.threshold``);
    multiclass ``prediction`` (int32, index of the most probable class in the model's
    class order), ``score`` (its probability) and ``proba_0`` .. ``proba_<C-1>`` (float64);
    regression ``prediction`` (float64, the predicted value). It is written to a temporary
    file and renamed, so a failed run leaves no partial output.

    Parameters
    ----------
    scorer
        From :func:`open_session`.
    parquet_path, out_path
        Input and output parquet files.
    batch_rows
        Rows per batch (>= 1; None: :data:`DEFAULT_BATCH_ROWS` for the scorer's provider).
    id_column
        Input column copied to the output first (None: none).
    keep_columns
        Further input columns copied to the output.
    progress
        Logger for progress lines (rows done, rows/s) at most every 5 s; counts only.

    Returns
    -------
    ScoringRun
        Rows, seconds, rows/s, provider, sha256 of the input file and output path.

    Raises
    ------
    ScoringError
        Unreadable/corrupt parquet (names the file), no rows, missing or invalid columns.
    """
    if batch_rows is None:
        batch_rows = DEFAULT_BATCH_ROWS.get(scorer.provider, DEFAULT_BATCH_ROWS[CPU])
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ScoringError(f"batch_rows: expected a positive integer, got {batch_rows!r}")
    src, out = Path(parquet_path), Path(out_path)
    pf = _open_parquet(src, [f.name for f in scorer.manifest.features
                             if f.kind == "categorical"])
    total = pf.metadata.num_rows
    if total == 0:
        raise ScoringError(f"parquet file {str(src)!r} has no rows")
    file_schema = _read_schema(src)  # as stored: pf.schema_arrow shows dictionary types
    columns = _needed_columns(scorer, file_schema, src, id_column, keep_columns)
    # Refused rows are named by the id column when the data has one, even if not written.
    names = id_column or (scorer.manifest.id_column
                          if scorer.manifest.id_column in file_schema.names else None)
    if names is not None and names not in columns:
        columns.append(names)
    fingerprint = file_sha256(src)
    tmp = out.with_name(f".{out.name}.tmp")
    rows, start = 0, time.perf_counter()
    last = start
    writer: pq.ParquetWriter | None = None
    batches = _batches(pf, src, batch_rows, columns)
    # Batches read and checked ahead, in threads, while the current one is scored and
    # written: parquet decoding and ONNX Runtime release the GIL, so the stages overlap.
    ahead = _ReadAhead(scorer, batches, READ_AHEAD.get(scorer.provider, 1), names)
    try:
        while (item := next(ahead)) is not None:
            batch = item[0]
            table = _score_batch(scorer, item, file_schema, id_column, keep_columns)
            writer = writer or pq.ParquetWriter(tmp, table.schema,
                                                use_dictionary=list(keep_columns))
            writer.write_table(table)
            rows += batch.num_rows
            if (now := time.perf_counter()) - last >= PROGRESS_EVERY_S:
                rate = rows / (now - start)
                progress.info("scored %d/%d rows (%.0f%%, %.0f rows/s, ETA %.0f s)", rows, total,
                              100.0 * rows / total, rate, (total - rows) / rate,
                              extra={"progress": (rows, total, "rows")})
                last = now
    except BaseException:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
        raise
    finally:
        ahead.close()
    assert writer is not None  # total > 0 so at least one batch was written
    writer.close()
    os.replace(tmp, out)
    seconds = time.perf_counter() - start
    progress.info("scored %d rows in %.2f s (%.0f rows/s) on %s", rows, seconds,
                  rows / seconds, scorer.provider)
    return ScoringRun(rows=rows, seconds=seconds, rows_per_s=rows / seconds,
                      provider=scorer.provider, input_fingerprint=fingerprint, output_path=out,
                      provider_reason=scorer.provider_reason, tf32_allowed=scorer.tf32_allowed)
