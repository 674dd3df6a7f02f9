"""What the evaluation steps do differently for multiclass and regression models.

The evaluation steps (``score_step``, ``metrics_step``, ...) keep their order and signatures and call
these helpers when the candidate is not a binary classifier.

Binary models are summarised per partition into mergeable counts
(:mod:`modelgate.evaluation.sufficient`). Multiclass and regression models keep each
partition's scored columns instead (label, sensitive features, ``prediction``, ``score``
and ``proba_<k>`` for multiclass, and the champion's as ``champion_<column>``), and the
metrics and fairness steps read them back and concatenate them: memory grows with the
rows (see the README's "Model archives" section for the bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.onnx.manifest import Manifest
from modelgate.pipelines.context import Context
from modelgate.pipelines.refusals import InputRefused

BINARY = "binary_classification"
MULTICLASS = "multiclass_classification"
REGRESSION = "regression"
CHAMPION_PREFIX = "champion_"
#: Rows joined at once when a partition's champion scores are put beside the candidate's.
JOIN_BATCH_ROWS = 1 << 20


def task_of(manifest: Manifest) -> str:
    """The manifest's task."""
    return manifest.task


def classes_of(manifest: Manifest) -> tuple[Any, ...]:
    """A multiclass model's classes in probability-column order (written at ``package``)."""
    classes = manifest.output.classes
    if not classes:
        raise ValueError(f"model {manifest.name!r} is multiclass_classification but its "
                         "manifest has no output.classes; package it again with modelgate "
                         "package (it fills them in from the graph) or set output.classes")
    return tuple(classes)


def prediction_columns(manifest: Manifest) -> list[str]:
    """The scored columns the metrics read: ``prediction`` (and ``score``, ``proba_<k>``)."""
    if task_of(manifest) == REGRESSION:
        return ["prediction"]
    return ["prediction", "score", *(f"proba_{k}" for k in range(len(classes_of(manifest))))]


def label_values(table: pa.Table, manifest: Manifest) -> Any:
    """The label column as a pandas Series; a missing value is an error naming the column."""
    column = manifest.label.column
    values = table.column(column).to_pandas()
    missing = int(values.isna().sum())
    if missing:
        raise ValueError(f"label column {column!r} has {missing} missing value(s); "
                         "held-out rows must all be labelled")
    return values


def targets(table: pa.Table, manifest: Manifest) -> npt.NDArray[Any]:
    """The label column as class indices (multiclass) or finite floats (regression).

    Raises
    ------
    ValueError
        Naming the label column: missing values, labels that are not among the classes, or
        regression labels that are not finite numbers.
    """
    from modelgate.evaluation import model_labels

    values = label_values(table, manifest)
    if task_of(manifest) == MULTICLASS:
        classes_of(manifest)  # no classes: say how to fill them in
    return model_labels(values.to_numpy(), manifest.to_dict())


class ChampionMismatch(InputRefused):
    """The production champion cannot be compared with the candidate (another task, other
    classes); final: a retry would find the same two models."""


def check_champion(candidate: Manifest, champion: Manifest) -> None:
    """A champion is compared on the same terms only: same task, and for multiclass models
    the same classes in the same order.

    Raises
    ------
    ChampionMismatch
        Saying what differs and how to go on.
    """
    new, old = task_of(candidate), task_of(champion)
    if new != old:
        raise ChampionMismatch(
            f"model {candidate.name!r}: the candidate is {new} but the production "
            f"champion (version {champion.version!r}) is {old}; a champion is compared "
            "with a candidate of the same task only: register the candidate under another "
            "model name, or archive the champion first")
    if new == MULTICLASS and [str(c) for c in classes_of(candidate)] != [
            str(c) for c in classes_of(champion)]:
        raise ChampionMismatch(
            f"model {candidate.name!r}: the candidate's classes {list(classes_of(candidate))} "
            f"differ from the production champion's {list(classes_of(champion))}; per-class "
            "metrics can only be compared over the same classes in the same order")


def check_policy_classes(policy: Any, manifest: Manifest) -> None:
    """Per-class thresholds (``recall[<class>]``, ``tpr_gap[<class>]``) must name a class of
    the model (or ``[*]``, every class, for a fairness gap); the message lists its classes.

    Raises
    ------
    PolicyError
        Naming the policy metric and the model's classes; final like a malformed policy.
    """
    from modelgate.evaluation import PolicyError

    if task_of(manifest) != MULTICLASS:
        return
    classes = [str(c) for c in classes_of(manifest)]
    names = [t.metric for t in (*policy.values, *policy.changes, *policy.fairness_default)]
    names += [t.metric for _, block in policy.fairness_features for t in block]
    for name in names:
        base, bracket, rest = name.partition("[")
        if bracket and rest.endswith("]") and rest[:-1] not in classes and rest != "*]":
            raise PolicyError(f"policy metric {name!r}: {rest[:-1]!r} is not a class of model "
                             f"{manifest.name!r} (classes {classes})")


def join_champion(candidate_path: Path, champion_path: Path | None, out: Path) -> None:
    """Write the candidate's scores with the champion's prediction columns beside them
    (renamed ``champion_<column>``), a batch at a time; no champion: the candidate's file."""
    import os

    if champion_path is None:
        os.replace(candidate_path, out)
        return
    champion = pq.ParquetFile(champion_path).iter_batches(JOIN_BATCH_ROWS)
    writer: pq.ParquetWriter | None = None
    try:
        for batch in pq.ParquetFile(candidate_path).iter_batches(JOIN_BATCH_ROWS):
            table, other = pa.Table.from_batches([batch]), next(champion)
            for name in other.schema.names:
                table = table.append_column(CHAMPION_PREFIX + name, other.column(name))
            writer = writer or pq.ParquetWriter(out, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    if writer is None:  # no rows: an empty file with the candidate's columns
        os.replace(candidate_path, out)


class EvaluationTooLarge(InputRefused):
    """The metrics step would hold more memory than ``MODELGATE_EVAL_MEMORY_LIMIT_MB``."""


def metrics_memory_bytes(manifest: Manifest, n_rows: int, *, champion: bool,
                         n_bootstrap: int) -> int | None:
    """Upper bound of what the metrics step holds for ``n_rows`` rows; None for binary
    models (their count tables do not grow with the rows).

    Multiclass: :func:`~modelgate.evaluation.multiclass.multiclass_memory_bytes` (the
    probabilities included) plus the columns read at a time (:func:`read_multiclass_scores`:
    at most 64 float64 columns), per model; regression: ``8 x 15 x N`` per model.

    >>> from modelgate.onnx.manifest import LabelSpec, OutputSpec
    >>> m = Manifest(name="m", version="1", sha256="0" * 64, opset=None, features=(),
    ...              label=LabelSpec("y"), output=OutputSpec("p", classes=tuple(range(1000))),
    ...              threshold=None, sensitive_features=(), task="multiclass_classification")
    >>> round(metrics_memory_bytes(m, 100_000, champion=False, n_bootstrap=1000) / 2**30, 2)
    1.45
    """
    from modelgate.evaluation import multiclass_memory_bytes

    models = 2 if champion else 1
    task = task_of(manifest)
    if task == MULTICLASS:
        c = len(classes_of(manifest))
        return (multiclass_memory_bytes(n_rows, c, n_models=models, n_bootstrap=n_bootstrap)
                + 8 * n_rows * min(c, _COLUMNS_A_READ) * models)
    if task == REGRESSION:
        return 8 * 15 * n_rows * models
    return None


def check_memory(manifest: Manifest, n_rows: int, *, champion: bool, n_bootstrap: int,
                 limit_mb: int) -> None:
    """Refuse, before any work, a metrics step that would need more than ``limit_mb`` MiB.

    Raises
    ------
    EvaluationTooLarge
        Naming the task, the classes, the rows, the estimate and the setting.
    """
    need = metrics_memory_bytes(manifest, n_rows, champion=champion, n_bootstrap=n_bootstrap)
    if need is None or need <= limit_mb * 2**20:
        return
    task = task_of(manifest)
    what = f"{len(classes_of(manifest))}-class model" if task == MULTICLASS else f"{task} model"
    raise EvaluationTooLarge(
        f"the metrics of the {what} {manifest.name!r} on {n_rows:,} rows"
        f"{' with its champion' if champion else ''} need about {need / 2**20:,.0f} MiB, over "
        f"MODELGATE_EVAL_MEMORY_LIMIT_MB={limit_mb}; raise the limit or evaluate fewer rows")


def read_scores(ctx: Context, partitions: Sequence[tuple[str, str, int, str]],
                columns: Sequence[str], work: Path) -> pa.Table:
    """The named columns of every partition's scores, concatenated in partition order."""
    parts = []
    for i, (_, _, _, key) in enumerate(partitions):
        path = ctx.store.download(key, work / f"scores-{i:05d}.parquet")
        parts.append(pq.read_table(path, columns=list(columns)))
        path.unlink()
    return pa.concat_tables(parts)


# probability columns read from a scores file at a time: 64 x 8 bytes a row, not all C
_COLUMNS_A_READ = 64


def read_multiclass_scores(ctx: Context, partitions: Sequence[tuple[str, str, int, str]],
                           manifest: Manifest, champion: bool, work: Path
                           ) -> tuple[pa.Table, list[npt.NDArray[np.float64]]]:
    """The label column of every partition's scores and each model's ``[N, C]`` float64
    probabilities, column-major (as :func:`_proba` builds them), filled a few columns at a
    time: the ``N x C`` scored columns are held once, not also as a table (at 1000 classes
    on 100k rows, 800 MB)."""
    label = manifest.label.column
    c = len(classes_of(manifest))
    paths = [ctx.store.download(key, work / f"scores-{i:05d}.parquet")
             for i, (_, _, _, key) in enumerate(partitions)]
    files = [pq.ParquetFile(path) for path in paths]
    n = sum(f.metadata.num_rows for f in files)
    prefixes = ["", *([CHAMPION_PREFIX] if champion else [])]
    out = [np.empty((c, n)) for _ in prefixes]
    offset, labels = 0, []
    for f in files:
        rows = f.metadata.num_rows
        labels.append(f.read(columns=[label]))
        for prefix, matrix in zip(prefixes, out, strict=True):
            for start in range(0, c, _COLUMNS_A_READ):
                names = [f"{prefix}proba_{k}" for k in range(start, min(c, start + _COLUMNS_A_READ))]
                part = f.read(columns=names)
                for k, name in enumerate(names, start):
                    matrix[k, offset:offset + rows] = part.column(name).to_numpy()
        offset += rows
    for path in paths:
        path.unlink()
    return pa.concat_tables(labels), [m.T for m in out]


def _proba(table: pa.Table, n_classes: int, prefix: str = "") -> npt.NDArray[np.float64]:
    """The ``[N, C]`` float64 probabilities in column-major order: each class's column, read
    one at a time, is contiguous (the metrics sort each class's column; a row-major matrix
    made that a strided gather and its build a transpose, both slow past ~100 MB)."""
    out = np.empty((n_classes, table.num_rows))
    for k in range(n_classes):
        out[k] = table.column(f"{prefix}proba_{k}").to_numpy()
    return out.T


def score_columns(manifest: Manifest, champion: bool) -> list[str]:
    """The columns :func:`compute_metrics` reads: label, predictions (and the champion's)."""
    own = prediction_columns(manifest)
    return [manifest.label.column, *own, *([CHAMPION_PREFIX + c for c in own] if champion else [])]


def compute_metrics(table: pa.Table, manifest: Manifest, *, champion: bool,
                    n_bootstrap: int, seed: int,
                    probabilities: Sequence[npt.NDArray[np.float64]] | None = None
                    ) -> tuple[Any, Any | None, Any | None]:
    """The candidate's report, the champion's and the paired comparison (None without one);
    a multiclass model's probabilities from ``probabilities`` (candidate's, champion's) when
    given (:func:`read_multiclass_scores`), else from the table's columns."""
    from modelgate.evaluation import (
        compare_regression,
        evaluate_and_compare_multiclass,
        evaluate_multiclass,
        evaluate_regression,
    )

    y = targets(table, manifest)
    options = {"n_bootstrap": n_bootstrap, "seed": seed}
    if task_of(manifest) == REGRESSION:
        new = table.column("prediction").to_numpy()
        if not champion:
            return evaluate_regression(y, new, **options), None, None
        old = table.column(CHAMPION_PREFIX + "prediction").to_numpy()
        return (evaluate_regression(y, new, **options), evaluate_regression(y, old, **options),
                compare_regression(y, new, old, **options))
    classes = classes_of(manifest)
    new = _proba(table, len(classes)) if probabilities is None else probabilities[0]
    if not champion:
        return evaluate_multiclass(y, new, classes=classes, **options), None, None
    old = (_proba(table, len(classes), CHAMPION_PREFIX) if probabilities is None else
           probabilities[1])
    return evaluate_and_compare_multiclass(y, new, old, classes=classes, **options)


def compute_fairness(table: pa.Table, manifest: Manifest, *, min_group_size: int,
                     include_small_groups: bool, n_bootstrap: int, seed: int) -> dict[str, Any]:
    """Per sensitive feature: one-vs-rest reports per class (multiclass) or the group errors
    and their gaps (regression)."""
    from modelgate.fairness.multiclass import multiclass_fairness_report
    from modelgate.fairness.regression import regression_fairness_report

    y = targets(table, manifest)
    predicted = table.column("prediction").to_numpy()
    options = {"min_group_size": min_group_size, "include_small_groups": include_small_groups,
               "n_bootstrap": n_bootstrap, "seed": seed}
    reports: dict[str, Any] = {}
    for feature in manifest.sensitive_features:
        groups = table.column(feature).to_pandas().to_numpy(dtype=object)
        if task_of(manifest) == REGRESSION:
            reports[feature] = regression_fairness_report(y, predicted, groups,
                                                          sensitive_feature=feature, **options)
        else:
            reports[feature] = multiclass_fairness_report(
                y, predicted.astype(np.int64), groups, classes=classes_of(manifest),
                sensitive_feature=feature, **options)
    return reports


def small_groups(report: Any) -> list[str]:
    """Groups flagged small in a report of any task (logged by the fairness step)."""
    if hasattr(report, "classes"):  # multiclass: every class has the same groups
        return [g.group for g in report.classes[0].report.table.groups if g.small_group]
    groups = report.groups if hasattr(report, "groups") else report.table.groups
    return [g.group for g in groups if g.small_group]
