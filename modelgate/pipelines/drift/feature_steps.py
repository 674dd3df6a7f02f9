"""The drift-monitoring pipeline's steps, one function per DAG task (their order:
:mod:`modelgate.pipelines.drift.runner`; the ``report`` step is :mod:`.report`).

Per data interval ``[start, end)`` (Airflow's data interval, never the clock): sample the
live rows of the interval, score them with the production model, compare every feature and
the score distribution with the cached reference sketch, feed the labels that have arrived
(for this or earlier intervals) to ADWIN (:mod:`.concept`), render the report and store
everything at once. A partition that cannot be used is quarantined (:func:`quarantine`) and
the run, ``degraded``, goes on with the rest.
"""

from __future__ import annotations

import datetime as dt
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.drift import CategoricalReference, DriftThresholds, NumericReference, summarise
from modelgate.gauges import emit as emit_metrics
from modelgate.gauges import evidence_metrics
from modelgate.json_input import check_json_value
from modelgate.onnx.manifest import Manifest
from modelgate.onnx.scoring import open_session, score_parquet, settings_from_os_environ
from modelgate.pipelines import index_page, stored_pickles
from modelgate.pipelines.context import Context, fetch_dataset, load_registered_model, safe_key_part
from modelgate.pipelines.drift import estimation as drift_estimation
from modelgate.pipelines.drift import joint as drift_joint
from modelgate.pipelines.drift import segments as drift_segments
from modelgate.pipelines.drift import usable as drift_usable
from modelgate.pipelines.drift import verdict as drift_verdict
from modelgate.pipelines.drift.attempts import unjudged_status
from modelgate.pipelines.drift.columns import build_references_from_parquet, drift_from_parquet
from modelgate.pipelines.drift.monitor_checks import MonitorConfigError, check_exists
from modelgate.pipelines.drift.names import SCORE_FEATURE, shown_feature
from modelgate.pipelines.drift.partitions import (
    BadPartition,
    live_table,
    partition_dates,
    partition_files,
    partition_name,
)
from modelgate.pipelines.drift.sample import interval_seed, sample_path
from modelgate.pipelines.drift.scratch import discard_run_scratch
from modelgate.pipelines.payloads import DriftRefDict, LiveSample, MonitorSpecDict, PreparedRun
from modelgate.pipelines.tasks import airflow_will_retry
from modelgate.store import drift_runs, models, monitors

log = logging.getLogger("modelgate.drift")

DEFAULT_SAMPLE_SIZE = 5000
class DriftBreached(RuntimeError):
    """Data drift breached the thresholds; the message lists each breached feature."""


@dataclass(frozen=True, slots=True)
class DriftRef:
    drift_run_id: int
    model_version_id: int
    model_name: str
    version: str
    interval_start: str  # ISO 8601, UTC
    interval_end: str

    def start(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.interval_start)

    def end(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.interval_end)

    def prefix(self) -> str:
        return (f"runs/drift/{safe_key_part(self.model_name)}/{safe_key_part(self.version)}/"
                f"{safe_key_part(self.interval_start)}")

    def scored_sample_key(self, attempt: int) -> str:
        """The scored sample of the run's ``attempt``: a key per attempt (``-attempt<n>`` from
        the second on, as report keys), so a re-run never overwrites an earlier sample."""
        return f"{self.prefix()}/scored-sample" + ("" if attempt == 1 else f"-attempt{attempt}") + ".parquet"

    def as_dict(self) -> DriftRefDict:
        return {"drift_run_id": self.drift_run_id, "model_version_id": self.model_version_id,
                "model_name": self.model_name, "version": self.version,
                "interval_start": self.interval_start, "interval_end": self.interval_end}


def put_pickle(ctx: Context, key: str, value: object) -> str:
    """Store ``value`` pickled under ``key`` in the run's object store; returns the key."""
    ctx.store.put_bytes(key, pickle.dumps(value, protocol=5), content_type="application/octet-stream")
    return key


def get_pickle(ctx: Context, key: str) -> Any:
    """The value :func:`put_pickle` stored under ``key``."""
    return stored_pickles.loads(ctx.store.get_bytes(key))


def _features_of(manifest: Manifest) -> dict[str, Any]:
    """The manifest's features and their kinds; a feature may not take the internal name under
    which the model's output score is drifted beside them.

    >>> from modelgate.onnx.manifest import Feature, LabelSpec, OutputSpec
    >>> _features_of(Manifest(name="m", version="1", sha256="0" * 64, opset=None,
    ...                       features=(Feature("__score__", "numeric"),), label=LabelSpec("y"),
    ...                       output=OutputSpec("variable"), threshold=None, sensitive_features=(),
    ...                       task="regression"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: manifest feature '__score__': drift monitoring keeps that name for the model's ...
    """
    kinds: dict[str, Any] = {f.name: f.kind for f in manifest.features}
    if SCORE_FEATURE in kinds:
        raise ValueError(f"manifest feature {SCORE_FEATURE!r}: drift monitoring keeps that name for the "
                         "model's output score; rename the feature to monitor this model")
    return kinds


# --- prepare and reference ---------------------------------------------------------------

def check_interval(start: dt.datetime, end: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """The data interval ``[start, end)`` a run reads, checked.

    The DAG's cron data-interval timetable gives every run (scheduled, caught up, back-filled
    or manual) a whole past interval; an empty one means the DAG was scheduled with a
    trigger timetable, which has no interval to read.

    >>> check_interval(dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 2))
    (datetime.datetime(2000, 1, 1, 0, 0), datetime.datetime(2000, 1, 2, 0, 0))
    """
    if end <= start:
        raise ValueError(f"data interval {start.isoformat()}..{end.isoformat()} is empty or reversed; "
                         "drift runs need a cron data-interval timetable")
    return start, end


@dataclass(frozen=True, slots=True)
class MonitorSpec:
    """What one model's run reads: its monitoring config, overridden by the run's params."""

    model_name: str
    live: str
    labels: str
    reference: str  # builds the sketch when given (manual runs); scheduled runs pass ""
    sample_size: int
    thresholds: dict[str, Any]
    adwin_delta: float

    def as_dict(self) -> MonitorSpecDict:
        return {"model_name": self.model_name, "live": self.live, "labels": self.labels,
                "reference": self.reference, "sample_size": self.sample_size,
                "thresholds": self.thresholds, "adwin_delta": self.adwin_delta}


def monitor_specs(ctx: Context, params: dict[str, Any]) -> list[MonitorSpecDict]:
    """One spec per production model with a monitoring config (or only ``params['model_name']``).

    Non-empty params override the stored config, so a manual run can point one model at
    other data; a model with neither a config nor ``live`` and ``labels`` params is refused,
    and so is an override location that does not exist or a ``thresholds`` param that cannot
    work (:class:`~modelgate.pipelines.drift.monitor_checks.MonitorConfigError`, a refusal: a
    DAG task fails without retries).
    """
    for name in ("live", "labels", "reference"):  # an override naming nothing is refused now
        if params.get(name):
            check_exists(ctx, f"drift_monitoring param {name!r}", str(params[name]))
    if params.get("thresholds"):  # Airflow parsed the conf: the limits of a JSON option apply
        check_json_value(params["thresholds"], where="drift_monitoring param 'thresholds'")
    wanted = params.get("model_name") or ""
    configs = ([monitors.get(ctx.db_url, wanted)] if wanted
               else monitors.list_monitored_production(ctx.db_url))
    if wanted and configs[0] is None:
        if not (params.get("live") and params.get("labels")):
            raise MonitorConfigError(f"model {wanted!r} has no monitoring config; run `modelgate "
                                     "monitor set` or pass params 'live' and 'labels'")
        configs = [monitors.MonitorConfig(wanted, "", "", "", DEFAULT_SAMPLE_SIZE, {})]
    specs = []
    for c in configs:
        assert c is not None
        if params.get("thresholds"):  # the run's own: checked as `monitor set` checks its own
            production = models.get_production(ctx.db_url, c.model_name)
            try:
                parse_thresholds(params["thresholds"])
                if production is not None:
                    check_threshold_features(
                        params["thresholds"], production.manifest, production.version,
                        where=f"drift_monitoring param 'thresholds' for {c.model_name!r}:")
            except MonitorConfigError:
                raise
            except ValueError as exc:  # the param cannot work: refused, as a retry would be
                raise MonitorConfigError(str(exc)) from None
        specs.append(MonitorSpec(
            c.model_name, params.get("live") or c.live_uri, params.get("labels") or c.labels_uri,
            params.get("reference") or "", int(params.get("sample_size") or c.sample_rows),
            params.get("thresholds") or c.thresholds,
            float(params.get("adwin_delta") or DEFAULT_ADWIN_DELTA)).as_dict())
    log.info("monitoring %d model(s): %s", len(specs), ", ".join(s["model_name"] for s in specs))
    return specs


DEFAULT_ADWIN_DELTA = 0.002


def prepare(ctx: Context, *, model_name: str, interval_start: dt.datetime,
            interval_end: dt.datetime, reference_uri: str = "") -> PreparedRun:
    """Open the run row for the production model and interval; check the sketch exists.

    The reference sketch is built by ``modelgate monitor set`` or at promotion; only a run
    given ``reference_uri`` (a manual run's param) builds a missing one. Returns the run
    reference and the list of features the drift step fans out over. A failure after the
    row exists records the run as failed with its reason. The model's drift runs left
    ``running`` without a heartbeat for ``MODELGATE_STALE_RUN_MINUTES`` are marked
    ``abandoned`` first.
    """
    interval_start, interval_end = check_interval(interval_start, interval_end)
    production = models.get_production(ctx.db_url, model_name)
    if production is None:
        raise models.RegistryError(f"model {model_name!r} has no version in production to monitor")
    abandoned = drift_runs.abandon_stale_runs(ctx.db_url, model_name,
                                              stale_minutes=ctx.settings.stale_run_minutes,
                                              interval_start=interval_start, interval_end=interval_end)
    if abandoned:
        log.warning("marked drift run(s) %s of %s abandoned: no heartbeat for %d min",
                    abandoned, model_name, ctx.settings.stale_run_minutes)
    run_id = drift_runs.start_drift_run(ctx.db_url, model_version_id=production.model_version_id,
                                        interval_start=interval_start, interval_end=interval_end)
    ref = DriftRef(run_id, production.model_version_id, model_name, production.version,
                   interval_start.isoformat(), interval_end.isoformat())
    try:
        if reference_uri:
            ensure_reference(ctx, production, reference_uri)
        elif drift_runs.get_reference(ctx.db_url, production.model_version_id) is None:
            raise LookupError(f"no reference sketch stored for {model_name} v{production.version}; "
                              f"`modelgate monitor set {model_name} ...` builds it")
    except BaseException as exc:  # Ctrl-C and SIGTERM too: the row exists, so it must say failed
        fail(ctx, ref, exc)
        raise
    features = [*_features_of(production.manifest), SCORE_FEATURE]
    log.info("drift run %d: %s v%s over %s..%s, %d features", run_id, model_name,
             production.version, ref.interval_start, ref.interval_end, len(features))
    return {"run": ref.as_dict(), "features": features}


def reference_key(row: models.ModelVersionRow) -> str:
    return f"references/{safe_key_part(row.model_name)}/{safe_key_part(row.version)}/sketch.pkl"


def ensure_reference(ctx: Context, row: models.ModelVersionRow, reference_uri: str) -> str:
    """Build the reference sketch (features and scores), the multivariate and attribution
    references, and the quality schema and performance estimator once per model version, and
    store them."""
    key = drift_runs.get_reference(ctx.db_url, row.model_version_id)
    if key is None:
        key = _build_reference_sketch(ctx, row, reference_uri)
    drift_joint.ensure_references(ctx, row, reference_uri)  # multivariate + attribution
    drift_estimation.ensure_reference(ctx, row, reference_uri)  # quality schema + estimator
    return key


def _build_reference_sketch(ctx: Context, row: models.ModelVersionRow, reference_uri: str) -> str:
    if not reference_uri:
        raise ValueError(f"no reference sketch stored for {row.model_name} v{row.version}; "
                         "pass the reference dataset (param 'reference') once")
    work = ctx.scratch("reference", row.model_name, row.version)
    data = fetch_dataset(ctx, reference_uri, work)
    scorer = open_session(load_registered_model(ctx, row, work), settings_from_os_environ())
    scored = score_parquet(scorer, data, work / "reference-scores.parquet")
    sketches = build_references_from_parquet(data, _features_of(row.manifest))
    score_table = pq.read_table(scored.output_path, columns=[score_column(row.manifest)]
                                ).rename_columns([SCORE_FEATURE])
    pq.write_table(score_table, work / "score.parquet")
    sketches.update(build_references_from_parquet(work / "score.parquet", {SCORE_FEATURE: "numeric"}))
    key = reference_key(row)
    uri = ctx.store.put_bytes(key, pickle.dumps({k: v.to_bytes() for k, v in sketches.items()}),
                              content_type="application/octet-stream")
    drift_runs.put_reference(ctx.db_url, model_version_id=row.model_version_id, object_key=key,
                             object_uri=uri, n_rows=scored.rows, n_features=len(sketches))
    log.info("stored reference sketch of %s v%s: %d rows, %d features", row.model_name,
             row.version, scored.rows, len(sketches))
    return key


def load_references(ctx: Context, ref: DriftRef) -> dict[str, Any]:
    key = drift_runs.get_reference(ctx.db_url, ref.model_version_id)
    if key is None:
        raise LookupError(f"no reference sketch for model version id {ref.model_version_id}")
    raw = get_pickle(ctx, key)
    manifest = models.get_by_id(ctx.db_url, ref.model_version_id).manifest
    kinds = {**_features_of(manifest), SCORE_FEATURE: "numeric"}
    return {name: (NumericReference if kinds[name] == "numeric" else CategoricalReference)
            .from_bytes(payload) for name, payload in raw.items()}


# --- sample and score --------------------------------------------------------------------

def sample_and_score(ctx: Context, ref: DriftRef, live_uri: str, sample_size: int) -> LiveSample:
    """Sample the interval's live rows (seeded by the interval) and score them."""
    row = models.get_by_id(ctx.db_url, ref.model_version_id)
    manifest = row.manifest
    work = ctx.scratch("drift", ref.model_name, ref.version, ref.interval_start)
    tables, files = _live_partitions(ctx, ref, live_uri, manifest, work)
    total = sum(t.num_rows for t in tables)
    if total == 0:
        log.warning("drift run %d: no live rows in %s..%s under %s", ref.drift_run_id,
                    ref.interval_start, ref.interval_end, live_uri)
        drift_runs.record_sample(ctx.db_url, ref.drift_run_id, provider=None, rows_available=0,
                                 rows_sampled=0, scores_uri=None)
        return {"rows": 0, "key": None}
    table = _concat(tables, files)
    rng = np.random.default_rng(interval_seed(ref))
    take = np.sort(rng.choice(total, size=min(sample_size, total), replace=False))
    sample = table.take(pa.array(take))
    scorer = open_session(load_registered_model(ctx, row, work), settings_from_os_environ())
    keep = [c for c in ("event_time",) if c in sample.column_names]
    usable = drift_usable.score_usable(scorer, sample, manifest, work, keep_columns=keep,
                                       id_column=manifest.id_column)
    scored, scores = usable.run, usable.scores
    merged = sample.append_column(SCORE_FEATURE, scores.column(score_column(manifest)))
    merged = merged.append_column("__prediction__", scores.column("prediction"))
    for name in [c for c in scores.column_names if c.startswith("proba_")]:  # multiclass
        merged = merged.append_column(f"__{name}__", scores.column(name))
    pq.write_table(merged, work / "scored-sample.parquet")
    key = ref.scored_sample_key(drift_runs.get_drift_run(ctx.db_url, ref.drift_run_id).attempt)
    uri = ctx.store.put_file(key, work / "scored-sample.parquet",
                             content_type="application/vnd.apache.parquet")
    drift_runs.record_sample(ctx.db_url, ref.drift_run_id, provider=scored.provider,
                             rows_available=total, rows_sampled=len(take), scores_uri=uri,
                             provider_reason=scored.provider_reason,
                             tf32_allowed=scored.tf32_allowed, rows_set_aside=usable.rows_set_aside,
                             set_aside_reason=usable.reason)
    drift_runs.upsert_scored_interval(ctx.db_url, model_version_id=ref.model_version_id,
                                      interval_start=ref.start(), interval_end=ref.end(),
                                      scores_key=key, rows=len(take), run_id=ref.drift_run_id)
    log.info("drift run %d: sampled %d of %d live rows, scored on %s", ref.drift_run_id,
             len(take), total, scored.provider)
    if usable.reason:
        log.warning("drift run %d: %s", ref.drift_run_id, usable.reason)
    return {"rows": len(take), "key": key}


def _live_partitions(ctx: Context, ref: DriftRef, live_uri: str, manifest: Manifest,
                     work: Path) -> tuple[list[pa.Table], list[Path]]:
    """The interval's usable live partitions; a bad one is quarantined and left out, one
    quarantined earlier (by this run's earlier try too) is left out until released."""
    skipped = monitors.open_quarantines(ctx.db_url, ref.model_version_id, "live")
    tables, files = [], []
    for day in partition_dates(ref.start(), ref.end()):
        name = partition_name(day)
        if name in skipped:
            log.warning("drift run %d: live partition %s under %s is quarantined; left out",
                        ref.drift_run_id, name, live_uri)
            continue
        found = partition_files(ctx, live_uri, day, work)
        if not found:
            continue
        try:
            tables.append(live_table(found, name, live_uri, _features_of(manifest),
                                     manifest.id_column))
        except BadPartition as bad:
            quarantine(ctx, ref, bad, ref.start(), ref.end())
            continue
        files += found
    return tables, files


def quarantine(ctx: Context, ref: DriftRef, bad: BadPartition, start: dt.datetime,
               end: dt.datetime) -> None:
    """Record ``bad`` as quarantined by this run (durably: a later try or the ``store`` step
    reads it back) and say so in the task log; the run goes on without it. A file that could
    not be read on an Airflow try that will be retried is raised instead: it may be
    half-written, and the next try reads it again."""
    if bad.transient and airflow_will_retry():
        raise bad
    reason = (f"{bad}; quarantined, fix it and run `modelgate monitor retry {ref.model_name} "
              f"--interval {start.isoformat()}`")
    log.warning("drift run %d: %s", ref.drift_run_id, reason)
    monitors.quarantine(ctx.db_url, model_version_id=ref.model_version_id, source=bad.source,
                        partition=bad.partition, partition_uri=bad.uri, interval_start=start,
                        interval_end=end, reason=reason, run_id=ref.drift_run_id)


def score_column(manifest: Manifest) -> str:
    """The scored column whose distribution is drifted: a classifier's ``score`` (binary: the
    positive class's probability; multiclass: the predicted class's), a regression's
    predicted value."""
    return "prediction" if manifest.task == "regression" else "score"


def _concat(tables: list[pa.Table], files: list[Path]) -> pa.Table:
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowInvalid as exc:
        names = [str(f) for f in files]
        raise ValueError(f"live partitions {names} have incompatible schemas: {exc}") from exc


# --- data drift (fans out per feature) ---------------------------------------------------

_THRESHOLD_KEYS = ("relative", "wasserstein_floor", "js_floor", "numeric_statistic", "min_values",
                   "null_level")


def check_threshold_features(spec: dict[str, Any] | None, manifest: Manifest, version: str, *,
                             where: str) -> None:
    """Refuse thresholds naming a feature the model version does not have (a typo would
    otherwise leave that feature on the default thresholds without a word).

    >>> from modelgate.onnx.manifest import Feature, LabelSpec, OutputSpec
    >>> manifest = Manifest(name="m", version="1", sha256="0" * 64, opset=None,
    ...                     features=(Feature("age", "numeric"),), label=LabelSpec("y"),
    ...                     output=OutputSpec("variable"), threshold=None, sensitive_features=(),
    ...                     task="regression")
    >>> check_threshold_features({"features": {"age": {}}}, manifest, "1", where="x:")
    >>> check_threshold_features({"features": {"agee": {}}}, manifest, "1", where="x:")
    Traceback (most recent call last):
    ...
    ValueError: x: name feature(s) ['agee'] that v1 does not have (features: ['age', '__score__'])
    """
    named = sorted((spec or {}).get("features") or {})
    known = [f.name for f in manifest.features] + [SCORE_FEATURE]
    unknown = [f for f in named if f not in known]
    if unknown:
        raise ValueError(f"{where} name feature(s) {unknown} that v{version} does not have "
                         f"(features: {known})")
    drift_estimation.check_threshold_metrics(spec, manifest.task, version, where=where)
    drift_segments.check_segment_columns(drift_segments.split_thresholds(spec)[1], manifest, version,
                                         where=where)


def parse_thresholds(spec: dict[str, Any] | None) -> Any:
    """``DriftThresholds`` from the DAG's ``thresholds`` parameter, e.g.
    ``{"relative": 1.8, "js_floor": 0.01, "features": {"age": {"relative": 3.0}}}``.

    >>> parse_thresholds({"features": {"age": {"relative": 3.0}}}).for_feature("age").relative
    3.0
    """
    spec, _ = drift_joint.split_thresholds(spec)  # "multivariate"/"attribution" are checked there
    spec, _ = drift_estimation.split_thresholds(spec)  # so are "performance"/"quality"
    spec, _ = drift_segments.split_thresholds(spec)  # and "segments"
    features = spec.pop("features", {}) or {}
    unknown = sorted(set(spec) - set(_THRESHOLD_KEYS))
    if unknown or not isinstance(features, dict):
        raise ValueError(f"drift thresholds: unknown key(s) {unknown}; expected "
                         f"{list(_THRESHOLD_KEYS)} and 'features' (a mapping of feature to thresholds)")
    overrides = {}
    for name, override in features.items():
        bad = sorted(set(override or {}) - set(_THRESHOLD_KEYS))
        if bad:
            raise ValueError(f"drift thresholds for feature {name!r}: unknown key(s) {bad}")
        overrides[name] = DriftThresholds(**{**spec, **(override or {})})
    return DriftThresholds(**spec, overrides=overrides)


def feature_drift(ctx: Context, ref: DriftRef, sample: LiveSample, feature: str,
                  thresholds: dict[str, Any] | None = None) -> str:
    """Drift of one feature (one mapped task); the result is stored under a per-feature key."""
    references = load_references(ctx, ref)
    if feature not in references:
        raise KeyError(f"feature {feature!r} has no reference sketch")
    key = f"{ref.prefix()}/feature-{safe_key_part(feature)}.pkl"
    if sample["key"] is None:
        return put_pickle(ctx, key, None)
    path = sample_path(ctx, ref, sample["key"])
    (result,) = drift_from_parquet(path, {feature: references[feature]}, max_workers=1,
                                   thresholds=parse_thresholds(thresholds))
    return put_pickle(ctx, key, result)


def all_feature_drift(ctx: Context, ref: DriftRef, sample: LiveSample,
                      thresholds: dict[str, Any] | None = None) -> list[Any]:
    """Every feature in one call (the single-task path the fan-out must agree with)."""
    if sample["key"] is None:
        return []
    return drift_from_parquet(sample_path(ctx, ref, sample["key"]), load_references(ctx, ref),
                              thresholds=parse_thresholds(thresholds))


# --- store and decide (the report step: .report) -----------------------------------

def collect_features(ctx: Context, ref: DriftRef, features: list[str]) -> list[Any]:
    """Merge the fanned-out per-feature results (exactly: each is independent)."""
    results = [get_pickle(ctx, f"{ref.prefix()}/feature-{safe_key_part(f)}.pkl") for f in features]
    return [r for r in results if r is not None]


def check_not_failed(ctx: Context, ref: DriftRef) -> None:
    """Stop a run's later steps when an earlier one (e.g. a feature task) already failed it."""
    run = drift_runs.get_drift_run(ctx.db_url, ref.drift_run_id)
    if run.status == "failed":
        raise RuntimeError(f"drift run {ref.drift_run_id} failed at an earlier step; "
                           "its reason is in drift_run.failure_reason")


def degraded_reason(quarantined: list[monitors.Quarantine]) -> str | None:
    """``drift_run.degraded_reason``: each partition the run quarantined with its reason.

    >>> q = monitors.Quarantine("labels", "dt=2026-11-28", "labels partition dt=2026-11-28 under x: bad")
    >>> degraded_reason([q])
    '1 partition(s) quarantined: labels partition dt=2026-11-28 under x: bad'
    >>> degraded_reason([]) is None
    True
    """
    if not quarantined:
        return None
    return f"{len(quarantined)} partition(s) quarantined: " + " | ".join(q.reason for q in quarantined)


def store_results(ctx: Context, ref: DriftRef, sample: LiveSample, features: list[str],
                  report: str) -> str:
    """Feature rows, change points, detector state, verdict and link in one transaction."""
    summary = summarise(collect_features(ctx, ref, features))
    concept = get_pickle(ctx, f"{ref.prefix()}/concept.pkl")  # a concept.ConceptResult
    joint = drift_joint.load_result(ctx, ref.prefix())
    estimated = drift_estimation.load_result(ctx, ref.prefix())
    drifting = bool(summary.n_breached or drift_joint.breaches(joint) or estimated.breaches()
                    or drift_segments.breach_lines(ctx, ref.drift_run_id))
    verdict, evidence = drift_verdict.interval_verdict(sample["rows"], summary.features, drifting=drifting)
    n_set_aside, set_aside = drift_runs.set_aside(ctx.db_url, ref.drift_run_id)
    degraded = " | ".join(r for r in (degraded_reason(monitors.quarantined_by_run(
        ctx.db_url, ref.drift_run_id)), set_aside) if r) or None
    feature_rows = []
    for rank, f in enumerate(summary.features, start=1):
        record = {**f.to_record(), "drift_rank": rank}
        if f.feature == SCORE_FEATURE:  # the model's own score, stored as kind 'prediction'
            record["kind"] = "prediction"
        feature_rows.append(record)
    drift_runs.write_drift_results(
        ctx.db_url, ref.drift_run_id, ref.model_version_id,
        drift_runs.DriftRows(features=feature_rows, verdict=verdict, n_breached=summary.n_breached,
                             change_points=concept.change_points,
                             consumed=concept.consumed, detector_state=concept.state,
                             detector_seen_before=concept.seen_before,
                             detector_seen_after=concept.seen_after, degraded_reason=degraded,
                             evidence_reason=evidence),
        report_key=report, report_uri=ctx.store.uri(report),
        scores=(sample["key"], sample["rows"]) if sample["key"] else None,
        multivariate=joint.multivariate, attribution=joint.attribution,
        estimates=estimated.estimates, quality=estimated.quality_rows(), realised=concept.realised)
    emit_metrics(drift_joint.metrics(ref, drifting=verdict == "drift", features_breached=summary.n_breached,
                                     adwin_change_points=len(concept.change_points), result=joint)
                 + evidence_metrics(ref.model_name, ref.version, insufficient=verdict == "insufficient_data",
                                    features_insufficient=drift_verdict.count_insufficient(summary.features),
                                    rows_set_aside=n_set_aside))
    log.info("drift run %d stored: %s (%d breached)", ref.drift_run_id, verdict, summary.n_breached)
    index_page.write_model_index(ctx, ref.model_name)  # reports/<model>/index.html
    discard_run_scratch(ctx, ref)
    return verdict


def decide(ctx: Context, ref: DriftRef) -> str:
    """Raise :class:`DriftBreached` listing the breached features when the run found drift;
    otherwise the run's status (``degraded``, logged with what was quarantined, is not a failure:
    the run judged the data it could use; an attempt that judged nothing: ``unjudged_status``)."""
    if (unjudged := unjudged_status(ctx, ref.drift_run_id)) is not None:
        return unjudged
    breaches, status = drift_runs.breaches_and_status(ctx.db_url, ref.drift_run_id)
    for q in monitors.quarantined_by_run(ctx.db_url, ref.drift_run_id):
        log.warning("drift run %d left out %s partition %s: %s", ref.drift_run_id, q.source,
                    q.partition, q.reason)
    joint_lines = (drift_joint.breaches(drift_joint.load_result(ctx, ref.prefix()))
                   + drift_estimation.load_result(ctx, ref.prefix()).breaches()
                   + drift_segments.breach_lines(ctx, ref.drift_run_id))
    if breaches or joint_lines:
        lines = [f"{shown_feature(b.feature)}: {b.statistic_name} = {b.statistic_value:.4f} "
                 f"> threshold {b.threshold:.4f}" for b in breaches] + joint_lines
        raise DriftBreached(f"{ref.model_name} v{ref.version}: drift in {len(breaches)} feature(s)"
                            + (f" and {len(joint_lines)} other check(s) (joint, performance, quality, "
                               "segments)" if joint_lines else "")
                            + f" over {ref.interval_start}..{ref.interval_end}\n" + "\n".join(lines))
    return str(status)


def beat(ctx: Context, ref: DriftRef) -> None:
    """Keep the run's heartbeat (``run_step`` calls this every minute while a step works)."""
    drift_runs.beat(ctx.db_url, ref.drift_run_id)


def fail(ctx: Context, ref: DriftRef, exc: BaseException) -> None:
    """Record the run as failed; the first failure's reason is kept (later steps only follow it)."""
    reason = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    log.error("drift run %d failed: %s", ref.drift_run_id, reason)
    discard_run_scratch(ctx, ref)  # no live rows or archive copy outlive a failed run
    drift_runs.fail_drift_run(ctx.db_url, ref.drift_run_id, reason)

