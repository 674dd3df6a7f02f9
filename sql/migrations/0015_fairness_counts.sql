-- Fairness tables with their counts (issue #20): a rate is shown with the rows behind it, and a
-- gap with the rate that drives it and the two groups it lies between.
-- * fairness_group.positives, negatives, predicted_positives: the denominators of tpr and fnr,
--   of fpr, and of ppv; accuracy; roc_auc (binary models) with roc_auc_error_bound (0 when
--   exact; scores pooled on a grid past 2^22 distinct group scores). NULL for regression rows
--   and for rows written before this migration; roc_auc NULL for multiclass rows.
-- * fairness_metric.driving_rate (tpr, fpr, selection_rate or ppv; for equalized_odds_difference
--   the rate of the larger gap), highest_group and lowest_group: the groups with the highest
--   and lowest value of that rate (for regression gaps: of the gap's error), NULL when undefined.
-- Depends only on 0001-0012.

ALTER TABLE fairness_group
    ADD COLUMN positives           bigint,
    ADD COLUMN negatives           bigint,
    ADD COLUMN predicted_positives bigint,
    ADD COLUMN accuracy            double precision,
    ADD COLUMN roc_auc             double precision,
    ADD COLUMN roc_auc_error_bound double precision;

ALTER TABLE fairness_group ADD CONSTRAINT fairness_group_counts_check
    CHECK (positives >= 0 AND negatives >= 0 AND positives + negatives = n
           AND predicted_positives BETWEEN 0 AND n);
ALTER TABLE fairness_group ADD CONSTRAINT fairness_group_accuracy_check
    CHECK (accuracy BETWEEN 0 AND 1 AND roc_auc BETWEEN 0 AND 1 AND roc_auc_error_bound >= 0);

ALTER TABLE fairness_metric
    ADD COLUMN driving_rate  text,
    ADD COLUMN highest_group text,
    ADD COLUMN lowest_group  text;

ALTER TABLE fairness_metric ADD CONSTRAINT fairness_metric_driving_rate_check
    CHECK (driving_rate IN ('tpr', 'fpr', 'selection_rate', 'ppv'));

-- Analyst views: new columns go at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.fairness_by_group AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       fg.sensitive_feature, fg.group_label, fg.n, fg.base_rate, fg.selection_rate,
       fg.tpr, fg.fpr, fg.ppv, fg.fnr, fg.is_small_group,
       fg.class_label, fg.mae, fg.rmse, fg.mean_prediction, fg.mean_error,
       fg.positives, fg.negatives, fg.predicted_positives, fg.accuracy, fg.roc_auc,
       fg.roc_auc_error_bound
FROM fairness_group fg
JOIN evaluation_run er ON er.evaluation_run_id = fg.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.fairness_by_group.positives IS
    'Classifiers: rows with a positive label in the group, the denominator of tpr and fnr.';
COMMENT ON COLUMN analytics.fairness_by_group.negatives IS
    'Classifiers: rows with a negative label in the group, the denominator of fpr.';
COMMENT ON COLUMN analytics.fairness_by_group.predicted_positives IS
    'Classifiers: rows predicted positive in the group, the denominator of ppv.';
COMMENT ON COLUMN analytics.fairness_by_group.accuracy IS
    'Classifiers: share of the group''s rows predicted right (one-vs-rest rows: of the class or not).';
COMMENT ON COLUMN analytics.fairness_by_group.roc_auc IS
    'Binary models: ROC AUC of the scores within the group; NULL without positives or negatives.';
COMMENT ON COLUMN analytics.fairness_by_group.roc_auc_error_bound IS
    'Most roc_auc can differ from the exact AUC: 0 when exact, above 0 when scores were pooled on a grid.';

CREATE OR REPLACE VIEW analytics.fairness_gaps AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       fm.sensitive_feature, fm.metric_name, fm.value, fm.ci_lower, fm.ci_upper,
       fm.driving_rate, fm.highest_group, fm.lowest_group
FROM fairness_metric fm
JOIN evaluation_run er ON er.evaluation_run_id = fm.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.fairness_gaps.driving_rate IS
    'The group rate whose spread is the gap: tpr, fpr, selection_rate or ppv; for '
    'equalized_odds_difference the rate of the larger gap (tpr on a tie). NULL when undefined, '
    'for tpr_fpr_gap_sum and for regression gaps.';
COMMENT ON COLUMN analytics.fairness_gaps.highest_group IS
    'Group with the highest value of the rate (or error) behind the gap; NULL when undefined.';
COMMENT ON COLUMN analytics.fairness_gaps.lowest_group IS
    'Group with the lowest value of the rate (or error) behind the gap; NULL when undefined.';
