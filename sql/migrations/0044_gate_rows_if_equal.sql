-- How many more rows would show a fair model's fairness gap below its limit (issue #38 item 4).
-- A fairness gap is the largest pairwise difference of group rates; with equal rates its
-- observed value is biased upwards, so rows_to_decide (at the observed gap, 0028) projects a
-- breach that more rows do not bring. For an inconclusive fairness gap whose interval holds 0:
-- * gate_check.rows_to_decide_if_equal: about how many more rows would put the interval's upper
--   end below the limit in half of the samples if the groups' rates were equal (simulated on the
--   pooled rates, modelgate/fairness/equal_rates.py). NULL for every other check, and on rows
--   written before this migration.
-- * gate_check.group_positives_to_decide_if_equal / group_negatives_to_decide_if_equal: the same
--   projection for the label positives and negatives of the group with the fewest of them.

ALTER TABLE gate_check
    ADD COLUMN rows_to_decide_if_equal            bigint,
    ADD COLUMN group_positives_to_decide_if_equal bigint,
    ADD COLUMN group_negatives_to_decide_if_equal bigint;

ALTER TABLE gate_check ADD CONSTRAINT gate_check_rows_to_decide_if_equal_check
    CHECK (rows_to_decide_if_equal >= 0 AND group_positives_to_decide_if_equal >= 0
           AND group_negatives_to_decide_if_equal >= 0);

-- Analyst view: 0029's columns, the new ones appended at the end.
CREATE OR REPLACE VIEW analytics.gate_checks AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.started_at,
       gc.check_id, gc.kind, gc.metric_name, gc.sensitive_feature, gc.threshold_text,
       gc.observed, gc.ci_lower, gc.ci_upper, gc.n, gc.verdict, gc.severity, gc.reason,
       (gc.effect = 'block') AS is_blocking_failure,
       gc.basis, gc.on_inconclusive, gc.effect, gc.min_group_positives, gc.min_group_negatives,
       gc.required_positives, gc.required_negatives,
       gc.rows_to_decide, gc.group_positives_to_decide, gc.group_negatives_to_decide,
       gc.attempt, (gc.attempt = er.attempt) AS is_latest_attempt,
       gc.rows_to_decide_if_equal, gc.group_positives_to_decide_if_equal,
       gc.group_negatives_to_decide_if_equal
FROM gate_check gc
JOIN evaluation_run er ON er.evaluation_run_id = gc.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.gate_checks.rows_to_decide_if_equal IS
    'Inconclusive fairness gaps whose interval holds 0: about how many more rows would show the '
    'gap below its limit in half of the samples if the groups'' rates were equal; NULL otherwise.';
COMMENT ON COLUMN analytics.gate_checks.group_positives_to_decide_if_equal IS
    'The same projection: more label positives in the group with the fewest; NULL otherwise.';
COMMENT ON COLUMN analytics.gate_checks.group_negatives_to_decide_if_equal IS
    'The same projection: more label negatives in the group with the fewest; NULL otherwise.';
