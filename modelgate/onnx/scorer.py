"""An open ONNX Runtime session for one verified model: :func:`open_session` and :class:`ModelScorer`.

The scorer feeds a frame (:mod:`modelgate.onnx.feeds`), runs the session (split over parallel
single-threaded runs on the CPU, in slices that fit device memory on CUDA) and checks the
model's output the same way for every caller (``score`` and ``evaluate`` alike): NaN or
infinite outputs, and class probabilities outside [0, 1], are refused, naming the output, the
count of bad rows and the first one's id. The output read is the manifest's: class
probabilities ``[N, C]`` (a ``ZipMap`` is rewritten away in memory by
:func:`modelgate.onnx.layouts.unzip_probabilities`) or a regression's values ``[N]``/``[N, 1]``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnxruntime as ort
import pandas as pd

from modelgate.onnx import devices
from modelgate.onnx.artifact import LoadedModel
from modelgate.onnx.codes import code_string_inputs
from modelgate.onnx.feeds import (
    NUMERIC_FEEDS,
    RowsRefused,
    code_feed,
    frame_feed,
    numeric_feed,
    refused,
)
from modelgate.onnx.layouts import unzip_probabilities
from modelgate.onnx.manifest import Manifest
from modelgate.onnx.settings import (
    ORT_SEVERITY,
    ScoringError,
    SessionSettings,
    session_options,
)

__all__ = ["ModelScorer", "open_session"]

#: The logger of every scoring module, by its public module's name.
logger = logging.getLogger("modelgate.onnx.scoring")
CPU = devices.CPU
CUDA = devices.CUDA


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
    #: Coded features' strings coded other than by their label's position (by feature).
    aliases: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)
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
            return {tensor: np.hstack([numeric_feed(f, frame[f.name], dtype)
                                       for f in self.manifest.features])}
        return {
            f.name: (code_feed(f, frame[f.name], self.coded[f.name], f.name in self.strict,
                                self._codes_cache, self.aliases.get(f.name, {}))
                     if f.name in self.coded else frame_feed(f, frame[f.name],
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
        raise refused(f"model output {name!r}: {{rows}} are NaN or infinite{hint}", bad)
    if manifest.task != "regression":
        outside = np.asarray(((out < 0.0) | (out > 1.0)).any(axis=1))
        if outside.any():
            raise refused(f"model output {name!r}: {{rows}} hold class probabilities outside "
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
    options = session_options(dataclasses.replace(settings, intra_op_threads=intra))
    # ONNX Runtime's process-wide logger prints provider-loading messages outside a session.
    ort.set_default_logger_severity(ORT_SEVERITY[settings.ort_log_level])
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
                       coded=labels, aliases=coded.aliases, strict=coded.unknown_is_error,
                       parallel_runs=runs,
                       input_dtypes=_numeric_input_dtypes(session))


def _numeric_input_dtypes(session: ort.InferenceSession) -> dict[str, np.dtype]:
    """The numpy type to feed each float, double or int64 graph input in."""
    return {i.name: NUMERIC_FEEDS[i.type] for i in session.get_inputs() if i.type in NUMERIC_FEEDS}
