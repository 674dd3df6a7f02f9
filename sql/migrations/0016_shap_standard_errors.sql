-- SHAP values are exact where exact is cheap and estimated, with a standard error, above
-- that (issue #20). The standard errors are stored beside the numbers they qualify:
-- * shap_importance.mean_abs_shap_se: the estimator's standard error of mean |SHAP|
--   (0 when the values are exact); NULL on runs recorded before this migration.
-- * shap_budget.max_standard_error: the largest standard error of any SHAP value of the run
--   (0 when exact); NULL on earlier runs. shap_budget.algorithm says 'exact' or 'permutation'.

ALTER TABLE shap_importance ADD COLUMN mean_abs_shap_se double precision;
ALTER TABLE shap_importance ADD CONSTRAINT shap_importance_mean_abs_shap_se_check
    CHECK (mean_abs_shap_se IS NULL OR mean_abs_shap_se >= 0);

ALTER TABLE shap_budget ADD COLUMN max_standard_error double precision;
ALTER TABLE shap_budget ADD CONSTRAINT shap_budget_max_standard_error_check
    CHECK (max_standard_error IS NULL OR max_standard_error >= 0);

-- Analyst views: new columns go at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.feature_importance AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       si.feature, si.importance_rank, si.mean_abs_shap,
       si.mean_abs_shap_se, sb.algorithm AS shap_algorithm
FROM shap_importance si
JOIN evaluation_run er ON er.evaluation_run_id = si.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN shap_budget sb ON sb.evaluation_run_id = si.evaluation_run_id;

COMMENT ON COLUMN analytics.feature_importance.mean_abs_shap_se IS
    'Standard error of mean_abs_shap from the SHAP estimator (0 when shap_algorithm is exact); '
    'it does not cover which rows were sampled. NULL for runs recorded before migration 0016.';
COMMENT ON COLUMN analytics.feature_importance.shap_algorithm IS
    'exact (all coalitions enumerated) or permutation (an estimate with a standard error); '
    'older runs may say kernel.';
