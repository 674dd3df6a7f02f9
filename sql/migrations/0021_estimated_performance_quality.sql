-- Estimated performance and data quality per drift interval (issue #24).
--
-- Per model version, built with its reference sketch (``modelgate monitor set`` or promotion) on the
-- held-out reference: the fitted estimator (an isotonic calibrator, one per class for multiclass, or a
-- binned error model for regression; the object itself in the object store), the reference's own
-- labelled metrics (the baseline an estimated drop is measured from) and the quality schema per
-- feature. These rows are evidence every later interval is judged against: append-only (trigger).
-- Per drift run: each estimated metric with its interval, each feature's quality counts and verdict.
-- Per scored interval: the realised metric, written by the run that fed the interval's labels to
-- ADWIN (on time or late). Depends only on 0003 (model_version, drift_run, scored_interval) and 0004
-- (roles, schema analytics).

CREATE TABLE estimation_reference (
    model_version_id  bigint      NOT NULL,
    object_key        text        NOT NULL,
    object_uri        text        NOT NULL,
    method            text,
    skipped_reason    text,
    n_rows            bigint      NOT NULL,
    n_features        integer     NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT estimation_reference_pkey PRIMARY KEY (model_version_id),
    CONSTRAINT estimation_reference_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT estimation_reference_method_check CHECK (
        method IN ('cbpe_isotonic', 'cbpe_isotonic_one_vs_rest', 'binned_error_model')),
    CONSTRAINT estimation_reference_skipped_check CHECK ((method IS NULL) = (skipped_reason IS NOT NULL)),
    CONSTRAINT estimation_reference_n_rows_check CHECK (n_rows >= 1),
    CONSTRAINT estimation_reference_n_features_check CHECK (n_features >= 0)
);

COMMENT ON COLUMN estimation_reference.method IS
    'NULL when performance cannot be estimated (the reference has no usable labels; skipped_reason says why): quality is still checked.';

CREATE TABLE estimation_reference_metric (
    model_version_id  bigint           NOT NULL,
    metric            text             NOT NULL,
    realised          double precision,
    CONSTRAINT estimation_reference_metric_pkey PRIMARY KEY (model_version_id, metric),
    CONSTRAINT estimation_reference_metric_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES estimation_reference (model_version_id),
    CONSTRAINT estimation_reference_metric_metric_check CHECK (
        metric IN ('roc_auc', 'accuracy', 'precision', 'recall', 'f1', 'mae', 'rmse'))
);

CREATE TABLE quality_schema_feature (
    model_version_id  bigint           NOT NULL,
    feature           text             NOT NULL,
    kind              text             NOT NULL,
    n_rows            bigint           NOT NULL,
    missing_rate      double precision NOT NULL,
    minimum           double precision,
    maximum           double precision,
    low               double precision,
    high              double precision,
    integral          boolean          NOT NULL,
    domain_size       integer,
    CONSTRAINT quality_schema_feature_pkey PRIMARY KEY (model_version_id, feature),
    CONSTRAINT quality_schema_feature_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES estimation_reference (model_version_id),
    CONSTRAINT quality_schema_feature_kind_check CHECK (kind IN ('numeric', 'categorical')),
    CONSTRAINT quality_schema_feature_missing_rate_check CHECK (missing_rate >= 0 AND missing_rate <= 1),
    CONSTRAINT quality_schema_feature_range_check CHECK (low IS NULL OR high IS NULL OR low <= high)
);
-- Every foreign key above is the leading column of its table's primary key, which indexes it.

CREATE FUNCTION estimation_reference_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: model version id % keeps the estimator and schema its '
        'intervals were judged against', TG_TABLE_NAME, OLD.model_version_id
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER estimation_reference_append_only_trigger BEFORE UPDATE OR DELETE
    ON estimation_reference FOR EACH ROW EXECUTE FUNCTION estimation_reference_append_only();
CREATE TRIGGER estimation_reference_metric_append_only_trigger BEFORE UPDATE OR DELETE
    ON estimation_reference_metric FOR EACH ROW EXECUTE FUNCTION estimation_reference_append_only();
CREATE TRIGGER quality_schema_feature_append_only_trigger BEFORE UPDATE OR DELETE
    ON quality_schema_feature FOR EACH ROW EXECUTE FUNCTION estimation_reference_append_only();

-- Per drift run (cleared and rewritten when the run is re-run, like feature_drift).
CREATE TABLE performance_estimate (
    drift_run_id      bigint           NOT NULL,
    metric            text             NOT NULL,
    method            text             NOT NULL,
    estimate          double precision,
    standard_error    double precision,
    lower_bound       double precision,
    upper_bound       double precision,
    confidence        double precision NOT NULL,
    n_rows            bigint           NOT NULL,
    reference_value   double precision,
    max_worsening     double precision,
    verdict           text             NOT NULL,
    CONSTRAINT performance_estimate_pkey PRIMARY KEY (drift_run_id, metric),
    CONSTRAINT performance_estimate_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT performance_estimate_metric_check CHECK (
        metric IN ('roc_auc', 'accuracy', 'precision', 'recall', 'f1', 'mae', 'rmse')),
    CONSTRAINT performance_estimate_verdict_check CHECK (verdict IN ('ok', 'breach', 'no_data')),
    CONSTRAINT performance_estimate_confidence_check CHECK (confidence > 0 AND confidence < 1),
    CONSTRAINT performance_estimate_interval_check CHECK (
        lower_bound IS NULL OR upper_bound IS NULL OR lower_bound <= upper_bound),
    CONSTRAINT performance_estimate_max_worsening_check CHECK (max_worsening IS NULL OR max_worsening >= 0)
);

CREATE TABLE quality_check (
    drift_run_id            bigint           NOT NULL,
    feature                 text             NOT NULL,
    kind                    text             NOT NULL,
    n_rows                  bigint           NOT NULL,
    n_missing               bigint           NOT NULL,
    missing_rate            double precision,
    reference_missing_rate  double precision,
    n_type_mismatch         bigint           NOT NULL,
    n_out_of_range          bigint           NOT NULL,
    n_new_category          bigint           NOT NULL,
    n_new_values            bigint           NOT NULL,
    domain_checked          boolean          NOT NULL,
    column_present          boolean          NOT NULL,
    verdict                 text             NOT NULL,
    reasons                 text[]           NOT NULL,
    CONSTRAINT quality_check_pkey PRIMARY KEY (drift_run_id, feature),
    CONSTRAINT quality_check_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT quality_check_kind_check CHECK (kind IN ('numeric', 'categorical')),
    CONSTRAINT quality_check_verdict_check CHECK (verdict IN ('ok', 'breach', 'no_data')),
    CONSTRAINT quality_check_counts_check CHECK (
        n_missing >= 0 AND n_missing <= n_rows AND n_type_mismatch >= 0 AND n_out_of_range >= 0
        AND n_new_category >= 0 AND n_new_values >= 0)
);

-- Per scored interval, once its labels were fed to ADWIN (kept when the feeding run is re-run:
-- labels are consumed once).
CREATE TABLE realised_performance (
    model_version_id  bigint           NOT NULL,
    interval_start    timestamptz      NOT NULL,
    interval_end      timestamptz      NOT NULL,
    metric            text             NOT NULL,
    realised          double precision,
    n_labelled        bigint           NOT NULL,
    drift_run_id      bigint,
    recorded_at       timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT realised_performance_pkey PRIMARY KEY (model_version_id, interval_start, interval_end, metric),
    CONSTRAINT realised_performance_model_version_id_interval_start_interval_end_fkey
        FOREIGN KEY (model_version_id, interval_start, interval_end)
        REFERENCES scored_interval (model_version_id, interval_start, interval_end),
    CONSTRAINT realised_performance_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE SET NULL,
    CONSTRAINT realised_performance_metric_check CHECK (
        metric IN ('roc_auc', 'accuracy', 'precision', 'recall', 'f1', 'mae', 'rmse')),
    CONSTRAINT realised_performance_n_labelled_check CHECK (n_labelled >= 1)
);
CREATE INDEX realised_performance_drift_run_id_idx ON realised_performance (drift_run_id);

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.quality_by_interval AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status, q.feature, q.kind, q.verdict, q.reasons, q.n_rows, q.n_missing,
       q.missing_rate, q.reference_missing_rate, q.n_type_mismatch, q.n_out_of_range,
       q.n_new_category, q.n_new_values, q.domain_checked, q.column_present
FROM quality_check q
JOIN drift_run dr ON dr.drift_run_id = q.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON VIEW analytics.quality_by_interval IS
    'One row per drift run x feature: data-quality counts of the sampled live rows against the schema inferred from the reference.';
COMMENT ON COLUMN analytics.quality_by_interval.verdict IS
    'breach when a share passes its limit (reasons lists each, e.g. out_of_range 0.0500 > 0.0100); no_data for an empty interval.';
COMMENT ON COLUMN analytics.quality_by_interval.n_out_of_range IS
    'Numeric values outside the reference [min, max] widened by 10% of its span on each side.';
COMMENT ON COLUMN analytics.quality_by_interval.n_new_category IS
    'Rows holding a category the reference never held (only when the reference domain has at most 1,000 values: domain_checked).';
COMMENT ON COLUMN analytics.quality_by_interval.n_type_mismatch IS
    'Values of a type the reference never held (a string in a numeric column, a fraction in a whole-number one).';

CREATE OR REPLACE VIEW analytics.performance_estimates AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status, pe.metric, pe.method, pe.estimate, pe.lower_bound, pe.upper_bound,
       pe.standard_error, pe.confidence, pe.n_rows, pe.reference_value, pe.max_worsening,
       pe.verdict, rp.realised, rp.n_labelled,
       CASE WHEN rp.realised IS NULL OR pe.lower_bound IS NULL OR pe.upper_bound IS NULL THEN NULL
            ELSE rp.realised BETWEEN pe.lower_bound AND pe.upper_bound END AS realised_inside
FROM performance_estimate pe
JOIN drift_run dr ON dr.drift_run_id = pe.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id
LEFT JOIN realised_performance rp
       ON rp.model_version_id = dr.model_version_id AND rp.interval_start = dr.interval_start
      AND rp.interval_end = dr.interval_end AND rp.metric = pe.metric;

COMMENT ON VIEW analytics.performance_estimates IS
    'One row per drift run x metric: performance estimated from the scores before labels, its interval, and the realised value once the interval''s labels arrived.';
COMMENT ON COLUMN analytics.performance_estimates.estimate IS
    'Estimated metric of the sampled live rows (CBPE-style for classifiers, binned reference errors for regression); NULL when undefined.';
COMMENT ON COLUMN analytics.performance_estimates.lower_bound IS
    'Lower end of the interval (at confidence) for the metric the labels will give.';
COMMENT ON COLUMN analytics.performance_estimates.reference_value IS
    'The metric realised on the labelled reference the estimator was fitted on.';
COMMENT ON COLUMN analytics.performance_estimates.max_worsening IS
    'Configured limit (thresholds.performance): breach when the estimate is worse than reference_value by more; NULL: not thresholded.';
COMMENT ON COLUMN analytics.performance_estimates.realised IS
    'The metric on the interval''s labelled rows; NULL until its labels arrive.';
COMMENT ON COLUMN analytics.performance_estimates.realised_inside IS
    'Whether the realised value fell inside [lower_bound, upper_bound]; NULL until labels arrive.';

ALTER VIEW analytics.quality_by_interval OWNER TO modelgate_writer;
ALTER VIEW analytics.performance_estimates OWNER TO modelgate_writer;
REVOKE ALL ON analytics.quality_by_interval, analytics.performance_estimates FROM PUBLIC;
GRANT SELECT ON analytics.quality_by_interval, analytics.performance_estimates TO modelgate_analyst;
