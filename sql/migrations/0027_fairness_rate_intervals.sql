-- Per-group rates with Wilson score intervals (issue #38): a rate of 24 of 24 is shown as
-- [0.862, 1], never as the point 1.
-- * fairness_group.<rate>_ci_lower, <rate>_ci_upper for tpr, fpr, selection_rate and ppv: the
--   Wilson score interval of the rate at the report's confidence level (95 % by default).
--   NULL where the rate is undefined, for regression rows and for rows written before this
--   migration.
-- Depends only on 0001-0023.

ALTER TABLE fairness_group
    ADD COLUMN tpr_ci_lower            double precision,
    ADD COLUMN tpr_ci_upper            double precision,
    ADD COLUMN fpr_ci_lower            double precision,
    ADD COLUMN fpr_ci_upper            double precision,
    ADD COLUMN selection_rate_ci_lower double precision,
    ADD COLUMN selection_rate_ci_upper double precision,
    ADD COLUMN ppv_ci_lower            double precision,
    ADD COLUMN ppv_ci_upper            double precision;

ALTER TABLE fairness_group ADD CONSTRAINT fairness_group_rate_intervals_check
    CHECK (0 <= tpr_ci_lower AND tpr_ci_lower <= tpr AND tpr <= tpr_ci_upper AND tpr_ci_upper <= 1
           AND 0 <= fpr_ci_lower AND fpr_ci_lower <= fpr AND fpr <= fpr_ci_upper AND fpr_ci_upper <= 1
           AND 0 <= selection_rate_ci_lower AND selection_rate_ci_lower <= selection_rate
           AND selection_rate <= selection_rate_ci_upper AND selection_rate_ci_upper <= 1
           AND 0 <= ppv_ci_lower AND ppv_ci_lower <= ppv AND ppv <= ppv_ci_upper
           AND ppv_ci_upper <= 1);

-- Analyst view: new columns go at the end (CREATE OR REPLACE VIEW may only append); the
-- columns before them are 0015's definition, unchanged.
CREATE OR REPLACE VIEW analytics.fairness_by_group AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       fg.sensitive_feature, fg.group_label, fg.n, fg.base_rate, fg.selection_rate,
       fg.tpr, fg.fpr, fg.ppv, fg.fnr, fg.is_small_group,
       fg.class_label, fg.mae, fg.rmse, fg.mean_prediction, fg.mean_error,
       fg.positives, fg.negatives, fg.predicted_positives, fg.accuracy, fg.roc_auc,
       fg.roc_auc_error_bound,
       fg.tpr_ci_lower, fg.tpr_ci_upper, fg.fpr_ci_lower, fg.fpr_ci_upper,
       fg.selection_rate_ci_lower, fg.selection_rate_ci_upper, fg.ppv_ci_lower, fg.ppv_ci_upper
FROM fairness_group fg
JOIN evaluation_run er ON er.evaluation_run_id = fg.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.fairness_by_group.tpr_ci_lower IS
    'Wilson score interval of tpr (true positives of the group''s positives), lower end; NULL when tpr is.';
COMMENT ON COLUMN analytics.fairness_by_group.tpr_ci_upper IS
    'Wilson score interval of tpr, upper end; NULL when tpr is.';
COMMENT ON COLUMN analytics.fairness_by_group.fpr_ci_lower IS
    'Wilson score interval of fpr (false positives of the group''s negatives), lower end; NULL when fpr is.';
COMMENT ON COLUMN analytics.fairness_by_group.fpr_ci_upper IS
    'Wilson score interval of fpr, upper end; NULL when fpr is.';
COMMENT ON COLUMN analytics.fairness_by_group.selection_rate_ci_lower IS
    'Wilson score interval of selection_rate (predicted positives of the group''s rows), lower end.';
COMMENT ON COLUMN analytics.fairness_by_group.selection_rate_ci_upper IS
    'Wilson score interval of selection_rate, upper end.';
COMMENT ON COLUMN analytics.fairness_by_group.ppv_ci_lower IS
    'Wilson score interval of ppv (true positives of the group''s predicted positives), lower end; NULL when ppv is.';
COMMENT ON COLUMN analytics.fairness_by_group.ppv_ci_upper IS
    'Wilson score interval of ppv, upper end; NULL when ppv is.';
