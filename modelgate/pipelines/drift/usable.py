"""Sampled live rows the model cannot score are set aside and counted, not fatal (issue #39.3).

The scorer refuses a whole file for one value missing in a feature whose manifest does not
allow missing values, or for one infinite number (:mod:`modelgate.onnx.scoring`). For monitoring
that is a finding, not a crash: a surge of missing values is what the quality checks
(:mod:`modelgate.drift.quality`, the ``estimate`` step) exist to report. So the drift run
scores only the rows the scorer accepts and keeps every sampled row in the scored sample, the
set-aside ones with null scores and predictions:

- feature drift reads every row (a missing value is counted as missing, as before), so the
  other features' drift and the missing column's own missing rate stay visible;
- the score's drift, the estimates, ADWIN and attribution read only the scored rows
  (:func:`scored_rows`);
- the run is ``degraded`` with the count per column (``drift_run.rows_set_aside``,
  ``set_aside_reason``). Only a sample with no usable row at all fails the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.onnx.manifest import Feature, Manifest
from modelgate.onnx.scoring import ModelScorer, ScoringError, ScoringRun, score_parquet

__all__ = ["ScoredSample", "score_usable", "scored_rows", "unusable_rows"]


def _column_missing(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: missing (null, or NaN in a float column), and infinite."""
    missing = column.is_null().to_numpy(zero_copy_only=False)
    infinite = np.zeros(len(column), dtype=bool)
    if pa.types.is_floating(column.type):
        values = column.to_numpy(zero_copy_only=False).astype(np.float64)
        missing = missing | np.isnan(values)
        infinite = np.isinf(values)
    return missing, infinite


def unusable_rows(table: pa.Table, features: Sequence[Feature]) -> tuple[np.ndarray, dict[str, str]]:
    """Rows the scorer would refuse, and per column why (a count and what).

    A value missing in a feature without ``allow_missing``, and an infinite number in any
    numeric feature. Columns the table lacks are left to the scorer (a schema error fails the
    whole interval, as before).

    Examples
    --------
    >>> t = pa.table({"x": [1.0, None, float("nan"), float("inf")], "c": ["a", None, "b", "b"]})
    >>> from modelgate.onnx.manifest import Feature
    >>> features = [Feature("x", "numeric"), Feature("c", "categorical", allow_missing=True)]
    >>> bad, why = unusable_rows(t, features)
    >>> bad.tolist(), why
    ([False, True, True, True], {'x': '2 missing, 1 infinite'})
    """
    bad = np.zeros(table.num_rows, dtype=bool)
    why: dict[str, str] = {}
    for feature in features:
        name = feature.name
        if name not in table.column_names:
            continue
        missing, infinite = _column_missing(table.column(name))
        if feature.allow_missing:
            missing = np.zeros_like(missing)
        parts = [f"{int(n)} {what}" for n, what in ((missing.sum(), "missing"),
                                                    (infinite.sum(), "infinite")) if n]
        if parts:
            why[name] = ", ".join(parts)
            bad |= missing | infinite
    return bad, why


@dataclass(frozen=True, slots=True)
class ScoredSample:
    """The scorer's output aligned with every sampled row (set-aside rows null)."""

    scores: pa.Table
    run: ScoringRun
    rows_set_aside: int
    reason: str | None  # e.g. "60 of 600 sampled rows set aside unscored: x1: 60 missing"


def score_usable(scorer: ModelScorer, sample: pa.Table, manifest: Manifest, work: Path, *,
                 id_column: str | None, keep_columns: list[str]) -> ScoredSample:
    """Score the rows of ``sample`` the scorer accepts; the output has one row per sampled row.

    Raises
    ------
    ScoringError
        When no sampled row can be scored (the run then fails with this reason).
    """
    bad, why = unusable_rows(sample, manifest.features)
    n_bad = int(bad.sum())
    shown = "; ".join(f"{column}: {text}" for column, text in why.items())
    if n_bad == sample.num_rows:
        raise ScoringError(f"none of the {sample.num_rows} sampled rows can be scored ({shown}); "
                           "nothing usable in this interval")
    keep = np.flatnonzero(~bad)
    pq.write_table(sample.take(pa.array(keep)) if n_bad else sample, work / "sample.parquet")
    run = score_parquet(scorer, work / "sample.parquet", work / "scored.parquet",
                        id_column=id_column, keep_columns=keep_columns)
    scores = pq.read_table(run.output_path)
    if n_bad:
        position = np.full(sample.num_rows, -1, dtype=np.int64)
        position[keep] = np.arange(keep.size)
        index = pa.array(position, mask=position < 0)
        scores = pa.table({name: scores.column(name).take(index) for name in scores.column_names})
        if id_column:  # the id of every row, scored or not
            scores = scores.set_column(scores.column_names.index(id_column), id_column,
                                       sample.column(id_column))
    reason = (f"{n_bad} of {sample.num_rows} sampled rows set aside unscored: {shown}"
              if n_bad else None)
    return ScoredSample(scores, run, n_bad, reason)


def scored_rows(frame: Any) -> Any:
    """The rows of a scored-sample frame that were scored (``__prediction__`` not null).

    >>> import pandas as pd
    >>> len(scored_rows(pd.DataFrame({"__prediction__": [1.0, None, 0.0]})))
    2
    """
    if "__prediction__" not in frame.columns:
        return frame
    return frame[frame["__prediction__"].notna()]
