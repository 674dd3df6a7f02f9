-- Least privilege and documented analyst views.
--
-- Roles (NOLOGIN groups; give people and services LOGIN roles that are members):
--   modelgate_writer   reads and writes every table in schema public, owns the analytics views.
--   modelgate_analyst  reads the views in schema analytics and nothing else.
-- Roles are cluster-wide while grants are per database, so the roles are created only when
-- missing (several databases, e.g. test databases, may share one cluster).
-- Views run with their owner's privileges (modelgate_writer), which is how the analyst reads
-- the numbers without any privilege on the base tables. No view exposes model archives
-- (model_version.archive_key/archive_uri/manifest), object keys or detector state
-- (detector_state.state); report links are stored as plain object URIs and presigned at read
-- time, never stored presigned.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'modelgate_writer') THEN
        CREATE ROLE modelgate_writer NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;  -- created concurrently by a migration of another database in the same cluster
END
$$;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'modelgate_analyst') THEN
        CREATE ROLE modelgate_analyst NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

-- Nobody gets anything by default.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM PUBLIC;

-- Writer: data access to every table, now and for tables later migrations create.
GRANT USAGE ON SCHEMA public TO modelgate_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO modelgate_writer;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO modelgate_writer;
ALTER DEFAULT PRIVILEGES IN SCHEMA public
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO modelgate_writer;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE ON SEQUENCES TO modelgate_writer;

CREATE SCHEMA IF NOT EXISTS analytics AUTHORIZATION modelgate_writer;
COMMENT ON SCHEMA analytics IS
    'Documented, stable read-only views for analysts (see sql/README.md). '
    'Owned by modelgate_writer; modelgate_analyst may SELECT from these views only.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.model_versions AS
SELECT mv.model_version_id, mv.model_name, mv.version, mv.sha256, mv.stage, mv.is_drifting,
       mv.registered_at, mv.stage_changed_at
FROM model_version mv;

COMMENT ON VIEW analytics.model_versions IS
    'One row per registered model version: identity, lifecycle stage and drift flag.';
COMMENT ON COLUMN analytics.model_versions.sha256 IS
    'sha256 of the model.onnx file (hex); identifies exactly what was evaluated and served.';
COMMENT ON COLUMN analytics.model_versions.stage IS
    'candidate | production | archived | rejected; at most one production version per model_name.';
COMMENT ON COLUMN analytics.model_versions.is_drifting IS
    'True while the latest drift monitoring of this version reported drift.';
COMMENT ON COLUMN analytics.model_versions.stage_changed_at IS
    'When the version entered its current stage (only the latest change is kept).';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.evaluation_runs AS
SELECT er.evaluation_run_id, er.run_key, mv.model_name, mv.version,
       ch.version AS champion_version, er.status, er.failure_reason, er.provider,
       er.rows_scored, er.scoring_seconds AS scoring_s, er.scoring_rows_per_s,
       er.dataset_sha256, er.started_at, er.finished_at,
       (EXTRACT(EPOCH FROM er.finished_at - er.started_at) * 1000)::double precision AS duration_ms
FROM evaluation_run er
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN model_version ch ON ch.model_version_id = er.champion_version_id;

COMMENT ON VIEW analytics.evaluation_runs IS
    'One row per evaluation run of a candidate model version (re-runs reuse run_key).';
COMMENT ON COLUMN analytics.evaluation_runs.run_key IS
    'Natural key of the run (deterministic per model version and evaluation dataset).';
COMMENT ON COLUMN analytics.evaluation_runs.champion_version IS
    'Version of the production model the candidate was compared with; NULL when there was none.';
COMMENT ON COLUMN analytics.evaluation_runs.status IS
    'running | passed | blocked (the promotion gate said no) | failed (see failure_reason).';
COMMENT ON COLUMN analytics.evaluation_runs.failure_reason IS
    'Why the run failed; set only when status = failed.';
COMMENT ON COLUMN analytics.evaluation_runs.provider IS
    'ONNX Runtime execution provider that scored the data, e.g. CPUExecutionProvider.';
COMMENT ON COLUMN analytics.evaluation_runs.scoring_s IS 'Wall-clock seconds spent scoring.';
COMMENT ON COLUMN analytics.evaluation_runs.scoring_rows_per_s IS 'rows_scored / scoring_s.';
COMMENT ON COLUMN analytics.evaluation_runs.duration_ms IS
    'finished_at - started_at in milliseconds; NULL while the run is running.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.metric_history AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key,
       ch.version AS champion_version, er.status, er.finished_at,
       em.metric_name, em.model_role, em.value, em.ci_lower, em.ci_upper, em.n,
       em.undefined_reason
FROM evaluation_metric em
JOIN evaluation_run er ON er.evaluation_run_id = em.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN model_version ch ON ch.model_version_id = er.champion_version_id;

COMMENT ON VIEW analytics.metric_history IS
    'One row per evaluation run, model_role and metric: value with its bootstrap interval.';
COMMENT ON COLUMN analytics.metric_history.model_role IS
    'candidate | champion (the production model on the same data) | delta (candidate - champion).';
COMMENT ON COLUMN analytics.metric_history.value IS
    'Point estimate on the full evaluation set; NULL when undefined (see undefined_reason).';
COMMENT ON COLUMN analytics.metric_history.ci_lower IS 'Lower bound of the bootstrap confidence interval.';
COMMENT ON COLUMN analytics.metric_history.ci_upper IS 'Upper bound of the bootstrap confidence interval.';
COMMENT ON COLUMN analytics.metric_history.n IS 'Rows the metric was computed on.';
COMMENT ON COLUMN analytics.metric_history.finished_at IS 'When the run finished (NULL while running).';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.gate_checks AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.started_at,
       gc.check_id, gc.kind, gc.metric_name, gc.sensitive_feature, gc.threshold_text,
       gc.observed, gc.ci_lower, gc.ci_upper, gc.n, gc.verdict, gc.severity, gc.reason,
       (gc.verdict = 'fail' AND gc.severity = 'block') AS is_blocking_failure
FROM gate_check gc
JOIN evaluation_run er ON er.evaluation_run_id = gc.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON VIEW analytics.gate_checks IS
    'One row per promotion-gate check of an evaluation run, with the run context.';
COMMENT ON COLUMN analytics.gate_checks.kind IS
    'value (absolute threshold) | change (vs champion) | fairness (gap between groups).';
COMMENT ON COLUMN analytics.gate_checks.threshold_text IS 'The policy threshold as written, e.g. ">= 0.75".';
COMMENT ON COLUMN analytics.gate_checks.observed IS 'The number the threshold was applied to.';
COMMENT ON COLUMN analytics.gate_checks.verdict IS 'pass | fail | skipped.';
COMMENT ON COLUMN analytics.gate_checks.severity IS 'block (a fail blocks promotion) | warn.';
COMMENT ON COLUMN analytics.gate_checks.reason IS 'Human-readable explanation of the verdict.';
COMMENT ON COLUMN analytics.gate_checks.is_blocking_failure IS 'verdict = fail AND severity = block.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.latest_gate_decision AS
SELECT DISTINCT ON (mv.model_name, mv.version)
       mv.model_name, mv.version, er.evaluation_run_id, er.run_key, gd.passed, gd.summary,
       gd.had_champion, gd.policy_sha256, gd.decided_at,
       ARRAY(SELECT gc.reason FROM gate_check gc
             WHERE gc.evaluation_run_id = gd.evaluation_run_id
               AND gc.verdict = 'fail' AND gc.severity = 'block'
             ORDER BY gc.check_id) AS blocking_failure_reasons,
       ARRAY(SELECT gc.reason FROM gate_check gc
             WHERE gc.evaluation_run_id = gd.evaluation_run_id
               AND gc.verdict = 'fail' AND gc.severity = 'warn'
             ORDER BY gc.check_id) AS warning_reasons
FROM gate_decision gd
JOIN evaluation_run er ON er.evaluation_run_id = gd.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id
ORDER BY mv.model_name, mv.version, gd.decided_at DESC, gd.evaluation_run_id DESC;

COMMENT ON VIEW analytics.latest_gate_decision IS
    'One row per model_name and version: its most recent promotion-gate decision.';
COMMENT ON COLUMN analytics.latest_gate_decision.passed IS 'True when no blocking check failed.';
COMMENT ON COLUMN analytics.latest_gate_decision.summary IS 'One-line summary written by the gate.';
COMMENT ON COLUMN analytics.latest_gate_decision.policy_sha256 IS 'sha256 of the gate policy applied.';
COMMENT ON COLUMN analytics.latest_gate_decision.blocking_failure_reasons IS
    'Reasons of the checks that failed with severity block, ordered by check_id; empty when passed.';
COMMENT ON COLUMN analytics.latest_gate_decision.warning_reasons IS
    'Reasons of the checks that failed with severity warn (they do not block).';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.fairness_by_group AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       fg.sensitive_feature, fg.group_label, fg.n, fg.base_rate, fg.selection_rate,
       fg.tpr, fg.fpr, fg.ppv, fg.fnr, fg.is_small_group
FROM fairness_group fg
JOIN evaluation_run er ON er.evaluation_run_id = fg.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON VIEW analytics.fairness_by_group IS
    'One row per evaluation run, sensitive feature and group: the candidate''s rates in that group.';
COMMENT ON COLUMN analytics.fairness_by_group.base_rate IS 'Share of positive labels in the group.';
COMMENT ON COLUMN analytics.fairness_by_group.selection_rate IS 'Share of positive predictions in the group.';
COMMENT ON COLUMN analytics.fairness_by_group.tpr IS 'True positive rate (recall) in the group.';
COMMENT ON COLUMN analytics.fairness_by_group.fpr IS 'False positive rate in the group.';
COMMENT ON COLUMN analytics.fairness_by_group.ppv IS 'Positive predictive value (precision) in the group.';
COMMENT ON COLUMN analytics.fairness_by_group.fnr IS 'False negative rate in the group.';
COMMENT ON COLUMN analytics.fairness_by_group.is_small_group IS
    'True when the group is below the policy''s minimum size: its rates are noisy.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.fairness_gaps AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       fm.sensitive_feature, fm.metric_name, fm.value, fm.ci_lower, fm.ci_upper
FROM fairness_metric fm
JOIN evaluation_run er ON er.evaluation_run_id = fm.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON VIEW analytics.fairness_gaps IS
    'One row per evaluation run, sensitive feature and fairness metric (a gap or ratio between groups).';
COMMENT ON COLUMN analytics.fairness_gaps.metric_name IS
    'e.g. demographic_parity_difference, equalized_odds_difference.';
COMMENT ON COLUMN analytics.fairness_gaps.ci_lower IS 'Lower bound of the bootstrap confidence interval.';
COMMENT ON COLUMN analytics.fairness_gaps.ci_upper IS 'Upper bound of the bootstrap confidence interval.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.feature_importance AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       si.feature, si.importance_rank, si.mean_abs_shap
FROM shap_importance si
JOIN evaluation_run er ON er.evaluation_run_id = si.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON VIEW analytics.feature_importance IS
    'One row per evaluation run and feature: global SHAP importance of the candidate.';
COMMENT ON COLUMN analytics.feature_importance.importance_rank IS '1 = most important feature.';
COMMENT ON COLUMN analytics.feature_importance.mean_abs_shap IS
    'Mean absolute SHAP value over the explained rows, in model-output units.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.drift_runs AS
SELECT dr.drift_run_id, mv.model_name, mv.version, dr.interval_start, dr.interval_end,
       dr.status, dr.verdict, dr.failure_reason, dr.provider, dr.rows_available,
       dr.rows_sampled, dr.rows_labelled, dr.n_features_breached, dr.started_at, dr.finished_at,
       (EXTRACT(EPOCH FROM dr.finished_at - dr.started_at) * 1000)::double precision AS duration_ms
FROM drift_run dr
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON VIEW analytics.drift_runs IS
    'One row per drift-monitoring run: one model version and one data interval.';
COMMENT ON COLUMN analytics.drift_runs.interval_start IS 'Start of the data interval (inclusive).';
COMMENT ON COLUMN analytics.drift_runs.interval_end IS 'End of the data interval (exclusive).';
COMMENT ON COLUMN analytics.drift_runs.status IS 'running | ok | drift | no_data | failed.';
COMMENT ON COLUMN analytics.drift_runs.n_features_breached IS 'Features whose drift verdict is drift.';
COMMENT ON COLUMN analytics.drift_runs.duration_ms IS
    'finished_at - started_at in milliseconds; NULL while the run is running.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.feature_drift_by_interval AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status, fd.feature, fd.kind, fd.drift_rank, fd.wasserstein,
       fd.wasserstein_normalised, fd.js_divergence_base2, fd.statistic_name,
       fd.statistic_value, fd.baseline, fd.threshold, fd.verdict, fd.n_reference,
       fd.n_current, fd.n_missing_current, fd.unseen_categories
FROM feature_drift fd
JOIN drift_run dr ON dr.drift_run_id = fd.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON VIEW analytics.feature_drift_by_interval IS
    'One row per drift run (model version x data interval) and feature, including the prediction.';
COMMENT ON COLUMN analytics.feature_drift_by_interval.kind IS 'numeric | categorical | prediction.';
COMMENT ON COLUMN analytics.feature_drift_by_interval.drift_rank IS '1 = most drifted feature in the interval.';
COMMENT ON COLUMN analytics.feature_drift_by_interval.wasserstein IS
    'Wasserstein-1 distance in the feature''s own units (numeric features).';
COMMENT ON COLUMN analytics.feature_drift_by_interval.wasserstein_normalised IS
    'Wasserstein-1 distance divided by the reference spread (unitless).';
COMMENT ON COLUMN analytics.feature_drift_by_interval.js_divergence_base2 IS
    'Jensen-Shannon divergence in base 2, between 0 and 1.';
COMMENT ON COLUMN analytics.feature_drift_by_interval.statistic_value IS
    'Value of the drift statistic named in statistic_name, compared with threshold.';
COMMENT ON COLUMN analytics.feature_drift_by_interval.baseline IS
    'The statistic between reference subsamples (its no-drift level).';
COMMENT ON COLUMN analytics.feature_drift_by_interval.verdict IS 'ok | drift | no_data.';
COMMENT ON COLUMN analytics.feature_drift_by_interval.unseen_categories IS
    'Categories seen in the interval but absent from the reference.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.concept_drift_changes AS
SELECT mv.model_name, mv.version, cdc.drift_run_id, dr.interval_start, dr.interval_end,
       cdc.stream_position, cdc.event_time, cdc.error_rate_before, cdc.error_rate_after,
       cdc.error_rate_after - cdc.error_rate_before AS error_rate_change
FROM concept_drift_change cdc
JOIN model_version mv ON mv.model_version_id = cdc.model_version_id
JOIN drift_run dr ON dr.drift_run_id = cdc.drift_run_id;

COMMENT ON VIEW analytics.concept_drift_changes IS
    'One row per ADWIN change point in a model version''s stream of prediction errors.';
COMMENT ON COLUMN analytics.concept_drift_changes.stream_position IS
    'Index of the labelled prediction (0-based, over the version''s whole life) where ADWIN fired.';
COMMENT ON COLUMN analytics.concept_drift_changes.event_time IS
    'Event time of the labelled row at stream_position, when known.';
COMMENT ON COLUMN analytics.concept_drift_changes.error_rate_before IS 'Error rate in ADWIN''s window before the cut.';
COMMENT ON COLUMN analytics.concept_drift_changes.error_rate_after IS 'Error rate in ADWIN''s window after the cut.';
COMMENT ON COLUMN analytics.concept_drift_changes.error_rate_change IS 'error_rate_after - error_rate_before.';

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.report_links AS
SELECT 'evaluation'::text AS kind, mv.model_name, mv.version, er.evaluation_run_id AS run_id,
       NULL::timestamptz AS interval_start, NULL::timestamptz AS interval_end,
       er.started_at, er.finished_at, er.report_uri
FROM evaluation_run er
JOIN model_version mv ON mv.model_version_id = er.model_version_id
WHERE er.report_uri IS NOT NULL
UNION ALL
SELECT 'drift'::text, mv.model_name, mv.version, dr.drift_run_id, dr.interval_start,
       dr.interval_end, dr.started_at, dr.finished_at, dr.report_uri
FROM drift_run dr
JOIN model_version mv ON mv.model_version_id = dr.model_version_id
WHERE dr.report_uri IS NOT NULL;

COMMENT ON VIEW analytics.report_links IS
    'One row per evaluation or drift run that has an HTML report.';
COMMENT ON COLUMN analytics.report_links.kind IS 'evaluation | drift.';
COMMENT ON COLUMN analytics.report_links.run_id IS
    'evaluation_run_id when kind = evaluation, drift_run_id when kind = drift.';
COMMENT ON COLUMN analytics.report_links.interval_start IS 'Data interval of a drift run; NULL for evaluations.';
COMMENT ON COLUMN analytics.report_links.interval_end IS 'Data interval of a drift run; NULL for evaluations.';
COMMENT ON COLUMN analytics.report_links.report_uri IS
    'Object URI of the report (not a signed link; `modelgate` presigns it when you open it).';

-- ---------------------------------------------------------------------------------------
-- Ownership and grants for the views.
ALTER VIEW analytics.model_versions OWNER TO modelgate_writer;
ALTER VIEW analytics.evaluation_runs OWNER TO modelgate_writer;
ALTER VIEW analytics.metric_history OWNER TO modelgate_writer;
ALTER VIEW analytics.gate_checks OWNER TO modelgate_writer;
ALTER VIEW analytics.latest_gate_decision OWNER TO modelgate_writer;
ALTER VIEW analytics.fairness_by_group OWNER TO modelgate_writer;
ALTER VIEW analytics.fairness_gaps OWNER TO modelgate_writer;
ALTER VIEW analytics.feature_importance OWNER TO modelgate_writer;
ALTER VIEW analytics.drift_runs OWNER TO modelgate_writer;
ALTER VIEW analytics.feature_drift_by_interval OWNER TO modelgate_writer;
ALTER VIEW analytics.concept_drift_changes OWNER TO modelgate_writer;
ALTER VIEW analytics.report_links OWNER TO modelgate_writer;

REVOKE ALL ON ALL TABLES IN SCHEMA analytics FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO modelgate_analyst;
GRANT USAGE ON SCHEMA analytics TO modelgate_analyst;
GRANT SELECT ON
    analytics.model_versions, analytics.evaluation_runs, analytics.metric_history,
    analytics.gate_checks, analytics.latest_gate_decision, analytics.fairness_by_group,
    analytics.fairness_gaps, analytics.feature_importance, analytics.drift_runs,
    analytics.feature_drift_by_interval, analytics.concept_drift_changes, analytics.report_links
TO modelgate_analyst;
