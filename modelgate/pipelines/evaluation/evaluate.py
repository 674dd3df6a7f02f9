"""The evaluation pipeline, one function per step; the DAG and the CLI call the same steps.

Each step reads what it needs from the object store or the database and returns ids or
object keys, never data frames. Object keys are deterministic in the run key, so a
re-run overwrites instead of adding. Step results that later steps need are stored as
pickles under ``runs/evaluation/<run key>/`` (our own bucket, written by our own code:
that is the trust boundary for unpickling).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import os
import pickle
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from modelgate.logsafe import one_line
from modelgate.onnx.manifest import Manifest
from modelgate.onnx.scoring import ScoringRun, open_session, score_parquet, settings_from_os_environ
from modelgate.pipelines import index_page, refusals
from modelgate.pipelines.context import Context, load_registered_model, safe_key_part
from modelgate.pipelines.evaluation import attempts, model_tasks, partitions, policy_provenance
from modelgate.pipelines.evaluation.fairness_records import driving_text, fairness_records
from modelgate.pipelines.evaluation.run_keys import evaluation_run_key
from modelgate.pipelines.payloads import RunRefDict
from modelgate.pipelines.report_keys import evaluation_report_key
from modelgate.store import models, runs

if TYPE_CHECKING:  # annotations only: the steps import the cores where they compute
    from modelgate.evaluation.gate import GateDecision
    from modelgate.evaluation.metric_results import ComparisonReport, PairedComparison, PerformanceReport
    from modelgate.evaluation.multiclass import MulticlassReport
    from modelgate.evaluation.policy import Policy
    from modelgate.evaluation.regression import RegressionReport
    from modelgate.evaluation.sufficient import EvaluationStatistics
    from modelgate.fairness.group_scores import GroupScoreTable

log = logging.getLogger("modelgate.evaluate")


class EvaluationBlocked(RuntimeError):
    """The promotion gate blocked the candidate; the message lists each breach."""


@dataclass(frozen=True, slots=True)
class RunRef:
    """What one step hands to the next: the run's id and key (small, XCom-friendly)."""

    evaluation_run_id: int
    run_key: str

    def prefix(self) -> str:
        return f"runs/evaluation/{safe_key_part(self.run_key)}"

    def as_dict(self) -> RunRefDict:
        return {"evaluation_run_id": self.evaluation_run_id, "run_key": self.run_key}


def put_pickle(ctx: Context, key: str, value: object) -> str:
    ctx.store.put_bytes(key, pickle.dumps(value, protocol=5), content_type="application/octet-stream")
    return key


def get_pickle(ctx: Context, key: str) -> Any:
    return pickle.loads(ctx.store.get_bytes(key))  # noqa: S301 - our own bucket, see module doc


def _candidate(ctx: Context, *, model_name: str, version: str, dataset_uri: str,
               run_key: str, promote: bool) -> models.ModelVersionRow:
    """The registered version; a refusal (unknown version; for a run that would promote, a
    stage other than candidate or production) is recorded first. Without ``promote`` any
    version, archived or retired too, may be evaluated for comparison."""
    try:
        candidate = models.get(ctx.db_url, model_name, version)
        if promote and candidate.stage not in ("candidate", "production"):
            raise models.RegistryError(
                f"model {model_name!r} version {version!r} is {candidate.stage!r}; only a candidate "
                "can be evaluated for promotion (without --promote it can be evaluated for comparison)"
            )
    except models.RegistryError as exc:
        runs.record_refusal(ctx.db_url, run_key=run_key, model_name=model_name, version=version,
                            dataset_uri=dataset_uri, reason=one_line(f"{type(exc).__name__}: {exc}"))
        raise
    return candidate


def prepare(ctx: Context, *, model_name: str, version: str, dataset_uri: str, run_key: str,
            policy_path: str | None = None, promote: bool = False,
            allow_looser_policy: bool = False) -> RunRef:
    """Look the candidate (and the production champion) up and open the run row.

    ``run_key`` is the caller's key (the DAG run, or the CLI's data and policy hashes); the
    run's key adds the model's identity (:func:`evaluation_run_key`) and the row pins the
    archive sha256. Runs of the same model left ``running`` without a heartbeat for
    ``MODELGATE_STALE_RUN_MINUTES`` are marked ``abandoned``. The policy is validated here
    too, so a malformed one fails the run before any scoring, and stored with the run: the
    ``decide`` step applies exactly that policy even if its files change meanwhile. Its
    provenance is stored on the run row and its attempt
    (:mod:`~modelgate.pipelines.evaluation.policy_provenance`); a run that will ``promote`` under a
    policy looser than the model's own or than the version's previous decided attempt's
    (:mod:`~modelgate.pipelines.evaluation.attempts`) fails here
    (:class:`~modelgate.pipelines.evaluation.policy_provenance.LooserPolicyRefused`) unless
    ``allow_looser_policy``. A dataset that cannot be one (empty, missing here, a control
    character) and malformed ONNX Runtime settings are refused after the candidate is found,
    recorded as a refusal
    (:func:`~modelgate.pipelines.refusals.check_dataset_uri`), before any run row exists.
    """
    candidate = _candidate(ctx, model_name=model_name, version=version, dataset_uri=dataset_uri,
                           run_key=run_key, promote=promote)
    refusals.check_evaluation_inputs(ctx, model_name=model_name, version=version,
                                     dataset_uri=dataset_uri, run_key=run_key)
    champion = models.get_production(ctx.db_url, model_name)
    champion_id = None
    if champion is not None and champion.model_version_id != candidate.model_version_id:
        champion_id = champion.model_version_id
    key = evaluation_run_key(run_key, candidate, champion)
    abandoned = runs.abandon_stale_runs(ctx.db_url, model_name, by_run_key=key,
                                        stale_minutes=ctx.settings.stale_run_minutes)
    if abandoned:
        log.warning("marked evaluation run(s) %s of %s abandoned: no heartbeat for %d min",
                    abandoned, model_name, ctx.settings.stale_run_minutes)
        _rebuild_index(ctx, model_name)
    try:
        run_id = runs.start_evaluation_run(
            ctx.db_url, run_key=key, model_version_id=candidate.model_version_id,
            champion_version_id=champion_id, dataset_uri=dataset_uri,
            archive_sha256=candidate.archive_sha256,
        )
    except runs.RunKeyConflict as exc:  # the other run's row stays as it is
        runs.record_refusal(ctx.db_url, run_key=key, model_name=model_name, version=version,
                            dataset_uri=dataset_uri, reason=failure_reason(exc))
        raise
    ref = RunRef(run_id, key)
    try:
        log.info("evaluation run %d (%s): %s v%s against %s", run_id, key, model_name, version,
                 "no champion" if champion_id is None else f"champion v{champion.version}")  # type: ignore[union-attr]
        if champion_id is not None:  # compared on the same terms only (task, classes)
            model_tasks.check_champion(candidate.manifest, champion.manifest)  # type: ignore[union-attr]
        task = model_tasks.task_of(candidate.manifest)
        policy, policy_sha = load_policy_for_run(policy_path, model_name, task=task)
        model_tasks.check_policy_classes(policy, candidate.manifest)
        _record_policy(ctx, ref, policy, policy_path, model_name, task, promote=promote,
                       allow_looser=allow_looser_policy, sha256=policy_sha,
                       model_version_id=candidate.model_version_id)
        # decide applies this checked policy, not whatever the file holds by then
        put_pickle(ctx, policy_key(ref), CheckedPolicy(policy, policy_sha))
    except BaseException as exc:  # Ctrl-C and SIGTERM too: the row exists, so it must say failed
        fail(ctx, ref, exc)
        raise
    return ref


def _record_policy(ctx: Context, ref: RunRef, policy: Any, policy_path: str | None,
                   model_name: str, task: str, *, promote: bool, allow_looser: bool,
                   sha256: str, model_version_id: int) -> None:
    """Store the attempt's policy provenance; refuse a promotion under a policy looser than
    the model's own or than the version's previous decided attempt's."""
    from modelgate.evaluation.policy import default_policy_path

    own = load_policy_for_run(None, model_name, task=task)[0] if policy_path else policy
    before = attempts.changes_from_previous(ctx, model_version_id, ref.evaluation_run_id, policy)
    stored = policy_provenance.provenance(
        policy, own, ad_hoc=policy_path, model_file=model_policy_path(model_name),
        default_file=default_policy_path(task), allow_looser=allow_looser, sha256=sha256,
        previous=before.previous, changes=before.changes, looser_than_previous=before.looser)
    runs.record_policy(ctx.db_url, ref.evaluation_run_id, stored)
    if stored.looser:
        log.warning("evaluation run %d: %s%s", ref.evaluation_run_id,
                    policy_provenance.policy_line(stored),
                    " (promotion under it allowed)" if allow_looser else "")
    policy_provenance.check_promotion(stored, promote=promote)


def _score_one(ctx: Context, row: models.ModelVersionRow, data: Path, out: Path,
               keep: list[str]) -> ScoringRun:
    model = load_registered_model(ctx, row, out.parent)
    scorer = open_session(model, settings_from_os_environ())
    return score_parquet(scorer, data, out, keep_columns=keep)


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
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    found = partitions.list_sized(ctx.store, run.dataset_uri)  # one listing, with sizes
    log.info("evaluation run %d: %d file(s)", ref.evaluation_run_id, len(found))
    if not run.dataset_uri.startswith("s3://"):  # local footers are cheap: refuse before scoring
        model_tasks.check_memory(_candidate_row(ctx, run).manifest, partitions.local_rows(dict(found)),
                                    champion=run.champion_version_id is not None,
                                    n_bootstrap=N_BOOTSTRAP, limit_mb=ctx.settings.eval_memory_limit_mb)
    return partitions.batch_by_size(found)  # small files, local or s3://, scored together


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


@dataclass(frozen=True, slots=True)
class MergedStatistics:
    """The merged statistics of every partition, and the partitions in order."""

    statistics: EvaluationStatistics | None  # None unless binary
    partitions: tuple[tuple[str, str, int, str], ...]  # (name, uri, rows, scores key)
    group_scores: tuple[GroupScoreTable, ...] = ()  # one per sensitive feature


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
    candidate = _candidate_row(ctx, run)
    manifest = candidate.manifest
    keep = list(dict.fromkeys([manifest.label.column, *manifest.sensitive_features]))
    held_out = _read_columns(data, keep)
    if held_out is not None:
        check_held_out(held_out, manifest)
    scored = _score_one(ctx, candidate, data, work / "candidate.parquet", keep)
    champion_path = champion_threshold = None
    if run.champion_version_id is not None:
        champion = _model_row(ctx, run.champion_version_id)
        champion_path = _score_one(ctx, champion, data, work / "champion.parquet", []).output_path
        champion_threshold = champion.manifest.threshold
    statistics, group_scores = None, ()  # multiclass and regression keep the scored columns
    if model_tasks.task_of(manifest) == model_tasks.BINARY:
        statistics, group_scores = _summarise(scored.output_path, champion_path, manifest,
                                              champion_threshold, work / "scores.parquet")
    else:
        model_tasks.join_champion(scored.output_path, champion_path, work / "scores.parquet")
    scores_key = f"{ref.prefix()}/scores/part-{index:05d}.parquet"
    ctx.store.put_file(scores_key, work / "scores.parquet", content_type="application/vnd.apache.parquet")
    return PartitionResult(index, partitions.partition_name(run.dataset_uri, partition_uri),
                           partition_uri, scored.rows, scored.seconds, scored.provider,
                           scored.input_fingerprint, scores_key, statistics,
                           scored.provider_reason, scored.tf32_allowed, group_scores,
                           partitions.member_fingerprints(run.dataset_uri, fetched))


def _read_columns(data: Path, columns: list[str]) -> pa.Table | None:
    """The named columns of a parquet file, or None when it cannot be read or lacks one
    (scoring then names the problem with its own, file-specific message)."""
    try:
        if not set(columns) <= set(pq.read_schema(data).names):
            return None
        return pq.read_table(data, columns=columns)
    except (pa.ArrowException, OSError):
        return None


def _summarise(candidate_path: Path, champion_path: Path | None, manifest: Manifest,
               champion_threshold: float | None, out: Path) -> Any:
    """Mergeable statistics of one partition's scores, a batch at a time, and per sensitive
    feature its group score table (per-group ROC AUC); the scores (with the champion's beside
    the candidate's) end up in ``out``."""
    from modelgate.evaluation import sufficient
    from modelgate.fairness.group_scores import group_score_table_from_codes

    champion = (pq.ParquetFile(champion_path).iter_batches(STATS_BATCH_ROWS, columns=["score", "prediction"])
                if champion_path is not None else None)
    parts: list[Any] = []
    group_scores: list[tuple[Any, ...]] = []
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
            groups = {f: _group_codes(table.column(f)) for f in manifest.sensitive_features}
            y, score = labels_from_scores(table, manifest), table.column("score").to_numpy()
            parts.append(sufficient.collect(
                y, score, threshold=manifest.threshold, champion_score=champion_score,
                champion_threshold=champion_threshold, groups=groups))
            group_scores.append(tuple(group_score_table_from_codes(f, y, score, labels, codes)
                                      for f, (labels, codes) in groups.items()))
            parts = parts if len(parts) < 16 else [sufficient.merge(parts)]
            group_scores = group_scores if len(group_scores) < 16 else [
                _merge_group_scores(group_scores)]
            if champion is not None:  # the champion's columns join the candidate's scores
                writer = writer or pq.ParquetWriter(out, table.schema)
                writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    if champion is None:
        os.replace(candidate_path, out)
    return sufficient.merge(parts), _merge_group_scores(group_scores)


def _group_codes(column: pa.ChunkedArray) -> tuple[tuple[str, ...], Any]:
    """A sensitive column's group labels and per-row codes (``encode_groups``): a string column
    through its arrow dictionary, one label per distinct value, not one Python object per row."""
    from modelgate.fairness.disaggregate import encode_groups, encode_groups_from_codes

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        encoded = pc.dictionary_encode(column.combine_chunks())  # the rows' own values only
        return encode_groups_from_codes(encoded.dictionary.to_numpy(zero_copy_only=False),
                                        encoded.indices.fill_null(-1).to_numpy())
    return encode_groups(column.to_pandas().to_numpy(dtype=object))


def _merge_group_scores(parts: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Merge each sensitive feature's group score tables over the parts (partitions, batches)."""
    from modelgate.fairness.group_scores import merge_group_scores

    return tuple(merge_group_scores(tables) for tables in zip(*parts, strict=True))


def merge_partitions(ctx: Context, ref: RunRef, keys: list[str]) -> str:
    """Merge the partitions' statistics (in partition order) and record the scoring."""
    from modelgate.evaluation import sufficient

    results: list[PartitionResult] = [get_pickle(ctx, k) for k in keys]
    if [r.index for r in results] != list(range(len(results))):
        raise ValueError(f"partition results must be 0..{len(results) - 1} in order; got "
                         f"{[r.index for r in results]!r}")
    binary = all(r.statistics is not None for r in results)
    statistics = sufficient.merge([r.statistics for r in results]) if binary else None
    group_scores = _merge_group_scores([r.group_scores for r in results]) if binary else ()
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
                              group_scores)
    return put_pickle(ctx, f"{ref.prefix()}/statistics.pkl", merged)


def _model_row(ctx: Context, model_version_id: int) -> models.ModelVersionRow:
    return models.get_by_id(ctx.db_url, model_version_id)


def _candidate_row(ctx: Context, run: runs.EvaluationRunRow) -> models.ModelVersionRow:
    """The run's model version, checked against the archive sha256 pinned on the run row.

    Every step reads the manifest through here, so all steps of one run see one manifest.
    """
    row = _model_row(ctx, run.model_version_id)
    if run.archive_sha256 is not None and row.archive_sha256 != run.archive_sha256:
        raise models.RegistryError(
            f"evaluation run {run.evaluation_run_id} pinned archive sha256 {run.archive_sha256}, "
            f"but {row.model_name!r} v{row.version} now has {row.archive_sha256}")
    return row


FAIL_RECORD_ATTEMPTS = 3


def failure_reason(exc: BaseException) -> str:
    """One line: the exception's type and message, control characters escaped.

    >>> failure_reason(KeyboardInterrupt())
    'KeyboardInterrupt: interrupted'
    >>> print(failure_reason(ValueError("bad\\nline")))
    ValueError: bad\\nline
    """
    return one_line(f"{type(exc).__name__}: {str(exc) or 'interrupted'}")


def beat(ctx: Context, ref: RunRef) -> None:
    """Keep the run's heartbeat (``run_step`` calls this every minute while a step works)."""
    runs.beat(ctx.db_url, ref.evaluation_run_id)


def fail(ctx: Context, ref: RunRef, exc: BaseException) -> None:
    """Record a failed run with a one-line reason (type and message, no data rows); when the
    run's attempt stored its decision already, the failure is recorded beside it and the
    decision stands (:func:`~modelgate.store.runs.fail_evaluation_run`).

    Each attempt opens a fresh connection (the one that failed may be the cause); if every
    attempt fails the error is logged and the caller's exception is left to propagate: the
    row stays ``running`` and the next run of the model marks it ``abandoned``. The model's
    index page is rebuilt so it no longer lists the run.
    """
    import time

    from modelgate.store.db import DatabaseError

    reason = failure_reason(exc)
    log.error("evaluation run %d failed: %s", ref.evaluation_run_id, reason)
    for attempt in range(1, FAIL_RECORD_ATTEMPTS + 1):
        try:
            runs.fail_evaluation_run(ctx.db_url, ref.evaluation_run_id, reason)
            break
        except DatabaseError as db_exc:
            log.error("could not record the failure of evaluation run %d (attempt %d/%d): %s",
                      ref.evaluation_run_id, attempt, FAIL_RECORD_ATTEMPTS, failure_reason(db_exc))
            if attempt == FAIL_RECORD_ATTEMPTS:
                return
            time.sleep(0.5 * attempt)
    try:
        row = _model_row(ctx, runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id).model_version_id)
    except (DatabaseError, LookupError):
        return
    _rebuild_index(ctx, row.model_name)


def _rebuild_index(ctx: Context, model_name: str) -> None:
    """Rebuild the model's index page after a state change; a failure here is only logged."""
    try:
        index_page.write_model_index(ctx, model_name)
    except Exception as exc:  # noqa: BLE001 - the run's state is recorded; the page is derived
        log.error("could not rebuild the index page of %s: %s", model_name, failure_reason(exc))


# --- metrics -----------------------------------------------------------------------------

N_BOOTSTRAP = 1000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True, slots=True)
class MetricsResult:
    candidate: PerformanceReport | MulticlassReport | RegressionReport
    champion: PerformanceReport | MulticlassReport | RegressionReport | None  # same kind, same rows
    comparison: ComparisonReport | PairedComparison | None  # paired deltas
    distinct_scores: int | None = None  # rows of the candidate's merged score table (binary)
    auc_error_bound: float = 0.0  # 0: AUC exact; else the largest |reported - exact|
    task: str = "binary_classification"


def labels_from_scores(table: pa.Table, manifest: Manifest) -> Any:
    """0/1 labels from the label column; a missing or non-binary label is an error naming it."""
    from modelgate.evaluation.labels import model_labels

    return model_labels(model_tasks.label_values(table, manifest).to_numpy(), manifest.to_dict())


# Group labels are stored in full (fairness_group is keyed by their sha256) but one longer than
# this is not a group name: it is refused before any scoring so no report is written for it.
MAX_GROUP_LABEL_CHARS = 1000


def check_held_out(table: pa.Table, manifest: Manifest) -> None:
    """Labels and sensitive-group labels, checked before any work is done on the rows."""
    if model_tasks.task_of(manifest) == model_tasks.BINARY:
        labels_from_scores(table, manifest)
    else:
        model_tasks.targets(table, manifest)
    for feature in manifest.sensitive_features:
        lengths = {len(str(v)) for v in table.column(feature).unique().to_pylist() if v is not None}
        if lengths and max(lengths) > MAX_GROUP_LABEL_CHARS:
            raise ValueError(
                f"sensitive feature {feature!r} has a group label of {max(lengths):,} characters; "
                f"group labels may have at most {MAX_GROUP_LABEL_CHARS:,}")


def load_statistics(ctx: Context, ref: RunRef) -> MergedStatistics:
    merged: MergedStatistics = get_pickle(ctx, f"{ref.prefix()}/statistics.pkl")
    return merged


def compute_metrics(ctx: Context, ref: RunRef) -> str:
    """Performance metrics of the candidate (and champion, paired) with bootstrap intervals,
    from the merged statistics (exact point metrics; multinomial bootstrap over the counts)."""
    from modelgate.evaluation import performance

    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    manifest = _candidate_row(ctx, run).manifest  # pinned archive
    if model_tasks.task_of(manifest) != model_tasks.BINARY:
        return _compute_task_metrics(ctx, ref, manifest, champion=run.champion_version_id is not None)
    statistics = load_statistics(ctx, ref).statistics
    assert statistics is not None  # a binary run's partitions always carry their statistics
    summary = performance.performance_from_statistics(statistics, n_bootstrap=N_BOOTSTRAP,
                                                      seed=BOOTSTRAP_SEED)
    log.info("metrics on %d rows with %d bootstrap resamples over %d count cells; %d distinct "
             "scores, AUC %s", statistics.n, N_BOOTSTRAP, len(statistics.bootstrap.cells),
             summary.distinct_scores, "exact" if summary.auc_error_bound == 0 else
             f"within {summary.auc_error_bound:.2e} (scores on a grid)")
    result = MetricsResult(summary.candidate, summary.champion, summary.comparison,
                           summary.distinct_scores, summary.auc_error_bound)
    return put_pickle(ctx, f"{ref.prefix()}/metrics.pkl", result)


def _compute_task_metrics(ctx: Context, ref: RunRef, manifest: Manifest, *,
                          champion: bool) -> str:
    """Multiclass or regression metrics from the partitions' scored columns, concatenated."""
    task = model_tasks.task_of(manifest)
    scored = load_statistics(ctx, ref).partitions
    model_tasks.check_memory(manifest, sum(p[2] for p in scored), champion=champion,
                                n_bootstrap=N_BOOTSTRAP, limit_mb=ctx.settings.eval_memory_limit_mb)
    with ctx.attempt_scratch("evaluation", ref.run_key, "metrics") as work:
        table = model_tasks.read_scores(ctx, scored, model_tasks.score_columns(manifest, champion),
                                           work)
    candidate, champion_report, comparison = model_tasks.compute_metrics(
        table, manifest, champion=champion, n_bootstrap=N_BOOTSTRAP, seed=BOOTSTRAP_SEED)
    log.info("%s metrics on %d rows with %d bootstrap resamples%s", task, table.num_rows,
             N_BOOTSTRAP, " (paired with the champion)" if champion else "")
    result = MetricsResult(candidate, champion_report, comparison, task=task)
    return put_pickle(ctx, f"{ref.prefix()}/metrics.pkl", result)


# --- explanations ------------------------------------------------------------------------

SHAP_GLOBAL_ROWS = 50
SHAP_SEED = 0
# Rows drawn (seeded, across partitions) for SHAP: the background, the global sample and
# the rows the waterfalls are chosen from all come from this sample, so memory does not
# grow with the dataset.
SHAP_SAMPLE_ROWS = 5000


@dataclass(frozen=True, slots=True)
class ExplainResult:
    importance: tuple[tuple[str, float], ...]
    global_rows: int
    waterfalls: tuple[tuple[str, str, bytes], ...]  # (row label, why chosen, png)
    algorithm: str
    background_rows: int
    evaluations_per_row: int
    max_additivity_error: float
    rows_explained: int
    # estimator's standard error of each importance (same order; 0 when exact), and the
    # largest standard error of any value explained
    importance_se: tuple[float, ...] = ()
    max_standard_error: float = 0.0
    # beeswarm and per-group SHAP of the global sample (shap_report.ShapSummaries)
    summaries: Any = None
    # the space the values explain ("probability", "logit", "margin", "value"), and why
    # the graph's SHAP values were not read from its trees (shap_trees.TreeRoute.reason)
    output: str = ""
    algorithm_note: str = ""


def explain(ctx: Context, ref: RunRef) -> str:
    """SHAP values through batched ONNX Runtime calls: global importance and waterfalls."""
    import numpy as np

    from modelgate.pipelines import shap_trees
    from modelgate.pipelines.evaluation import shap_report
    from modelgate.reports.explain import global_importance, importance_standard_errors, select_rows
    from modelgate.reports.waterfall import waterfall_png

    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = _candidate_row(ctx, run)
    task = model_tasks.task_of(row.manifest)
    columns = (["score", "prediction"] if task == model_tasks.BINARY
               else model_tasks.prediction_columns(row.manifest))
    sensitive, label = list(row.manifest.sensitive_features), row.manifest.label.column
    with ctx.attempt_scratch("explain", ref.run_key) as work:
        loaded = load_registered_model(ctx, row, work)
        scorer = open_session(loaded, settings_from_os_environ())
        features = list(scorer.feature_names)
        data, table, names = _sample_rows(ctx, load_statistics(ctx, ref), features, label, work,
                                          id_column=row.manifest.id_column,
                                          columns=[c for c in dict.fromkeys([*columns, *sensitive])
                                                   if c != label])
    rng = np.random.default_rng(SHAP_SEED)
    in_background = np.sort(rng.choice(len(data), min(100, len(data)), replace=False))
    background = data.iloc[in_background]
    in_sample = np.sort(rng.choice(len(data), min(SHAP_GLOBAL_ROWS, len(data)), replace=False))
    sample = data.iloc[in_sample]
    # exact from the trees when the graph is a tree ensemble whose output they reproduce
    # on every row of the sample and the background
    route = shap_trees.tree_route(loaded.onnx_bytes, scorer,
                                  data.iloc[np.union1d(in_sample, in_background)][features])
    explainer = _explainer(scorer, task, features, route)
    overall = _explain_with_progress(explainer, sample, background)
    explained = None  # multiclass: each row explains its predicted class; one summary per class
    if task == model_tasks.MULTICLASS:
        classes = model_tasks.classes_of(row.manifest)
        explained = [classes[int(k)] for k in table.column("prediction").take(in_sample).to_pylist()]
    summaries = shap_report.summarise(
        overall, {s: table.column(s).take(in_sample).to_pylist() for s in sensitive},
        explained_class=explained)
    if task == model_tasks.BINARY:
        y = labels_from_scores(table, row.manifest)
        scores, preds = table.column("score").to_numpy(), table.column("prediction").to_numpy()
        chosen = select_rows(scores, y, preds, seed=SHAP_SEED)
        labels = [f"{names[i]} (score {scores[i]:.3f}, label {int(y[i])})" for i in chosen.indices]
    else:
        chosen, labels = _chosen_rows(table, row.manifest, names)
    # the waterfalls' rows are computed the way the global importance was
    picked = _explain_with_progress(explainer, data.iloc[chosen.indices], background,
                                    algorithm=overall.algorithm)
    titles = [f"{names[i]}: {', '.join(reasons)}" for i, reasons in zip(chosen.indices, chosen.reasons,
                                                                        strict=True)]
    if task == model_tasks.MULTICLASS:
        classes, predicted = model_tasks.classes_of(row.manifest), table.column("prediction").to_numpy()
        titles = shap_report.multiclass_titles(titles, [classes[predicted[i]] for i in chosen.indices],
                                               space=picked.output)
    waterfalls = tuple((label, ", ".join(reasons), waterfall_png(picked, k, title=title))
                       for k, (reasons, label, title) in enumerate(zip(chosen.reasons, labels, titles,
                                                                       strict=True)))
    gaps = [np.abs(e.base_values + e.values.sum(axis=1) - e.model_output).max() for e in (overall, picked)]
    importance = global_importance(overall)
    errors = importance_standard_errors(overall)
    result = ExplainResult(
        importance=importance, global_rows=len(sample), waterfalls=waterfalls,
        algorithm=overall.algorithm, background_rows=len(background),
        evaluations_per_row=overall.budget.evaluations_per_row,
        max_additivity_error=float(max(gaps)), rows_explained=len(sample) + len(chosen.indices),
        importance_se=tuple(errors[f] for f, _ in importance),
        max_standard_error=float(max(e.standard_errors.max(initial=0.0) for e in (overall, picked))),
        summaries=summaries, output=overall.output, algorithm_note=route.reason,
    )
    log.info("explained %d rows (%s, %d evaluations/row, background %d), max additivity error %.2e, "
             "max standard error %.2e", result.rows_explained, result.algorithm,
             result.evaluations_per_row, result.background_rows, result.max_additivity_error,
             result.max_standard_error)
    return put_pickle(ctx, f"{ref.prefix()}/explain.pkl", result)


def _explainer(scorer: Any, task: str, features: list[str], route: Any = None) -> Any:
    """``explainer(rows, background, seed)`` -> Explanation of what a report explains per
    task: the positive class's probability (binary), each row's predicted class's
    probability (multiclass) or the predicted value (regression); exact tree values (in
    the trees' margin space) when ``route`` has trees."""
    from modelgate.pipelines import shap_trees
    from modelgate.reports.explain import explain as shap_explain
    from modelgate.reports.explain import explain_class

    def explainer(rows: Any, background: Any, seed: int, algorithm: str = "auto") -> Any:
        if route is not None and route.trees is not None and algorithm in (
                "auto", "tree_interventional", "linear_interventional"):
            return shap_trees.explain_with_trees(route, scorer, rows, background, seed=seed)[0]
        options: dict[str, Any] = {"features": features, "seed": seed, "algorithm": algorithm}
        if task == model_tasks.REGRESSION:
            return shap_explain(scorer.predict_value, rows, background, output="value", **options)
        if task == model_tasks.MULTICLASS:
            return explain_class(scorer.predict_class_proba, rows, background, **options)[0]
        return shap_explain(scorer.predict_proba, rows, background, **options)

    return explainer


def _chosen_rows(table: pa.Table, manifest: Manifest, names: list[str]) -> tuple[Any, list[str]]:
    """Rows of a multiclass or regression model worth a waterfall (largest and smallest
    error, random), and how each is labelled; the error is ``1 - p(true class)`` or
    ``|prediction - label|``."""
    import numpy as np

    from modelgate.reports.explain import select_error_rows

    y = model_tasks.targets(table, manifest)
    pred = table.column("prediction").to_numpy()
    if model_tasks.task_of(manifest) == model_tasks.REGRESSION:
        chosen = select_error_rows(np.abs(pred - y), seed=SHAP_SEED)
        return chosen, [f"{names[i]} (prediction {pred[i]:.4g}, label {y[i]:.4g})"
                        for i in chosen.indices]
    classes = model_tasks.classes_of(manifest)
    proba = np.column_stack([table.column(f"proba_{k}").to_numpy() for k in range(len(classes))])
    chosen = select_error_rows(1.0 - proba[np.arange(len(y)), y], seed=SHAP_SEED)
    score = table.column("score").to_numpy()
    return chosen, [f"{names[i]} (explained: predicted class {classes[pred[i]]!s} p={score[i]:.3f}, "
                    f"label {classes[y[i]]!s})" for i in chosen.indices]


def _sample_rows(ctx: Context, merged: MergedStatistics, features: list[str], label: str,
                 work: Path, *, id_column: str | None = None,
                 columns: Sequence[str] = ("score", "prediction")) -> tuple[Any, pa.Table, list[str]]:
    """Features (a data frame) and scores (``label`` and ``columns`` of the scores) of a
    seeded sample of rows across partitions.

    Also returns how a report names each row: by the manifest's ``id_column`` when the data
    has it (``row_id 8812``), else by its position (``row 17``; ``row <partition>:17`` when
    there are several partitions).
    """
    import pyarrow as pa

    counts = [rows for _, _, rows, _ in merged.partitions]
    offsets = partitions.sample_positions(counts, SHAP_SAMPLE_ROWS, SHAP_SEED)
    frames, scored, names = [], [], []
    for i, ((name, uri, _, scores_key), where) in enumerate(zip(merged.partitions, offsets, strict=True)):
        if not len(where):
            continue
        part = work / f"part-{i:05d}"
        dataset = partitions.fetch_partition(ctx, uri, part)
        frames.append(partitions.read_rows(dataset, features, where))
        scores_path = ctx.store.download(scores_key, part / "scores.parquet")
        scored.append(partitions.read_rows(scores_path, [label, *columns], where))
        if id_column and id_column in pq.read_schema(dataset).names:
            ids = partitions.read_rows(dataset, [id_column], where).column(id_column).to_pylist()
            names += [f"{id_column} {v}" for v in ids]
        else:
            names += [f"row {o}" if len(counts) == 1 else f"row {name}:{o}" for o in where]
        shutil.rmtree(part, ignore_errors=True)
    return pa.concat_tables(frames).to_pandas(), pa.concat_tables(scored), names


SHAP_CHUNK_ROWS = 10


def _explain_with_progress(explainer: Any, rows: Any, background: Any, algorithm: str = "auto") -> Any:
    """Explain ``rows`` a chunk at a time with ``explainer(rows, background, seed, algorithm)``,
    logging rows/s and an ETA; one merged Explanation. Every chunk runs the algorithm the first
    chose (a smaller last chunk could otherwise fit the exact budget when the others did not)."""
    import dataclasses
    import time

    import numpy as np

    parts: list[Any] = []
    start = time.perf_counter()
    for first in range(0, len(rows), SHAP_CHUNK_ROWS):
        parts.append(explainer(rows.iloc[first:first + SHAP_CHUNK_ROWS], background,
                               SHAP_SEED + first, parts[0].algorithm if parts else algorithm))
        done, elapsed = min(first + SHAP_CHUNK_ROWS, len(rows)), time.perf_counter() - start
        log.info("SHAP: %d/%d rows (%.1f rows/s, ETA %.0f s)", done, len(rows), done / elapsed,
                 (len(rows) - done) * elapsed / done, extra={"progress": (done, len(rows), "rows")})
    return dataclasses.replace(parts[0], **{
        name: np.concatenate([getattr(p, name) for p in parts])
        for name in ("values", "base_values", "model_output", "feature_values", "standard_errors")})


# --- fairness ----------------------------------------------------------------------------

# Groups below the minimum group size (MODELGATE_MIN_GROUP_SIZE, default 30) are reported and
# flagged but kept out of the gaps the gate judges: a gap driven by a handful of rows is noise,
# not evidence. Each gap lists the groups it left out (FairnessEstimate.excluded_groups) and the
# report flags them.
INCLUDE_SMALL_GROUPS_IN_GAPS = False


def compute_fairness(ctx: Context, ref: RunRef) -> str:
    """One disaggregated table and the gaps per sensitive feature, with bootstrap intervals,
    from the partitions' merged group counts."""
    from modelgate.fairness.disaggregate import table_from_counts
    from modelgate.fairness.group_scores import with_group_auc
    from modelgate.fairness.metrics import fairness_report_from_table

    manifest = _candidate_row(ctx, runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)).manifest
    if model_tasks.task_of(manifest) != model_tasks.BINARY:
        return _compute_task_fairness(ctx, ref, manifest)
    reports = {}
    merged = load_statistics(ctx, ref)
    assert merged.statistics is not None  # a binary run's partitions always carry their statistics
    scores = {t.feature: t for t in merged.group_scores}
    for counted in merged.statistics.groups:
        feature = counted.feature
        table = table_from_counts(counted.labels, counted.counts,
                                  min_group_size=ctx.settings.min_group_size)
        if feature in scores:  # statistics pickled before group score tables existed have none
            table = with_group_auc(table, scores[feature])
        reports[feature] = fairness_report_from_table(
            table, sensitive_feature=feature,
            include_small_groups=INCLUDE_SMALL_GROUPS_IN_GAPS,
            n_bootstrap=N_BOOTSTRAP, seed=BOOTSTRAP_SEED,
        )
        small = [g.group for g in reports[feature].table.groups if g.small_group]
        if small:
            log.warning("sensitive feature %r: groups smaller than %d rows are reported and "
                        "flagged, and left out of the gaps: %s",
                        feature, ctx.settings.min_group_size, small)
    return put_pickle(ctx, f"{ref.prefix()}/fairness.pkl", reports)


def _compute_task_fairness(ctx: Context, ref: RunRef, manifest: Manifest) -> str:
    """Multiclass (one-vs-rest per class) or regression (group errors) fairness from the
    partitions' scored columns, concatenated."""
    columns = [manifest.label.column, "prediction", *manifest.sensitive_features]
    with ctx.attempt_scratch("evaluation", ref.run_key, "fairness") as work:
        table = model_tasks.read_scores(ctx, load_statistics(ctx, ref).partitions,
                                           list(dict.fromkeys(columns)), work)
    reports = model_tasks.compute_fairness(
        table, manifest, min_group_size=ctx.settings.min_group_size,
        include_small_groups=INCLUDE_SMALL_GROUPS_IN_GAPS, n_bootstrap=N_BOOTSTRAP,
        seed=BOOTSTRAP_SEED)
    for feature, report in reports.items():
        small = model_tasks.small_groups(report)
        if small:
            log.warning("sensitive feature %r: groups smaller than %d rows are reported and "
                        "flagged, and left out of the gaps: %s",
                        feature, ctx.settings.min_group_size, small)
    return put_pickle(ctx, f"{ref.prefix()}/fairness.pkl", reports)


# --- the gate ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CheckedPolicy:
    """The policy ``prepare`` checked (all layers merged) and the sha256 of its sources."""

    policy: Policy
    sha256: str


def policy_key(ref: RunRef) -> str:
    return f"{ref.prefix()}/policy.pkl"


def load_checked_policy(ctx: Context, ref: RunRef) -> CheckedPolicy:
    """The policy stored with the run by :func:`prepare`."""
    key = policy_key(ref)
    if not ctx.store.exists(key):
        raise LookupError(f"evaluation run {ref.evaluation_run_id} has no checked policy at {key!r}; "
                          "run its first step (prepare) again")
    checked: CheckedPolicy = get_pickle(ctx, key)
    return checked


@dataclass(frozen=True, slots=True)
class DecisionResult:
    decision: GateDecision
    policy_sha256: str
    had_champion: bool


def policy_dir() -> Path:
    """Where per-model policy overrides live: ``MODELGATE_POLICY_DIR``, else the ``policies/``
    shipped with modelgate (installed or in the checkout)."""
    import os

    from modelgate.resources import shipped_dir

    return Path(os.environ.get("MODELGATE_POLICY_DIR") or shipped_dir("policies"))


def model_policy_path(model_name: str) -> Path:
    """The model's own policy file (it may not exist): ``<policy dir>/<model name>.yaml``."""
    return policy_dir() / f"{safe_key_part(model_name)}.yaml"


def load_policy_for_run(policy_path: str | None, model_name: str, *,
                        task: str = "binary_classification") -> tuple[Any, str]:
    """The task's default policy, then ``<policy dir>/<model name>.yaml``, then
    ``policy_path``, each merged over the previous one; returns the policy and a sha256 of
    all its sources.

    Raises
    ------
    PolicyError
        When a policy file is missing, unreadable or malformed, or the merged policy names a
        metric or gap the task does not report.
    """
    import hashlib

    from modelgate.evaluation.policy import (
        PolicyError,
        check_policy_for_task,
        default_policy,
        default_policy_path,
        load_policy,
        merge_policies,
    )

    digest = hashlib.sha256()
    _hash_policy_source(digest, "default", default_policy_path(task).read_bytes())
    policy = default_policy(task)
    layers = [("model_file", model_policy_path(model_name))]
    if policy_path:
        if not Path(policy_path).is_file():  # a refusal (PolicyError): a retry finds no file either
            raise PolicyError(f"policy file {policy_path!r} does not exist")
        layers.append(("ad_hoc", Path(policy_path)))
    for role, path in layers:
        if path.is_file():
            try:
                _hash_policy_source(digest, role, path.read_bytes())
                layer = load_policy(path)
            except (OSError, UnicodeDecodeError) as exc:
                raise PolicyError(f"policy file {str(path)!r} cannot be read: {exc}") from exc
            policy = merge_policies(policy, layer)
            log.info("policy override %s applied", path)
    check_policy_for_task(policy, task)
    return policy, digest.hexdigest()


def _hash_policy_source(digest: Any, role: str, content: bytes) -> None:
    """Add one policy source to the run's policy hash as ``role``, its length and its bytes:
    framed so the hash is injective (with plain concatenation, bytes moved from the model's
    file to the ad-hoc file, or a source present in another role, would hash alike)."""
    digest.update(f"{role}\n{len(content)}\n".encode())
    digest.update(content)


def decide(ctx: Context, ref: RunRef) -> str:
    """Apply the promotion policy ``prepare`` checked to the results (pure decision; nothing
    is promoted here)."""
    from modelgate.evaluation.gate import decide as gate_decide

    _candidate_row(ctx, runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id))  # pinned archive
    checked = load_checked_policy(ctx, ref)
    policy, policy_sha = checked.policy, checked.sha256
    metrics_result: MetricsResult = get_pickle(ctx, f"{ref.prefix()}/metrics.pkl")
    fairness_reports = get_pickle(ctx, f"{ref.prefix()}/fairness.pkl")
    champion = metrics_result.champion.by_name() if metrics_result.champion else None
    deltas = metrics_result.comparison.by_name() if metrics_result.comparison else None
    decision = gate_decide(metrics_result.candidate.by_name(), champion, fairness_reports,
                           policy, deltas=deltas)
    # each blocking or warning check's line: "blocked: breached" reads apart from
    # "blocked: inconclusive at n = 228", with the interval and the group counts
    log.info("gate decision for run %d: %s", ref.evaluation_run_id, decision.summary)
    result = DecisionResult(decision, policy_sha, champion is not None)
    return put_pickle(ctx, f"{ref.prefix()}/decision.pkl", result)


def enforce_gate(ctx: Context, ref: RunRef) -> None:
    """Raise :class:`EvaluationBlocked` listing each breach when the stored decision blocked."""
    record = runs.get_gate_decision(ctx.db_url, ref.evaluation_run_id)
    if record is None:
        raise LookupError(f"evaluation run {ref.evaluation_run_id} has no stored gate decision")
    passed, summary = record
    if not passed:
        raise EvaluationBlocked(summary)


def promote(ctx: Context, ref: RunRef) -> str:
    """Promote a passed candidate: it becomes production, the champion is archived."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    if run.status != "passed":
        raise EvaluationBlocked(f"evaluation run {run.evaluation_run_id} is {run.status!r}, not passed")
    row = _candidate_row(ctx, run)
    if row.stage == "production":
        return f"{row.model_name} v{row.version} is already in production"
    # checked when the run started too; this guards a promote task run on its own
    policy_provenance.check_promotion(runs.get_policy(ctx.db_url, run.evaluation_run_id),
                                      promote=True)
    from modelgate.pipelines.drift.monitor import reference_on_promotion

    # the sketch first: a version that cannot be monitored is not promoted
    sketched = reference_on_promotion(ctx, row) is not None
    archived = models.promote(ctx.db_url, run.model_version_id,
                              expected_champion_id=run.champion_version_id,
                              evaluation_run_id=run.evaluation_run_id)
    text = f"promoted {row.model_name} v{row.version} to production"
    if archived is not None:
        text += f"; archived version id {archived}"
    if sketched:
        text += "; built its drift reference sketch"
    log.info(text)
    return text


# --- report and store --------------------------------------------------------------------

def report_key(row: models.ModelVersionRow, run: runs.EvaluationRunRow) -> str:
    """The report's object key for this attempt of the run (:mod:`.report_keys`): the report
    step and the store step read the same run row, so they agree."""
    return evaluation_report_key(row.model_name, row.version, run_id=run.evaluation_run_id,
                                 attempt=run.attempt, started_at=run.started_at)


def _metric_rows(result: MetricsResult) -> tuple[Any, ...]:
    """The candidate's metrics beside the champion's and the paired deltas, from their records."""
    from modelgate.reports.views import MetricRow

    deltas = {} if result.comparison is None else {
        r["metric_name"]: r for r in (d.to_record() for d in result.comparison.deltas)}
    rows = []
    for m in (m.to_record() for m in result.candidate.metrics):
        if None in (m["value"], m["ci_lower"], m["ci_upper"]):
            continue  # undefined metrics are reported by the gate with their reason
        d = deltas.get(m["metric_name"], {})
        rows.append(MetricRow(m["metric_name"], m["value"], m["ci_lower"], m["ci_upper"],
                              d.get("champion"), d.get("value"), d.get("ci_lower"), d.get("ci_upper"),
                              m["n"]))
    return tuple(rows)


def shown_verdict(check: dict[str, Any]) -> str:
    """A gate check's verdict as the report shows it: ``inconclusive`` as it is (whether it
    blocked or warned is in the decision), a breach or failure that only warned as ``warn``.

    >>> [shown_verdict({"verdict": v, "effect": e})
    ...  for v, e in (("breach", "warn"), ("breach", "block"), ("inconclusive", "warn"))]
    ['warn', 'breach', 'inconclusive']
    """
    if check["effect"] == "warn" and check["verdict"] != "inconclusive":
        return "warn"
    return str(check["verdict"])


def _nan_if_none(value: float | None) -> float:
    """A record's undefined number (None) as the views' NaN, which pages show as ``n/a``."""
    return math.nan if value is None else value


def _fairness_sections(reports: dict[str, Any], checks: Sequence[dict[str, Any]]) -> tuple[Any, ...]:
    """One report section per sensitive feature; a multiclass model's per class (one-vs-rest).

    ``checks`` are the gate's check records: a gap shows its fairness check's limit and verdict
    (``skipped`` when no check judged it)."""
    from modelgate.reports.views import ErrorGroupRow, FairnessSection, GapRow, GroupRow

    judged = {(c["sensitive_feature"], c["metric_name"]): c for c in checks if c["kind"] == "fairness"}
    nan = _nan_if_none
    sections = []
    for s in fairness_records(reports):
        gaps = []
        for g in s.gaps:
            check = judged.get((s.sensitive_feature, g["metric_name"]))
            gaps.append(GapRow(g["metric_name"], nan(g["value"]), nan(g["ci_lower"]), nan(g["ci_upper"]),
                               None if check is None else check["upper"],
                               "skipped" if check is None else shown_verdict(check),
                               driving_text(g, s.rate_groups or s.error_groups)))
        rates = tuple(GroupRow(g["group_label"], g["n"], nan(g["base_rate"]), nan(g["selection_rate"]),
                               nan(g["tpr"]), nan(g["fpr"]), nan(g["ppv"]), nan(g["fnr"]),
                               g["is_small_group"], g["positives"], g["negatives"],
                               g["predicted_positives"], nan(g["accuracy"]), nan(g["roc_auc"]),
                               nan(g["roc_auc_error_bound"]), g.get("tpr_ci_lower"),
                               g.get("tpr_ci_upper"), g.get("fpr_ci_lower"), g.get("fpr_ci_upper"))
                       for g in s.rate_groups)
        errors = tuple(ErrorGroupRow(g["group_label"], g["n"], nan(g["mae"]), nan(g["rmse"]),
                                     nan(g["mean_prediction"]), nan(g["mean_error"]), g["is_small_group"])
                       for g in s.error_groups)
        title = (f"{s.sensitive_feature} — class {s.class_label} (one-vs-rest)" if s.one_vs_rest
                 else s.sensitive_feature)
        sections.append(FairnessSection(title, rates, tuple(gaps), errors))
    return tuple(sections)


def _gate_view(decision: dict[str, Any], checks: Sequence[dict[str, Any]]) -> Any:
    """The gate's decision and checks, from their records."""
    from modelgate.reports.views import GateCheckRow, GateView

    rows = tuple(GateCheckRow(c["kind"], c["metric_name"], c["sensitive_feature"], c["threshold_text"],
                              c["observed"], c["ci_lower"], c["ci_upper"], c["n"], shown_verdict(c),
                              c["severity"], c["reason"]) for c in checks)
    return GateView(decision["passed"], decision["summary"], rows)


def render_report(ctx: Context, ref: RunRef) -> str:
    """Render the self-contained HTML report, store it, return a link for people."""
    from modelgate.pipelines.evaluation import shap_report
    from modelgate.reports.html import render_evaluation_report
    from modelgate.reports.views import CalibrationRow, EvaluationReportView, WaterfallImage

    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = _candidate_row(ctx, run)
    metrics_result: MetricsResult = get_pickle(ctx, f"{ref.prefix()}/metrics.pkl")
    fairness_reports = get_pickle(ctx, f"{ref.prefix()}/fairness.pkl")
    shap: ExplainResult = get_pickle(ctx, f"{ref.prefix()}/explain.pkl")
    decided: DecisionResult = get_pickle(ctx, f"{ref.prefix()}/decision.pkl")
    binary = metrics_result.task == model_tasks.BINARY
    calibration = tuple(
        CalibrationRow(**b.to_record()) for b in metrics_result.candidate.calibration.bins
        if b.n > 0) if binary else ()
    checks = [c.to_record() for c in decided.decision.checks]
    view = EvaluationReportView(
        title=f"Evaluation of {row.model_name} v{row.version}", model_name=row.model_name,
        model_version=row.version, model_sha256=row.sha256,
        data_fingerprint=str(run.dataset_sha256), dataset_name=run.dataset_uri,
        run_id=f"{run.evaluation_run_id} ({ref.run_key})",
        created_at=run.started_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        provider=run.provider or "unknown", rows_scored=run.rows_scored or 0,
        metrics=_metric_rows(metrics_result), calibration=calibration,
        fairness=_fairness_sections(fairness_reports, checks),
        shap_importance=shap.importance,
        waterfalls=tuple(WaterfallImage(label, why, png) for label, why, png in shap.waterfalls),
        gate=_gate_view(decided.decision.to_record(), checks),
        drift_context=_drift_context(ctx, row.model_name),
        budget_notes=(f"{shap.algorithm} SHAP, {shap.rows_explained} rows explained "
                      f"({shap.global_rows} for global importance), background {shap.background_rows} "
                      f"rows, " + ("" if shap.algorithm.endswith("_interventional") else
                                   f"{shap.evaluations_per_row} coalitions/row, ") + "max additivity error "
                      f"{shap.max_additivity_error:.1e}, " + _shap_error_note(shap) + "; "
                      + _metrics_note(metrics_result)),
        **policy_provenance.report_fields(runs.get_policy(ctx.db_url, ref.evaluation_run_id)),
        champion_version=(None if run.champion_version_id is None
                          else _model_row(ctx, run.champion_version_id).version),
        **shap_report.report_views(getattr(shap, "summaries", None)),
        shap_output_space=getattr(shap, "output", ""),  # "" on a result pickled before it was kept
    )
    key = report_key(row, run)
    ctx.store.put_bytes(key, render_evaluation_report(view).encode(), content_type="text/html")
    return ctx.store.link(key, expiry_s=ctx.settings.presign_expiry_s)


def _space_words(output: str) -> str:
    """How the report names the space the values explain."""
    return {"logit": "log-odds (margin before the sigmoid), not the probability",
            "margin": "class score (margin before the softmax), not the probability",
            "value": "predicted value"}.get(output, output or "probability")


def _shap_error_note(shap: ExplainResult) -> str:
    """How far off the SHAP values may be, for the report's budget line."""
    if shap.algorithm == "exact":
        return "values exact (every coalition evaluated)"
    if shap.algorithm.endswith("_interventional"):
        model = "trees" if shap.algorithm.startswith("tree") else "linear model"
        return (f"values exact (interventional SHAP read from the graph's {model}), explaining "
                f"the {_space_words(shap.output)}")
    worst = max(zip(shap.importance_se, shap.importance, strict=True), default=None)
    top = (f"; largest on the importance of {worst[1][0]}: mean |SHAP| {worst[1][1]:.4f} "
           f"+/- {worst[0]:.4f}") if worst else ""
    from modelgate.reports.explain import DEFAULT_N_PERMUTATIONS
    from modelgate.reports.explain_errors import interval_words

    return (f"values estimated: largest standard error of a value {shap.max_standard_error:.1e} "
            f"(waterfalls show +/- 1 standard error and hatch values whose "
            f"{interval_words(DEFAULT_N_PERMUTATIONS)} crosses 0; each standard error is pooled "
            "with its row's, so it cannot vanish where the pairs happened to agree)" + top)


def _metrics_note(result: MetricsResult) -> str:
    """How the metrics were computed, for the report's budget line."""
    if result.task == model_tasks.MULTICLASS:
        return ("multiclass: SHAP explains each row's predicted class; fairness is one-vs-rest "
                "per class; metrics exact on every row")
    if result.task == model_tasks.REGRESSION:
        return "regression: SHAP explains the predicted value; metrics exact on every row"
    return ("ROC AUC " + ("exact" if result.auc_error_bound == 0 else
                          f"within {result.auc_error_bound:.1e} (scores pooled on a grid)")
            + f" from {result.distinct_scores} distinct scores")


def _drift_context(ctx: Context, model_name: str) -> str | None:
    """The production model's latest drift status, shown beside a candidate's evaluation."""
    from modelgate.store.summaries import production_drift

    record = production_drift(ctx.db_url, model_name)
    if record is None:
        return None
    version, drifting, status = record.version, record.is_drifting, record.status
    start, end, breached = record.interval_start, record.interval_end, record.n_features_breached
    if status is None:
        return f"Production model v{version}: no drift run recorded yet."
    return (f"Production model v{version} is {'DRIFTING' if drifting else 'not drifting'}; "
            f"latest drift run {start:%Y-%m-%d}..{end:%Y-%m-%d}: {status}"
            f"{f', {breached} feature(s) breached' if breached else ''}.")


def _rows_for_store(result: MetricsResult, fairness_reports: dict[str, Any], shap: ExplainResult,
                    decided: DecisionResult) -> runs.EvaluationRows:
    """Every result's record, with what the result itself does not know beside it."""
    metrics: list[dict[str, Any]] = []
    for role, report in (("candidate", result.candidate), ("champion", result.champion)):
        if report is not None:
            metrics += [{"model_role": role, **m.to_record()} for m in report.metrics]
    if result.comparison is not None:
        metrics += [{"model_role": "delta", **d.to_record()} for d in result.comparison.deltas]
    calibration = [] if result.task != model_tasks.BINARY else [
        {"bin_index": i, **b.to_record()} for i, b in enumerate(result.candidate.calibration.bins)]
    fairness = fairness_records(fairness_reports)
    d = decided.decision
    return runs.EvaluationRows(
        metrics=metrics, calibration=calibration,
        fairness_groups=[g for s in fairness for g in s.group_rows()],
        fairness_metrics=[g for s in fairness for g in s.gap_rows()],
        shap_importance=[{"feature": f, "importance_rank": rank, "mean_abs_shap": v,
                          "mean_abs_shap_se": se}
                         for rank, ((f, v), se) in enumerate(
                             zip(shap.importance, shap.importance_se or [None] * len(shap.importance),
                                 strict=True), start=1)],
        shap_budget={"algorithm": shap.algorithm, "rows_explained": shap.rows_explained,
                     "background_rows": shap.background_rows,
                     "evaluations_per_row": shap.evaluations_per_row,
                     "max_additivity_error": shap.max_additivity_error,
                     "max_standard_error": shap.max_standard_error,
                     # "" on an explain result pickled before the space was kept
                     "output_space": getattr(shap, "output", "") or None},
        gate_checks=[c.to_record() for c in d.checks],
        gate={**d.to_record(), "policy_sha256": decided.policy_sha256,
              "had_champion": decided.had_champion},
    )


def store_results(ctx: Context, ref: RunRef) -> str:
    """Write every result row and the final status in one transaction; return the status.

    A decision is stored once per attempt: a retried step returns the stored one. What
    follows it (gauge, index page) never changes it (:func:`.attempts.after_decision`)."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = _candidate_row(ctx, run)
    decided: DecisionResult = get_pickle(ctx, f"{ref.prefix()}/decision.pkl")
    rows = _rows_for_store(get_pickle(ctx, f"{ref.prefix()}/metrics.pkl"),
                           get_pickle(ctx, f"{ref.prefix()}/fairness.pkl"),
                           get_pickle(ctx, f"{ref.prefix()}/explain.pkl"), decided)
    key = report_key(row, run)
    if not ctx.store.exists(key):
        raise FileNotFoundError(f"report {key!r} is missing; run the report step first")
    status = "passed" if decided.decision.passed else "blocked"
    try:
        runs.write_evaluation_results(ctx.db_url, ref.evaluation_run_id, rows, status=status,
                                      report_key=key, report_uri=ctx.store.uri(key))
        log.info("stored evaluation run %d: %s", ref.evaluation_run_id, status)
    except runs.AttemptDecided:  # a retried store step: the stored decision stands
        stored = runs.get_gate_decision(ctx.db_url, ref.evaluation_run_id)
        status = "passed" if stored is not None and stored[0] else "blocked"
        log.info("evaluation run %d attempt %d already stored its decision: %s",
                 ref.evaluation_run_id, run.attempt, status)
    # the gauge and reports/<model>/index.html: a failure is recorded beside the decision
    attempts.after_decision(ctx, ref.evaluation_run_id, run.attempt, model_name=row.model_name,
                            version=row.version, passed=status == "passed",
                            checks_breached=sum(c.effect != "none" for c in decided.decision.checks))
    return status
