-- Issue #24: the regression estimator fitted per model version is the nanny error model
-- (drift/regression_estimation.py, fit_nanny_model: |e| and e^2 from the features and the
-- prediction, NannyML's DLE). Versions fitted before keep 'binned_error_model' rows and pickles.
-- Depends only on 0021.

ALTER TABLE estimation_reference DROP CONSTRAINT estimation_reference_method_check;
ALTER TABLE estimation_reference ADD CONSTRAINT estimation_reference_method_check CHECK (
    method IN ('cbpe_isotonic', 'cbpe_isotonic_one_vs_rest', 'binned_error_model',
               'nanny_error_model'));
