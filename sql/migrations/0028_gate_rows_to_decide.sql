-- How much more data would decide an inconclusive gate check (issue #38).
-- * gate_check.rows_to_decide: about how many more rows would make the check's interval clear
--   its limit at the observed effect (the half-width taken to shrink as 1/sqrt(n):
--   n * (half_width / |point - limit|)^2 - n). NULL for every verdict but 'inconclusive', and
--   for an inconclusive check whose point equals its limit (the reason says it cannot be
--   decided at the observed effect), and on rows written before this migration.
-- * gate_check.group_positives_to_decide / group_negatives_to_decide: fairness checks of
--   classifiers, the same projection for the label positives and negatives of the group with
--   the fewest of them.

ALTER TABLE gate_check
    ADD COLUMN rows_to_decide            bigint,
    ADD COLUMN group_positives_to_decide bigint,
    ADD COLUMN group_negatives_to_decide bigint;

ALTER TABLE gate_check ADD CONSTRAINT gate_check_rows_to_decide_check
    CHECK (rows_to_decide >= 0 AND group_positives_to_decide >= 0
           AND group_negatives_to_decide >= 0);

-- Analyst view: the new columns appended at the end.
CREATE OR REPLACE VIEW analytics.gate_checks AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.started_at,
       gc.check_id, gc.kind, gc.metric_name, gc.sensitive_feature, gc.threshold_text,
       gc.observed, gc.ci_lower, gc.ci_upper, gc.n, gc.verdict, gc.severity, gc.reason,
       (gc.effect = 'block') AS is_blocking_failure,
       gc.basis, gc.on_inconclusive, gc.effect, gc.min_group_positives, gc.min_group_negatives,
       gc.required_positives, gc.required_negatives,
       gc.rows_to_decide, gc.group_positives_to_decide, gc.group_negatives_to_decide
FROM gate_check gc
JOIN evaluation_run er ON er.evaluation_run_id = gc.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.gate_checks.rows_to_decide IS
    'Inconclusive checks: about how many more rows would make the interval clear the limit at '
    'the observed effect (half-width ~ 1/sqrt(n)); NULL otherwise, or when the point equals '
    'the limit (cannot be decided at the observed effect).';
COMMENT ON COLUMN analytics.gate_checks.group_positives_to_decide IS
    'Inconclusive fairness checks of classifiers: about how many more label positives in the '
    'group with the fewest; NULL otherwise.';
COMMENT ON COLUMN analytics.gate_checks.group_negatives_to_decide IS
    'Inconclusive fairness checks of classifiers: about how many more label negatives in the '
    'group with the fewest; NULL otherwise.';
