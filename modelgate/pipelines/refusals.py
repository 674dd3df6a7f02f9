"""Refusals: a run's input cannot work, and trying it again would be refused alike.

An unknown model version, a dataset that names nothing, a malformed policy or setting, a
monitoring location that does not exist, held-out rows the model cannot be scored on: each is
refused with an error naming the input, and a retry of the task would read the same input and
be refused the same way (another refusal row, another failed run). :func:`refusal_types` is
the family of such errors; the DAG task wrapper (:mod:`~modelgate.pipelines.tasks`) turns them
into Airflow's non-retried failure, so one DAG run leaves one refusal.

:func:`check_dataset_uri` is the evaluation's own refusal of a dataset that cannot be one,
made before any run row exists.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from modelgate.input_limits import control_character, shown

if TYPE_CHECKING:
    from modelgate.pipelines.context import Context


class InputRefused(ValueError):
    """A run's input (dataset, param) cannot work; the message names it and what came.

    The pipelines' own refusals derive from it (a promotion under a looser policy without
    leave, a monitoring location that cannot work, a dataset too large for the memory
    limit), so this module names neither pipeline."""


def refusal_types() -> tuple[type[BaseException], ...]:
    """The errors that refuse a run's input rather than fail while working on it.

    The model registry's (unknown model or version, a stage that cannot be evaluated), a
    malformed policy, setting or JSON option, rows the model cannot be scored on (a value a
    feature does not allow, an output that is not a number: the same rows on every try), and
    :class:`InputRefused` with the pipelines' refusals derived from it (a promotion under a
    looser policy without leave, a monitoring location that cannot work, a dataset too large
    for the memory limit).
    """
    # imported here: every task's wrapper loads this module; the error types' layers are
    # not for start-up
    from modelgate.config import ConfigError
    from modelgate.evaluation import PolicyError
    from modelgate.json_input import JsonInputError
    from modelgate.store.models import RegistryError

    types: tuple[type[BaseException], ...] = (InputRefused, RegistryError, PolicyError, ConfigError,
                                              JsonInputError)
    # rows refused by scoring: only a process that loaded the feeds (pandas, ONNX Runtime) can
    # have raised one, so a task failing before it scored anything does not import them here
    feeds = sys.modules.get("modelgate.onnx.feeds")
    return types if feeds is None else (*types, feeds.UnscorableRows)


def check_dataset_uri(dataset_uri: object, *, name: str = "dataset") -> str:
    """``dataset_uri`` when it can name a held-out dataset, else :class:`InputRefused`.

    It must be text without control characters, not empty (an empty path is the worker's
    working folder, every parquet file under it), ``s3://`` with a bucket, or a local path
    (``file://`` too) that exists on this machine.

    >>> check_dataset_uri("s3://bucket/heldout/")
    's3://bucket/heldout/'
    >>> try:
    ...     check_dataset_uri("")
    ... except InputRefused as exc:
    ...     print(exc)
    dataset: expected a parquet file, a directory of them or s3://bucket/prefix; got ''
    """
    wanted = f"{name}: expected a parquet file, a directory of them or s3://bucket/prefix; got"
    if not isinstance(dataset_uri, str) or not dataset_uri.strip():
        raise InputRefused(f"{wanted} {shown(dataset_uri)}")
    bad = control_character(dataset_uri)
    if bad is not None:
        raise InputRefused(f"{wanted} {shown(dataset_uri)}, which holds the control character {bad!r}")
    if dataset_uri.startswith("s3://"):
        if not dataset_uri[5:].partition("/")[0]:
            raise InputRefused(f"{wanted} {shown(dataset_uri)} (no bucket)")
        return dataset_uri
    path = Path(dataset_uri[7:] if dataset_uri.startswith("file://") else dataset_uri)
    if not path.exists():
        raise InputRefused(f"{wanted} {shown(dataset_uri)}, which does not exist on this machine")
    return dataset_uri


def check_evaluation_inputs(ctx: Context, *, model_name: str, version: str, dataset_uri: str,
                            run_key: str) -> None:
    """Refuse an evaluation whose dataset cannot be one or whose ONNX Runtime settings
    (``MODELGATE_ORT_*``) are malformed, before any run row or scoring; the refusal is
    recorded (``analytics.evaluation_refusals``) and :class:`InputRefused` raised."""
    # imported here: the task wrappers load this module; ONNX Runtime's settings only matter
    # before scoring. From onnx.settings, not onnx.scoring, which adds pandas and the scoring
    # engine (about 1 CPU-s) to the verify task's start-up.
    from modelgate.logsafe import one_line
    from modelgate.onnx.settings import ScoringError, settings_from_os_environ
    from modelgate.store import runs

    try:
        check_dataset_uri(dataset_uri)
        try:
            settings_from_os_environ()
        except ScoringError as exc:
            raise InputRefused(f"scoring settings: {exc}") from exc
    except InputRefused as exc:
        runs.record_refusal(ctx.db_url, run_key=run_key, model_name=model_name, version=version,
                            dataset_uri=str(dataset_uri).replace("\x00", "\\x00"),
                            reason=one_line(f"{type(exc).__name__}: {exc}"))
        raise
