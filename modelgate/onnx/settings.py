"""ONNX Runtime session settings: provider, graph optimisation, threads, read from the environment.

:class:`SessionSettings` says how :func:`modelgate.onnx.scorer.open_session` opens a session;
:class:`ScoringError` is the error every scoring module raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast, get_args

import onnxruntime as ort

__all__ = ["ORT_SEVERITY", "ScoringError", "SessionSettings", "session_options",
           "settings_from_os_environ"]

Provider = Literal["auto", "cpu", "cuda"]
GraphOpt = Literal["disable", "basic", "extended", "all"]
OrtLogLevel = Literal["verbose", "info", "warning", "error", "fatal"]
#: ONNX Runtime's severity numbers (``SessionOptions.log_severity_level``).
ORT_SEVERITY = {"verbose": 0, "info": 1, "warning": 2, "error": 3, "fatal": 4}
_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
_ENV_PREFIX = "MODELGATE_ORT_"


class ScoringError(ValueError):
    """Input data, settings or runtime cannot be used to score."""


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
        if self.ort_log_level not in ORT_SEVERITY:
            raise ScoringError(f"ort_log_level: expected one of {list(ORT_SEVERITY)}, "
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
        log_level = _env_choice(environ, f"{_ENV_PREFIX}LOG_LEVEL", tuple(ORT_SEVERITY), "error")
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


def session_options(settings: SessionSettings) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.graph_optimization_level = _OPT_LEVELS[settings.graph_optimization_level]
    if settings.intra_op_threads is not None:
        options.intra_op_num_threads = settings.intra_op_threads
    # Quiet by default: session creation on CUDA warns about every Memcpy node it adds.
    options.log_severity_level = ORT_SEVERITY[settings.ort_log_level]
    options.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    return options
