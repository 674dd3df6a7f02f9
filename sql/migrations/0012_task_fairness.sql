-- Multiclass and regression models (issue #12) in the fairness tables.
-- * fairness_group.class_label: a multiclass model's fairness is one-vs-rest per class, so a
--   group has one row per class; binary and regression rows have class_label ''.
-- * fairness_group.mae, rmse, mean_prediction, mean_error: a regression model's group errors
--   (in the label's units); NULL for classifiers, whose rate columns are NULL for regression.
-- * fairness_metric needs no change: per-class gaps are named <gap>[<class>] (tpr_gap[cat]).

ALTER TABLE fairness_group
    ADD COLUMN class_label     text NOT NULL DEFAULT '',
    ADD COLUMN mae             double precision,
    ADD COLUMN rmse            double precision,
    ADD COLUMN mean_prediction double precision,
    ADD COLUMN mean_error      double precision;

ALTER TABLE fairness_group DROP CONSTRAINT fairness_group_pkey;
ALTER TABLE fairness_group ADD CONSTRAINT fairness_group_pkey
    PRIMARY KEY (evaluation_run_id, sensitive_feature, class_label, group_label_sha256);
ALTER TABLE fairness_group ADD CONSTRAINT fairness_group_errors_check
    CHECK ((mae IS NULL OR mae >= 0) AND (rmse IS NULL OR rmse >= 0));

-- Analyst views: new columns go at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.fairness_by_group AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       fg.sensitive_feature, fg.group_label, fg.n, fg.base_rate, fg.selection_rate,
       fg.tpr, fg.fpr, fg.ppv, fg.fnr, fg.is_small_group,
       fg.class_label, fg.mae, fg.rmse, fg.mean_prediction, fg.mean_error
FROM fairness_group fg
JOIN evaluation_run er ON er.evaluation_run_id = fg.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.fairness_by_group.class_label IS
    'Multiclass models: the class whose one-vs-rest rates the row holds (positive = that class); '
    'the empty string for binary and regression models.';
COMMENT ON COLUMN analytics.fairness_by_group.mae IS
    'Regression models: mean absolute error in the group (label units); NULL for classifiers.';
COMMENT ON COLUMN analytics.fairness_by_group.rmse IS
    'Regression models: root mean squared error in the group (label units); NULL for classifiers.';
COMMENT ON COLUMN analytics.fairness_by_group.mean_prediction IS
    'Regression models: mean predicted value in the group; NULL for classifiers.';
COMMENT ON COLUMN analytics.fairness_by_group.mean_error IS
    'Regression models: mean of prediction - label in the group (bias); NULL for classifiers.';
