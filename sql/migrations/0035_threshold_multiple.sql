-- The drift statistic as a multiple of its own threshold, in the analyst view (issue #39 point 8).
--
-- The one definition of "worst" the drift report, its chart, `monitor list` and the demo's
-- summary use (drift/threshold_multiple.py): statistic_value / threshold; a zero threshold makes
-- a positive value infinitely far over it and a zero value 0; NULL without a value.
-- The new column goes at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.feature_drift_by_interval AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status,
       CASE WHEN fd.kind = 'prediction' THEN 'model score' ELSE fd.feature END AS feature,
       fd.kind, fd.drift_rank, fd.wasserstein,
       fd.wasserstein_normalised, fd.js_divergence_base2, fd.statistic_name,
       fd.statistic_value, fd.baseline, fd.threshold, fd.verdict, fd.n_reference,
       fd.n_current, fd.n_missing_current, fd.unseen_categories,
       CASE WHEN fd.kind = 'prediction' THEN 'model_output' ELSE 'feature' END AS drift_of,
       CASE WHEN fd.statistic_value IS NULL OR fd.threshold IS NULL THEN NULL
            WHEN fd.threshold > 0 THEN fd.statistic_value / fd.threshold
            WHEN fd.statistic_value > 0 THEN 'Infinity'::double precision
            ELSE 0.0 END AS threshold_multiple
FROM feature_drift fd
JOIN drift_run dr ON dr.drift_run_id = fd.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON COLUMN analytics.feature_drift_by_interval.threshold_multiple IS
    'statistic_value / threshold: 1 is the threshold, 8.9 nearly nine times it, whatever the '
    'statistic (JS or normalised Wasserstein); the largest is the run''s worst feature.';
