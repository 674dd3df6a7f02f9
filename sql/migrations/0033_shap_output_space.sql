-- SHAP values of tree-ensemble and linear graphs are read exactly from the model node
-- (issue #40), in the model's margin space: log-odds for a binary classifier with a
-- sigmoid, a class's raw score before the softmax for a multiclass one. The space a run's
-- values (and so shap_importance.mean_abs_shap) are in is stored with its budget:
-- * shap_budget.output_space: 'probability', 'logit', 'margin' or 'value'; NULL on runs
--   recorded before this migration (they explained the probability, or the value of a
--   regression model). shap_budget.algorithm may now also say 'tree_interventional' or
--   'linear_interventional' (exact, standard error 0).
-- Mean |SHAP| of two runs in different spaces is not comparable.

ALTER TABLE shap_budget ADD COLUMN output_space text;
ALTER TABLE shap_budget ADD CONSTRAINT shap_budget_output_space_check
    CHECK (output_space IS NULL OR output_space IN ('probability', 'logit', 'margin', 'value'));

COMMENT ON COLUMN shap_budget.output_space IS
    'Space of the run''s SHAP values: probability, logit (log-odds), margin (raw class score '
    'before the softmax) or value (regression); NULL before migration 0033.';
