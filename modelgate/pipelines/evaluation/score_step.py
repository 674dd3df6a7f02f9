"""The evaluation's scoring steps: the held-out data listed into partitions, each scored by the
candidate (and the champion) and summarised into mergeable statistics, the summaries merged.

The DAG maps ``score_partition`` over the partitions and ``merge_partitions`` adds them up;
the CLI runs both in one process (:func:`score`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from modelgate.evaluation import collect_statistics, merge_statistics, model_labels
from modelgate.fairness.disaggregate import encode_groups, encode_groups_from_codes
from modelgate.fairness.group_scores import (
    ScoreRanks,
    group_score_table_from_codes,
    merge_group_scores,
    rank_scores,
)
from modelgate.onnx.manifest import Manifest
from modelgate.pipelines.context import Context, load_registered_model
from modelgate.pipelines.evaluation import model_tasks, partitions, segments_step
from modelgate.pipelines.evaluation.held_out_files import HeldOutRefused
from modelgate.pipelines.evaluation.policy_loading import load_checked_policy
from modelgate.pipelines.evaluation.run_refs import RunRef, candidate_row, get_pickle, model_row, put_pickle
from modelgate.store import models, runs

if TYPE_CHECKING:  # annotations only
    from modelgate.evaluation import EvaluationStatistics
    from modelgate.fairness.group_scores import GroupScoreTable
    from modelgate.onnx.scoring import ScoringRun
    from modelgate.pipelines.evaluation.segments_step import SegmentParts

log = logging.getLogger("modelgate.evaluate")


def _score_one(ctx: Context, row: models.ModelVersionRow, data: Path, out: Path,
               keep: list[str], on_batch: Callable[[pa.Table], None] | None = None) -> ScoringRun:
    # The scoring engine (onnx, onnxruntime: seconds) is imported where a model is scored: the
    # merge task and every later step import this module (metrics.pkl's class needs it) and
    # never run a session.
    from modelgate.onnx.scoring import open_session, score_parquet, settings_from_os_environ

    model = load_registered_model(ctx, row, out.parent)
    scorer = open_session(model, settings_from_os_environ())
    return score_parquet(scorer, data, out, keep_columns=keep, on_batch=on_batch)


def score(ctx: Context, ref: RunRef) -> str:
    """Score every partition of the held-out data in this process, then merge (the CLI's path).

    The DAG runs the same two steps with one mapped task per partition:
    :func:`score_partition` then :func:`merge_partitions`.
    """
    uris = list_dataset(ctx, ref)
    keys = [score_partition(ctx, ref, i, uri) for i, uri in enumerate(uris)]
    return merge_partitions(ctx, ref, keys)


def list_dataset(ctx: Context, ref: RunRef) -> list[str]:
    """The held-out dataset's partitions (parquet files), sorted; one mapped task each."""
    return partitions.batch_by_size(list_files(ctx, ref))  # small files, local or s3://, scored together


def list_files(ctx: Context, ref: RunRef) -> list[tuple[str, int]]:
    """The held-out dataset's parquet files, sorted, with their sizes in bytes (one listing);
    a local dataset too large to evaluate in memory is refused here, before anything is scored."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    found = partitions.list_sized(ctx.store, run.dataset_uri)  # one listing, with sizes
    log.info("evaluation run %d: %d file(s)", ref.evaluation_run_id, len(found))
    if not run.dataset_uri.startswith("s3://"):  # local footers are cheap: refuse before scoring
        model_tasks.check_memory(candidate_row(ctx, run).manifest, partitions.local_rows(dict(found)),
                                    champion=run.champion_version_id is not None,
                                    n_bootstrap=N_BOOTSTRAP, limit_mb=ctx.settings.eval_memory_limit_mb)
    return found


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One scored partition: where its scores are and its sufficient statistics."""

    index: int
    name: str
    uri: str
    rows: int
    seconds: float
    provider: str
    sha256: str
    scores_key: str
    statistics: EvaluationStatistics | None  # None unless binary
    provider_reason: str = ""
    tf32_allowed: bool = False
    group_scores: tuple[GroupScoreTable, ...] = ()  # one per sensitive feature
    files: tuple[tuple[str, str], ...] = ()  # a batch of small files: (name, sha256) of each
    segments: SegmentParts | None = None  # binary: the segment columns summarised, else None


@dataclass(frozen=True, slots=True)
class MergedStatistics:
    """The merged statistics of every partition, and the partitions in order."""

    statistics: EvaluationStatistics | None  # None unless binary
    partitions: tuple[tuple[str, str, int, str], ...]  # (name, uri, rows, scores key)
    group_scores: tuple[GroupScoreTable, ...] = ()  # one per sensitive feature
    segments: SegmentParts | None = None  # merged segment statistics and slice counts


# Rows summarised at once when a partition's scores are turned into statistics.
STATS_BATCH_ROWS = 1 << 20


def score_partition(ctx: Context, ref: RunRef, index: int, partition_uri: str) -> str:
    """Verify and score the candidate (and the champion) on one partition; summarise it.

    Stores the partition's scores (label, sensitive columns, ``score``/``prediction`` and,
    with a champion, ``champion_score``/``champion_prediction``) and a pickled
    :class:`PartitionResult` with its mergeable statistics; returns the pickle's key.
    """
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    partitions.check_partition(run.dataset_uri, partition_uri)
    part = f"part-{index:05d}"
    with ctx.attempt_scratch("evaluation", ref.run_key, part) as work:
        result = _score_partition_in(ctx, ref, run, index, partition_uri, work)
    key = put_pickle(ctx, f"{ref.prefix()}/partitions/{part}.pkl", result)
    # Logs identify the data by its hash, never by its rows.
    log.info("evaluation run %d: partition %d scored %d rows of sha256 %s in %.2f s on %s (%s)",
             ref.evaluation_run_id, index, result.rows, result.sha256[:16], result.seconds,
             result.provider, result.provider_reason)
    return key


def _score_partition_in(ctx: Context, ref: RunRef, run: runs.EvaluationRunRow, index: int,
                        partition_uri: str, work: Path) -> PartitionResult:
    """:func:`score_partition`'s work in this attempt's scratch directory ``work``."""
    fetched = partitions.fetch_members(ctx, partition_uri, work)
    data = fetched.path
    candidate = candidate_row(ctx, run)
    manifest = candidate.manifest
    section = load_checked_policy(ctx, ref).policy.segments
    binary = model_tasks.task_of(manifest) == model_tasks.BINARY
    # the other tasks' segments are evaluated from these kept columns (compute_task_segments)
    keep = list(dict.fromkeys([manifest.label.column, *manifest.sensitive_features,
                               *segments_step.columns_of(section)]))
    held_out = _read_columns(data, keep, dictionary=[f for f in manifest.sensitive_features
                                                    if f != manifest.label.column])
    if held_out is not None:
        check_held_out(held_out, manifest)
    del held_out  # the whole partition's columns: not kept while it is scored
    # Without a champion the scores are summarised as they are scored, not read back.
    inline = (_Summary(manifest, section=section) if binary and run.champion_version_id is None
              else None)
    from modelgate.onnx.feeds import UnscorableRows  # pandas: this path scores anyway

    champion_path = champion_threshold = None
    try:
        scored = _score_one(ctx, candidate, data, work / "candidate.parquet", keep,
                            inline.add if inline is not None else None)
        if run.champion_version_id is not None:
            champion = model_row(ctx, run.champion_version_id)
            champion_path = _score_one(ctx, champion, data, work / "champion.parquet",
                                       []).output_path
            champion_threshold = champion.manifest.threshold
    except UnscorableRows as exc:  # final (a refusal): the same rows fail on every try
        name = partitions.partition_name(run.dataset_uri, partition_uri)
        raise UnscorableRows(f"held-out partition {name!r}: {exc}") from None
    statistics, group_scores, segments = None, (), None  # multiclass and regression keep the scores
    if inline is not None:
        os.replace(scored.output_path, work / "scores.parquet")
        statistics, group_scores, segments = inline.result()
    elif binary:
        statistics, group_scores, segments = _summarise(scored.output_path, champion_path, manifest,
                                                        champion_threshold, work / "scores.parquet",
                                                        section)
    else:
        model_tasks.join_champion(scored.output_path, champion_path, work / "scores.parquet")
    scores_key = f"{ref.prefix()}/scores/part-{index:05d}.parquet"
    ctx.store.put_file(scores_key, work / "scores.parquet", content_type="application/vnd.apache.parquet")
    return PartitionResult(index, partitions.partition_name(run.dataset_uri, partition_uri),
                           partition_uri, scored.rows, scored.seconds, scored.provider,
                           scored.input_fingerprint, scores_key, statistics,
                           scored.provider_reason, scored.tf32_allowed, group_scores,
                           partitions.member_fingerprints(run.dataset_uri, fetched), segments)


def _read_columns(data: Path, columns: list[str], dictionary: Sequence[str] = ()) -> pa.Table | None:
    """The named columns of a parquet file (string columns among ``dictionary`` as dictionary
    arrays: one copy of each distinct value), or None when it cannot be read or lacks one
    (scoring then names the problem with its own, file-specific message)."""
    try:
        schema = pq.read_schema(data)
        if not set(columns) <= set(schema.names):
            return None
        coded = [c for c in dictionary if c in columns and (
            pa.types.is_string(schema.field(c).type) or pa.types.is_large_string(schema.field(c).type))]
        return pq.read_table(data, columns=columns, read_dictionary=coded or None)
    except (pa.ArrowException, OSError):
        return None


class _Summary:
    """Mergeable statistics of one partition's scores and, per sensitive feature, its group
    score table (per-group ROC AUC), summarised :data:`STATS_BATCH_ROWS` rows at a time.

    :meth:`add` takes the scores in row order in tables of any size (``score_parquet``'s
    ``on_batch``) and cuts them into the batches reading the scores file back would give, so
    the statistics are the same either way.
    """

    def __init__(self, manifest: Manifest, champion_threshold: float | None = None, *,
                 section: Any = None) -> None:
        self.manifest, self.champion_threshold = manifest, champion_threshold
        self.section = section  # the policy's segments: section (its columns are summarised)
        self.parts: list[Any] = []
        self.group_scores: list[tuple[Any, ...]] = []
        self.segments: list[Any] = []
        self._pending: list[pa.Table] = []
        self._rows = 0

    def add(self, table: pa.Table) -> None:
        """The next rows' scores (with the label and sensitive columns)."""
        self._pending.append(table)
        self._rows += table.num_rows
        while self._rows >= STATS_BATCH_ROWS:
            whole = pa.concat_tables(self._pending)
            self.collect(whole.slice(0, STATS_BATCH_ROWS))
            rest = whole.slice(STATS_BATCH_ROWS)
            self._pending, self._rows = [rest], rest.num_rows

    def collect(self, table: pa.Table, champion_score: Any = None) -> None:
        """Summarise one batch (with the champion's scores of the same rows, if any)."""
        manifest = self.manifest
        groups = {f: _group_codes(table.column(f)) for f in manifest.sensitive_features}
        y, score = labels_from_scores(table, manifest), table.column("score").to_numpy()
        ranks = _ranks(score)  # one hash of the scores serves every table below
        self.parts.append(collect_statistics(
            y, score, threshold=manifest.threshold, champion_score=champion_score,
            champion_threshold=self.champion_threshold, groups=groups, ranks=ranks))
        self.group_scores.append(tuple(group_score_table_from_codes(f, y, score, labels, codes,
                                                                    ranks=ranks)
                                       for f, (labels, codes) in groups.items()))
        self.segments.append(segments_step.collect_batch(table, y, score, manifest.threshold,
                                                         self.section))
        if len(self.segments) >= 16:
            self.segments = [segments_step.merge_parts(self.segments)]
        if len(self.parts) >= 16:
            self.parts = [merge_statistics(self.parts)]
        if len(self.group_scores) >= 16:
            self.group_scores = [_merge_group_scores(self.group_scores)]

    def result(self) -> tuple[Any, tuple[Any, ...], Any]:
        """The merged statistics and group score tables of every row added or collected."""
        if self._rows:
            self.collect(pa.concat_tables(self._pending))
            self._pending, self._rows = [], 0
        return (merge_statistics(self.parts), _merge_group_scores(self.group_scores),
                segments_step.merge_parts(self.segments))


def _ranks(score: Any) -> ScoreRanks | None:
    """The scores' ranks, or None when they hold NaN (the statistics then refuse them)."""
    try:
        return rank_scores(score)
    except ValueError:
        return None


def _summarise(candidate_path: Path, champion_path: Path | None, manifest: Manifest,
               champion_threshold: float | None, out: Path, section: Any = None) -> Any:
    """:class:`_Summary` of one partition's scores read back from ``candidate_path``; the
    scores (with the champion's beside the candidate's) end up in ``out``."""
    champion = (pq.ParquetFile(champion_path).iter_batches(STATS_BATCH_ROWS, columns=["score", "prediction"])
                if champion_path is not None else None)
    summary = _Summary(manifest, champion_threshold, section=section)
    writer: pq.ParquetWriter | None = None
    try:
        for batch in pq.ParquetFile(candidate_path).iter_batches(STATS_BATCH_ROWS):
            table = pa.Table.from_batches([batch])
            champion_score = None
            if champion is not None:
                other = next(champion)
                table = table.append_column("champion_score", other.column(0))
                table = table.append_column("champion_prediction", other.column(1))
                champion_score = other.column(0).to_numpy()
            summary.collect(table, champion_score)
            if champion is not None:  # the champion's columns join the candidate's scores
                writer = writer or pq.ParquetWriter(out, table.schema)
                writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    if champion is None:
        os.replace(candidate_path, out)
    return summary.result()


def _group_codes(column: pa.ChunkedArray) -> tuple[tuple[str, ...], Any]:
    """A sensitive column's group labels and per-row codes (``encode_groups``): a string column
    through its arrow dictionary, one label per distinct value, not one Python object per row."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        encoded = pc.dictionary_encode(column.combine_chunks())  # the rows' own values only
        return encode_groups_from_codes(encoded.dictionary.to_numpy(zero_copy_only=False),
                                        encoded.indices.fill_null(-1).to_numpy())
    return encode_groups(column.to_pandas().to_numpy(dtype=object))


def _merge_group_scores(parts: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Merge each sensitive feature's group score tables over the parts (partitions, batches)."""
    return tuple(merge_group_scores(tables) for tables in zip(*parts, strict=True))


def merge_partitions(ctx: Context, ref: RunRef, keys: list[str]) -> str:
    """Merge the partitions' statistics (in partition order) and record the scoring."""
    results: list[PartitionResult] = [get_pickle(ctx, k) for k in keys]
    if [r.index for r in results] != list(range(len(results))):
        raise ValueError(f"partition results must be 0..{len(results) - 1} in order; got "
                         f"{[r.index for r in results]!r}")
    binary = all(r.statistics is not None for r in results)
    statistics = merge_statistics([r.statistics for r in results]) if binary else None
    group_scores = _merge_group_scores([r.group_scores for r in results]) if binary else ()
    # partitions pickled before segments existed have no such attribute
    segments = segments_step.merge_parts([getattr(r, "segments", None) for r in results])
    rows = statistics.n if statistics is not None else sum(r.rows for r in results)
    fingerprint = partitions.dataset_fingerprint(  # a batch counts as its files
        [pair for r in results for pair in (r.files or ((r.name, r.sha256),))])
    seconds = sum(r.seconds for r in results)
    runs.record_scoring(
        ctx.db_url, ref.evaluation_run_id, provider=", ".join(sorted({r.provider for r in results})),
        rows=rows, seconds=seconds, dataset_sha256=fingerprint,
        scores_uri=ctx.store.uri(f"{ref.prefix()}/scores"),
        provider_reason="; ".join(dict.fromkeys(r.provider_reason for r in results)),
        tf32_allowed=any(r.tf32_allowed for r in results),
    )
    log.info("evaluation run %d: merged %d partition(s), %d rows, dataset sha256 %s",
             ref.evaluation_run_id, len(results), rows, fingerprint[:16])
    merged = MergedStatistics(statistics, tuple((r.name, r.uri, r.rows, r.scores_key) for r in results),
                              group_scores, segments)
    return put_pickle(ctx, f"{ref.prefix()}/statistics.pkl", merged)


N_BOOTSTRAP = 1000


BOOTSTRAP_SEED = 0


def labels_from_scores(table: pa.Table, manifest: Manifest) -> Any:
    """0/1 labels from the label column; a missing or non-binary label is an error naming it."""
    return model_labels(model_tasks.label_values(table, manifest).to_numpy(), manifest.to_dict())


# Group labels are stored in full (fairness_group is keyed by their sha256) but one longer than
# this is not a group name: it is refused before any scoring so no report is written for it.
MAX_GROUP_LABEL_CHARS = 1000


def check_held_out(table: pa.Table, manifest: Manifest) -> None:
    """Labels and sensitive-group labels, checked before any work is done on the rows.

    Raises
    ------
    HeldOutRefused
        Naming the column: a missing label, a label the model's task cannot take, a group
        label too long. Final (no retry): the next try would read the same rows.
    """
    try:
        if model_tasks.task_of(manifest) == model_tasks.BINARY:
            labels_from_scores(table, manifest)
        else:
            model_tasks.targets(table, manifest)
    except HeldOutRefused:
        raise
    except ValueError as exc:  # the labels' own message names the column and what came
        raise HeldOutRefused(str(exc)) from exc
    for feature in manifest.sensitive_features:
        lengths = {len(str(v)) for v in table.column(feature).unique().to_pylist() if v is not None}
        if lengths and max(lengths) > MAX_GROUP_LABEL_CHARS:
            raise HeldOutRefused(
                f"sensitive feature {feature!r} has a group label of {max(lengths):,} characters; "
                f"group labels may have at most {MAX_GROUP_LABEL_CHARS:,}")


def load_statistics(ctx: Context, ref: RunRef) -> MergedStatistics:
    merged: MergedStatistics = get_pickle(ctx, f"{ref.prefix()}/statistics.pkl")
    return merged
