-- Issue #40, points 5 and 2.
--
-- (5) Attribution drift's threshold comes from the reference's own split null: the total
-- variation between the mean-|SHAP| profiles of disjoint random (n - k, k) subsets of the
-- reference rows, at a few sizes k. The null_level quantile at each size is stored
-- standardised (divided by sqrt(1/(n - k) + 1/k)); a live check interpolates it at its own
-- size on the 1/sqrt(m) scale (see modelgate.drift.attribution). References stored before
-- this migration have NULL here and keep the old rule max(0.1, 1.8 * size-adjusted baseline).
ALTER TABLE attribution_reference
    ADD COLUMN null_sizes integer[],
    ADD COLUMN null_quantiles double precision[],
    ADD COLUMN null_level double precision;
ALTER TABLE attribution_reference ADD CONSTRAINT attribution_reference_null_check
    CHECK ((null_sizes IS NULL AND null_quantiles IS NULL AND null_level IS NULL)
           OR (cardinality(null_sizes) >= 1
               AND cardinality(null_sizes) = cardinality(null_quantiles)
               AND null_level > 0 AND null_level < 1));

COMMENT ON COLUMN attribution_reference.null_sizes IS
    'Subset sizes k of the split null (increasing); NULL before migration 0037.';
COMMENT ON COLUMN attribution_reference.null_quantiles IS
    'null_level quantile of the total variation between (n_rows - k, k) splits of the reference '
    'rows, divided by sqrt(1/(n_rows - k) + 1/k), one per null_sizes entry.';
COMMENT ON COLUMN attribution_reference.null_level IS 'Quantile level of null_quantiles (0.99).';

-- (2) The space the SHAP values explain, beside the importance. New columns go at the end
-- (CREATE OR REPLACE VIEW may only append); the definition is migration 0016's.
CREATE OR REPLACE VIEW analytics.feature_importance AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.finished_at,
       si.feature, si.importance_rank, si.mean_abs_shap,
       si.mean_abs_shap_se, sb.algorithm AS shap_algorithm, sb.output_space
FROM shap_importance si
JOIN evaluation_run er ON er.evaluation_run_id = si.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN shap_budget sb ON sb.evaluation_run_id = si.evaluation_run_id;

COMMENT ON COLUMN analytics.feature_importance.output_space IS
    'Space of mean_abs_shap: probability, logit (log-odds), margin (raw class score before the '
    'softmax) or value (regression); NULL for runs recorded before migration 0033. Importances '
    'in different spaces are not comparable.';
