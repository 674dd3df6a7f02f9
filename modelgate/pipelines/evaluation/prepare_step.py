"""The evaluation's ``prepare`` step: the candidate and the champion looked up, the run row
opened, the policy checked and stored with the run, the held-out files' footers checked."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from modelgate.logsafe import one_line
from modelgate.pipelines import refusals
from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import model_tasks
from modelgate.pipelines.evaluation.policy_loading import (
    CheckedPolicy,
    load_policy_for_run,
    policy_key,
    record_policy,
)
from modelgate.pipelines.evaluation.run_keys import evaluation_run_key
from modelgate.pipelines.evaluation.run_refs import RunRef, fail, failure_reason, put_pickle, rebuild_index
from modelgate.store import models, runs

if TYPE_CHECKING:
    from modelgate.evaluation import SegmentPolicy
    from modelgate.onnx.manifest import Manifest

log = logging.getLogger("modelgate.evaluate")


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


def _check_segment_columns(ctx: Context, dataset_uri: str, section: SegmentPolicy | None) -> None:
    """Refuse a segment column that a held-out file lacks or that has too many values now,
    not while scoring; the last check here, the one that reads data (every file's footer,
    then only those columns, stopping early)."""
    from modelgate.pipelines.evaluation.segment_values import refuse_segment_columns
    from modelgate.pipelines.evaluation.segments_step import columns_of

    names = columns_of(section)
    if names:
        refuse_segment_columns(ctx.store, dataset_uri, names)


def _check_held_out_files(ctx: Context, dataset_uri: str, candidate: Manifest,
                          champion: Manifest | None) -> None:
    """Refuse held-out files that scoring would refuse for what their footers say (a column
    missing or of the wrong type, no rows, unreadable), and a run whose metrics would need
    more memory than the limit, now, not after scoring; footers only, no data."""
    from modelgate.pipelines.evaluation.held_out_files import needed_columns, refuse_unusable_files
    from modelgate.pipelines.evaluation.score_step import N_BOOTSTRAP

    rows = refuse_unusable_files(ctx.store, dataset_uri, needed_columns(candidate, champion))
    model_tasks.check_memory(candidate, rows, champion=champion is not None, n_bootstrap=N_BOOTSTRAP,
                             limit_mb=ctx.settings.eval_memory_limit_mb)


def prepare(ctx: Context, *, model_name: str, version: str, dataset_uri: str, run_key: str,
            policy_path: str | None = None, promote: bool = False,
            allow_looser_policy: bool = False, segments: Sequence[str] = (),
            segment_pairs: bool = False) -> RunRef:
    """Look the candidate (and the production champion) up and open the run row.

    ``segments`` (and, with ``segment_pairs``, every pair of the segment columns) are added to
    the policy's ``segments.columns`` before it is checked and stored
    (:func:`modelgate.evaluation.segment_policy.with_segment_columns`), and enter the policy's
    sha256 as its ``segments_param`` source
    (:func:`~modelgate.pipelines.evaluation.policy_loading.load_policy_for_run`).

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
    Held-out files that scoring would refuse for what their footers say (a column of the
    model's missing or of the wrong type, no rows, not parquet, no parquet file at all), and a
    run whose metrics would need more memory than ``MODELGATE_EVAL_MEMORY_LIMIT_MB`` (from the
    footers' row counts, ``s3://`` data too) fail the run here, before any scoring
    (:class:`~modelgate.pipelines.evaluation.held_out_files.HeldOutRefused`,
    :class:`~modelgate.pipelines.evaluation.model_tasks.EvaluationTooLarge`; final): footers
    only, no data (:mod:`~modelgate.pipelines.evaluation.held_out_files`).
    A segment column (one named only in a pair too) that a held-out file lacks, or with more
    distinct values than a segment column may have, fails the run here, before any scoring
    (:class:`~modelgate.pipelines.evaluation.segment_values.SegmentColumnMissing`, naming the
    file and its columns of the closest names;
    :class:`~modelgate.pipelines.evaluation.segments_step.SegmentColumnRefused`; final like the
    other refusals): each file's schema is read from its footer, then the segment columns
    alone, a row group at a time, until the count is over the limit
    (:mod:`~modelgate.pipelines.evaluation.segment_values`).
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
        rebuild_index(ctx, model_name)
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
        policy, policy_sha = load_policy_for_run(policy_path, model_name, task=task,
                                                 segments=segments, segment_pairs=segment_pairs)
        model_tasks.check_policy_classes(policy, candidate.manifest)
        record_policy(ctx, ref, policy, policy_path, model_name, task, promote=promote,
                       allow_looser=allow_looser_policy, sha256=policy_sha,
                       model_version_id=candidate.model_version_id)
        # decide applies this checked policy, not whatever the file holds by then
        put_pickle(ctx, policy_key(ref), CheckedPolicy(policy, policy_sha))
        _check_held_out_files(ctx, dataset_uri, candidate.manifest,
                              champion.manifest if champion_id is not None else None)  # type: ignore[union-attr]
        _check_segment_columns(ctx, dataset_uri, policy.segments)
    except BaseException as exc:  # Ctrl-C and SIGTERM too: the row exists, so it must say failed
        fail(ctx, ref, exc)
        raise
    return ref
