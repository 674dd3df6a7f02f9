-- Estimated performance per segment (issue #43 item 4).
--
-- segment_estimate holds one row per drift run x attempt x segment (a value of a segment column
-- named in the monitoring config) x metric: the label-free estimate on the segment's scored
-- rows (the model version's estimator, method as in performance_estimate), its interval for the
-- value the labels will give, the reference's realised value and the configured largest
-- worsening, and the check: the one-sided p-value that the segment is worse than the limit and
-- its q-value. The family (family_size tests, correction, level) is every drift test of
-- segment_drift and every judged estimate check of the attempt, adjusted together; status is
-- breach (q_value <= level), ok, not_judged (no limit or baseline for the metric) or
-- insufficient_data (the evidence an estimate needs is missing: reason). Keyed by attempt and
-- never changed or deleted while its run exists (segment_estimate_kept_trigger).
-- Depends only on 0003, 0004, 0038, 0041.

CREATE TABLE segment_estimate (
    drift_run_id     bigint           NOT NULL,
    attempt          integer          NOT NULL,
    segment_column   text             NOT NULL,
    segment_value    text             NOT NULL,
    metric           text             NOT NULL,
    method           text             NOT NULL,
    n_rows           bigint           NOT NULL,
    estimate         double precision,
    standard_error   double precision,
    lower_bound      double precision,
    upper_bound      double precision,
    confidence       double precision NOT NULL,
    reference_value  double precision,
    max_worsening    double precision,
    p_value          double precision,
    q_value          double precision,
    status           text             NOT NULL,
    reason           text,
    correction       text             NOT NULL,
    level            double precision NOT NULL,
    family_size      integer          NOT NULL,
    CONSTRAINT segment_estimate_pkey
        PRIMARY KEY (drift_run_id, attempt, segment_column, segment_value, metric),
    CONSTRAINT segment_estimate_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT segment_estimate_attempt_check CHECK (attempt >= 1),
    CONSTRAINT segment_estimate_n_rows_check CHECK (n_rows >= 0),
    CONSTRAINT segment_estimate_status_check
        CHECK (status IN ('breach', 'ok', 'not_judged', 'insufficient_data')),
    CONSTRAINT segment_estimate_judged_check
        CHECK ((status IN ('breach', 'ok')) = (p_value IS NOT NULL) AND (p_value IS NULL) = (q_value IS NULL)),
    CONSTRAINT segment_estimate_reason_check CHECK ((status IN ('breach', 'ok')) = (reason IS NULL)),
    CONSTRAINT segment_estimate_estimated_check
        CHECK (status <> 'insufficient_data' OR estimate IS NULL),
    CONSTRAINT segment_estimate_interval_check
        CHECK (lower_bound IS NULL OR upper_bound IS NULL OR lower_bound <= upper_bound),
    CONSTRAINT segment_estimate_p_value_check
        CHECK ((p_value IS NULL OR p_value BETWEEN 0 AND 1) AND (q_value IS NULL OR q_value BETWEEN 0 AND 1)),
    CONSTRAINT segment_estimate_confidence_check CHECK (confidence > 0 AND confidence < 1),
    CONSTRAINT segment_estimate_max_worsening_check CHECK (max_worsening IS NULL OR max_worsening >= 0),
    CONSTRAINT segment_estimate_correction_check CHECK (correction IN ('bh', 'by', 'holm')),
    CONSTRAINT segment_estimate_level_check CHECK (level > 0 AND level < 1),
    CONSTRAINT segment_estimate_family_check CHECK (family_size >= 0)
);

COMMENT ON TABLE segment_estimate IS
    'One row per drift run x attempt x segment x metric: the performance estimated on the segment''s rows before labels, its interval and its check against the limit; never changed.';
COMMENT ON COLUMN segment_estimate.q_value IS
    'p_value adjusted by correction over the attempt''s segment drift tests and judged estimate checks together (family_size tests); breach when q_value <= level.';

CREATE FUNCTION segment_estimate_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM drift_run
                                        WHERE drift_run_id = OLD.drift_run_id) THEN
        RETURN OLD;  -- its run was deleted (cascade)
    END IF;
    RAISE EXCEPTION 'segment estimates of attempt % of drift run % are never changed or deleted; '
        're-run the interval to add an attempt', OLD.attempt, OLD.drift_run_id
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER segment_estimate_kept_trigger BEFORE UPDATE OR DELETE ON segment_estimate
    FOR EACH ROW EXECUTE FUNCTION segment_estimate_kept();

CREATE VIEW analytics.segment_estimates AS
SELECT mv.model_name, mv.version, se.drift_run_id, dr.interval_start, dr.interval_end, se.attempt,
       (se.attempt = dr.current_attempt) AS is_current_attempt,
       se.segment_column, se.segment_value, se.metric, se.method, se.n_rows, se.estimate,
       se.standard_error, se.lower_bound, se.upper_bound, se.confidence, se.reference_value,
       se.max_worsening, se.p_value, se.q_value, se.status, se.reason, se.correction, se.level,
       se.family_size
FROM segment_estimate se
JOIN drift_run dr ON dr.drift_run_id = se.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;
COMMENT ON VIEW analytics.segment_estimates IS
    'One row per drift run x attempt x segment x metric: the estimated performance of the segment, its interval, p-value, q-value and status.';

ALTER VIEW analytics.segment_estimates OWNER TO modelgate_writer;
GRANT SELECT ON analytics.segment_estimates TO modelgate_analyst;
