-- Gate verdicts that know their sample size (issue #20).
-- * gate_check.verdict: pass | breach | inconclusive | fail | skipped. 'breach' and
--   'inconclusive' are new; 'fail' now means the check could not be judged (its number is
--   missing or undefined); rows written before this migration used 'fail' for breaches too.
-- * gate_check.effect: what the check did to the decision (block | warn | none), so a
--   blocking row is effect = 'block' whatever its verdict. Generated from the verdict, the
--   severity and on_inconclusive (the gate's own rule), so no writer can disagree with it and
--   rows written before this migration read as they were meant ('fail' acted at its severity).
-- * basis, on_inconclusive and the group counts behind a fairness verdict; NULL on older rows.

ALTER TABLE gate_check
    ADD COLUMN basis               text,
    ADD COLUMN on_inconclusive     text,
    ADD COLUMN min_group_positives bigint,
    ADD COLUMN min_group_negatives bigint,
    ADD COLUMN required_positives  bigint,
    ADD COLUMN required_negatives  bigint,
    ADD COLUMN effect              text NOT NULL GENERATED ALWAYS AS (
        CASE WHEN verdict IN ('pass', 'skipped') THEN 'none'
             WHEN verdict = 'inconclusive' AND on_inconclusive = 'warn' THEN 'warn'
             ELSE severity END) STORED;

ALTER TABLE gate_check DROP CONSTRAINT gate_check_verdict_check;
ALTER TABLE gate_check ADD CONSTRAINT gate_check_verdict_check
    CHECK (verdict IN ('pass', 'breach', 'inconclusive', 'fail', 'skipped'));
ALTER TABLE gate_check ADD CONSTRAINT gate_check_basis_check
    CHECK (basis IS NULL OR basis IN ('point_estimate', 'interval'));
ALTER TABLE gate_check ADD CONSTRAINT gate_check_on_inconclusive_check
    CHECK (on_inconclusive IS NULL OR on_inconclusive IN ('block', 'warn'));
ALTER TABLE gate_check ADD CONSTRAINT gate_check_group_counts_check
    CHECK (min_group_positives >= 0 AND min_group_negatives >= 0
           AND required_positives >= 0 AND required_negatives >= 0);

-- Analyst views: new columns at the end; is_blocking_failure and the reason arrays now read
-- the effect, so an inconclusive check that blocked is listed and one that only warned is not.
CREATE OR REPLACE VIEW analytics.gate_checks AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.started_at,
       gc.check_id, gc.kind, gc.metric_name, gc.sensitive_feature, gc.threshold_text,
       gc.observed, gc.ci_lower, gc.ci_upper, gc.n, gc.verdict, gc.severity, gc.reason,
       (gc.effect = 'block') AS is_blocking_failure,
       gc.basis, gc.on_inconclusive, gc.effect, gc.min_group_positives, gc.min_group_negatives,
       gc.required_positives, gc.required_negatives
FROM gate_check gc
JOIN evaluation_run er ON er.evaluation_run_id = gc.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.gate_checks.verdict IS
    'pass | breach (past the limit: the whole interval on the interval basis) | inconclusive '
    '(the interval straddles the limit, or a group has fewer positives/negatives than the '
    'policy''s minimum) | fail (not computable: missing or undefined) | skipped. Before '
    'migration 0013 breaches were written fail.';
COMMENT ON COLUMN analytics.gate_checks.severity IS
    'The threshold''s severity: block | warn. What the check did is effect.';
COMMENT ON COLUMN analytics.gate_checks.is_blocking_failure IS 'effect = block.';
COMMENT ON COLUMN analytics.gate_checks.basis IS
    'interval (the whole bootstrap interval is judged) | point_estimate (the point alone); '
    'NULL before migration 0013.';
COMMENT ON COLUMN analytics.gate_checks.on_inconclusive IS
    'What an inconclusive verdict of a block-severity check does: block | warn.';
COMMENT ON COLUMN analytics.gate_checks.effect IS
    'What the check did to the decision: block | warn | none.';
COMMENT ON COLUMN analytics.gate_checks.min_group_positives IS
    'Fairness checks of classifiers: fewest label positives of any group in the gap.';
COMMENT ON COLUMN analytics.gate_checks.min_group_negatives IS
    'Fairness checks of classifiers: fewest label negatives of any group in the gap.';
COMMENT ON COLUMN analytics.gate_checks.required_positives IS
    'The policy''s minimum positives per group the verdict applied (NULL: none applied).';
COMMENT ON COLUMN analytics.gate_checks.required_negatives IS
    'The policy''s minimum negatives per group the verdict applied (NULL: none applied).';

CREATE OR REPLACE VIEW analytics.latest_gate_decision AS
SELECT DISTINCT ON (mv.model_name, mv.version)
       mv.model_name, mv.version, er.evaluation_run_id, er.run_key, gd.passed, gd.summary,
       gd.had_champion, gd.policy_sha256, gd.decided_at,
       ARRAY(SELECT gc.reason FROM gate_check gc
             WHERE gc.evaluation_run_id = gd.evaluation_run_id AND gc.effect = 'block'
             ORDER BY gc.check_id) AS blocking_failure_reasons,
       ARRAY(SELECT gc.reason FROM gate_check gc
             WHERE gc.evaluation_run_id = gd.evaluation_run_id AND gc.effect = 'warn'
             ORDER BY gc.check_id) AS warning_reasons
FROM gate_decision gd
JOIN evaluation_run er ON er.evaluation_run_id = gd.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id
ORDER BY mv.model_name, mv.version, gd.decided_at DESC, gd.evaluation_run_id DESC;
