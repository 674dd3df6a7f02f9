-- Two parts of issue #23, both about what people read.
--
-- 1. Short, injective report names. evaluation_run.attempt and drift_run.attempt count how many
--    times the run row was started (1 on insert, + 1 each time a re-run of the same run key or
--    data interval resets it). A report's object key names the run id and, from the second
--    attempt on, the attempt (modelgate/pipelines/report_keys.py), so no later attempt ever
--    overwrites an earlier attempt's report. Rows written before this migration count as
--    attempt 1; their stored report keys are kept as they are.
-- 2. The model's output score is drifted under an internal feature name. The analyst view shows
--    it as 'model score' and says in the new column drift_of whether a row is the drift of a
--    feature or of the model's output; kind 'prediction' still marks it too.
-- Depends only on 0001-0004.

ALTER TABLE evaluation_run
    ADD COLUMN attempt integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT evaluation_run_attempt_check CHECK (attempt >= 1);
ALTER TABLE drift_run
    ADD COLUMN attempt integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT drift_run_attempt_check CHECK (attempt >= 1);

COMMENT ON COLUMN evaluation_run.attempt IS
    'How many times this run was started (a re-run of the same run key adds 1); part of its report''s key.';
COMMENT ON COLUMN drift_run.attempt IS
    'How many times this run was started (a re-run of the same interval adds 1); part of its report''s key.';

-- ---------------------------------------------------------------------------------------
-- Analyst view: the new column goes at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.feature_drift_by_interval AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status,
       CASE WHEN fd.kind = 'prediction' THEN 'model score' ELSE fd.feature END AS feature,
       fd.kind, fd.drift_rank, fd.wasserstein,
       fd.wasserstein_normalised, fd.js_divergence_base2, fd.statistic_name,
       fd.statistic_value, fd.baseline, fd.threshold, fd.verdict, fd.n_reference,
       fd.n_current, fd.n_missing_current, fd.unseen_categories,
       CASE WHEN fd.kind = 'prediction' THEN 'model_output' ELSE 'feature' END AS drift_of
FROM feature_drift fd
JOIN drift_run dr ON dr.drift_run_id = fd.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON VIEW analytics.feature_drift_by_interval IS
    'One row per drift run (model version x data interval) and feature, and one for the model''s '
    'output score (drift_of = model_output).';
COMMENT ON COLUMN analytics.feature_drift_by_interval.feature IS
    'The feature''s column name; ''model score'' on the row of the model''s output (drift_of = '
    'model_output), which a feature of that name never shares: tell them apart by drift_of.';
COMMENT ON COLUMN analytics.feature_drift_by_interval.drift_of IS
    'feature | model_output: the drift of an input column, or of the score the model gave the rows.';
