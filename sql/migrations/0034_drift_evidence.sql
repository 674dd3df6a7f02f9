-- Evidence before verdicts, and broken rows as findings (issue #39 points 2-4).
--
-- insufficient_data: a feature with fewer non-missing current values than its minimum
-- (thresholds.min_values), a run whose features all lack that evidence, an estimate below its
-- row minimum or an AUC without enough expected pairs (thresholds.estimation). The run's
-- evidence_reason says why; an estimate left undefined says so in undefined_reason. A run of
-- status insufficient_data leaves model_version.is_drifting as it was.
-- rows_set_aside: sampled rows the model could not score (a value missing in a feature whose
-- manifest allows none, a non-finite number); the rest are scored and judged, the run is
-- degraded and degraded_reason counts them per column.
-- analytics.estimation_references shows each version's estimator or why it was skipped.

ALTER TABLE drift_run DROP CONSTRAINT drift_run_status_check;
ALTER TABLE drift_run ADD CONSTRAINT drift_run_status_check
    CHECK (status IN ('running', 'ok', 'drift', 'no_data', 'insufficient_data', 'degraded', 'failed',
                      'abandoned'));
ALTER TABLE drift_run ADD COLUMN rows_set_aside bigint,
    ADD COLUMN set_aside_reason text,
    ADD COLUMN evidence_reason text,
    ADD CONSTRAINT drift_run_rows_set_aside_check CHECK (rows_set_aside IS NULL OR rows_set_aside >= 0),
    ADD CONSTRAINT drift_run_evidence_reason_check
        CHECK (verdict IS DISTINCT FROM 'insufficient_data' OR evidence_reason IS NOT NULL);

ALTER TABLE feature_drift DROP CONSTRAINT feature_drift_verdict_check;
ALTER TABLE feature_drift ADD CONSTRAINT feature_drift_verdict_check
    CHECK (verdict IN ('ok', 'drift', 'no_data', 'insufficient_data'));

ALTER TABLE performance_estimate DROP CONSTRAINT performance_estimate_verdict_check;
ALTER TABLE performance_estimate ADD CONSTRAINT performance_estimate_verdict_check
    CHECK (verdict IN ('ok', 'breach', 'no_data', 'insufficient_data'));
ALTER TABLE performance_estimate ADD COLUMN undefined_reason text,
    ADD CONSTRAINT performance_estimate_undefined_reason_check
        CHECK (verdict <> 'insufficient_data' OR (undefined_reason IS NOT NULL AND estimate IS NULL));

COMMENT ON COLUMN drift_run.rows_set_aside IS
    'Sampled rows set aside unscored (a value missing where the manifest allows none, a non-finite number); NULL before 0034.';
COMMENT ON COLUMN drift_run.evidence_reason IS
    'Why the verdict is insufficient_data: too few values for any feature to be judged.';
COMMENT ON COLUMN performance_estimate.undefined_reason IS
    'Why estimate is NULL (too few scored rows; an AUC without enough expected positives or negatives).';

-- Columns can only be appended to a view in place; the grants of 0004 and 0021 stay.
CREATE OR REPLACE VIEW analytics.drift_runs AS
SELECT dr.drift_run_id, mv.model_name, mv.version, dr.interval_start, dr.interval_end,
       dr.status, dr.verdict, dr.failure_reason, dr.provider, dr.rows_available,
       dr.rows_sampled, dr.rows_labelled, dr.n_features_breached, dr.started_at, dr.finished_at,
       (EXTRACT(EPOCH FROM dr.finished_at - dr.started_at) * 1000)::double precision AS duration_ms,
       CASE WHEN dr.status = 'degraded' THEN CASE WHEN dr.verdict = 'drift' THEN 'red' ELSE 'amber' END
            WHEN dr.status = 'ok' THEN 'green' WHEN dr.status IN ('no_data', 'insufficient_data') THEN 'amber'
            WHEN dr.status = 'running' THEN 'grey' ELSE 'red' END AS light,
       dr.degraded_reason, dr.rows_set_aside, dr.evidence_reason
FROM drift_run dr
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON COLUMN analytics.drift_runs.status IS
    'running | ok | drift | no_data | insufficient_data (too few values for a verdict: see '
    'evidence_reason) | degraded (finished, but partitions were quarantined or rows set aside: see '
    'degraded_reason; verdict holds ok, drift, no_data or insufficient_data) | failed | abandoned '
    '(left running by a process that died: no heartbeat; see failure_reason).';
COMMENT ON COLUMN analytics.drift_runs.light IS
    'green = ok, amber = no_data, insufficient_data or degraded without drift, red = drift, failed '
    'or abandoned, grey = running.';
COMMENT ON COLUMN analytics.drift_runs.rows_set_aside IS
    'Sampled rows the model could not score, left out of the scores (counted per column in degraded_reason).';
COMMENT ON COLUMN analytics.drift_runs.evidence_reason IS
    'Why the verdict is insufficient_data.';

CREATE OR REPLACE VIEW analytics.performance_estimates AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status, pe.metric, pe.method, pe.estimate, pe.lower_bound, pe.upper_bound,
       pe.standard_error, pe.confidence, pe.n_rows, pe.reference_value, pe.max_worsening,
       pe.verdict, rp.realised, rp.n_labelled,
       CASE WHEN rp.realised IS NULL OR pe.lower_bound IS NULL OR pe.upper_bound IS NULL THEN NULL
            ELSE rp.realised BETWEEN pe.lower_bound AND pe.upper_bound END AS realised_inside,
       pe.undefined_reason
FROM performance_estimate pe
JOIN drift_run dr ON dr.drift_run_id = pe.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id
LEFT JOIN realised_performance rp
       ON rp.model_version_id = dr.model_version_id AND rp.interval_start = dr.interval_start
      AND rp.interval_end = dr.interval_end AND rp.metric = pe.metric;

COMMENT ON COLUMN analytics.performance_estimates.undefined_reason IS
    'Why estimate is NULL (verdict insufficient_data): too few scored rows, or an AUC without enough expected pairs.';

CREATE OR REPLACE VIEW analytics.estimation_references AS
SELECT mv.model_name, mv.version, er.method, er.skipped_reason, er.n_rows, er.n_features,
       er.created_at
FROM estimation_reference er
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON VIEW analytics.estimation_references IS
    'Per model version: the performance estimator fitted on its labelled reference, or (method NULL) '
    'why none was: no usable labels, one class, too few of a class, constant scores.';

ALTER VIEW analytics.estimation_references OWNER TO modelgate_writer;
REVOKE ALL ON analytics.estimation_references FROM PUBLIC;
GRANT SELECT ON analytics.estimation_references TO modelgate_analyst;
