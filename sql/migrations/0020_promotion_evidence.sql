-- Promotion evidence is append-only (issue #22 item 1).
--
-- evaluation_run.promoted_at marks the run whose passed decision promoted its version; it is set
-- in the promotion's own transaction. From then on the run row and its result rows (metrics,
-- fairness, calibration, SHAP, gate checks and decision) can be neither changed nor deleted, nor
-- can rows be added to them: no later run, re-run or hand-written SQL can replace the evidence a
-- promotion rests on. Run keys also name the champion compared with, so a later run of the same
-- version is a run of its own; these triggers are the last line of defence.
-- Runs promoted before this migration are not marked (which run promoted them is not recorded).
-- Depends only on 0001-0015.

ALTER TABLE evaluation_run
    ADD COLUMN promoted_at timestamptz,
    ADD CONSTRAINT evaluation_run_promoted_at_check CHECK (promoted_at IS NULL OR status = 'passed');

COMMENT ON COLUMN evaluation_run.promoted_at IS
    'When this run''s passed decision promoted its version to production; the row and its results are then frozen.';

CREATE FUNCTION evaluation_run_promotion_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.promoted_at IS NOT NULL AND (TG_OP = 'DELETE' OR NEW IS DISTINCT FROM OLD) THEN
        RAISE EXCEPTION 'evaluation run % (%) promoted its version: its row is promotion evidence '
            'and is never changed or deleted; run the evaluation under another run key',
            OLD.evaluation_run_id, OLD.run_key USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER evaluation_run_promotion_kept_trigger
    BEFORE UPDATE OR DELETE ON evaluation_run
    FOR EACH ROW EXECUTE FUNCTION evaluation_run_promotion_kept();

CREATE FUNCTION evaluation_result_promotion_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    run_id bigint;
BEGIN
    FOREACH run_id IN ARRAY CASE TG_OP
        WHEN 'INSERT' THEN ARRAY[NEW.evaluation_run_id]
        WHEN 'DELETE' THEN ARRAY[OLD.evaluation_run_id]
        ELSE ARRAY[OLD.evaluation_run_id, NEW.evaluation_run_id] END
    LOOP
        IF EXISTS (SELECT 1 FROM evaluation_run
                   WHERE evaluation_run_id = run_id AND promoted_at IS NOT NULL) THEN
            RAISE EXCEPTION '% rows of evaluation run % are promotion evidence: never added, changed '
                'or deleted', TG_TABLE_NAME, run_id USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    END LOOP;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER evaluation_metric_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON evaluation_metric FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();
CREATE TRIGGER fairness_group_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON fairness_group FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();
CREATE TRIGGER fairness_metric_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON fairness_metric FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();
CREATE TRIGGER calibration_bin_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON calibration_bin FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();
CREATE TRIGGER shap_importance_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON shap_importance FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();
CREATE TRIGGER shap_budget_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON shap_budget FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();
CREATE TRIGGER gate_check_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON gate_check FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();
CREATE TRIGGER gate_decision_promotion_kept_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON gate_decision FOR EACH ROW EXECUTE FUNCTION evaluation_result_promotion_kept();

-- ---------------------------------------------------------------------------------------
-- Analyst view: new columns at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.evaluation_runs AS
SELECT er.evaluation_run_id, er.run_key, mv.model_name, mv.version,
       ch.version AS champion_version, er.status, er.failure_reason, er.provider,
       er.rows_scored, er.scoring_seconds AS scoring_s, er.scoring_rows_per_s,
       er.dataset_sha256, er.started_at, er.finished_at,
       (EXTRACT(EPOCH FROM er.finished_at - er.started_at) * 1000)::double precision AS duration_ms,
       er.archive_sha256, er.heartbeat_at,
       er.policy_source, er.policy_source_path, er.policy_looser_than_model,
       er.looser_policy_allowed, er.policy_diff, er.policy_text,
       er.promoted_at
FROM evaluation_run er
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN model_version ch ON ch.model_version_id = er.champion_version_id;

COMMENT ON COLUMN analytics.evaluation_runs.promoted_at IS
    'When this run promoted its version (its row and results are then frozen); NULL otherwise.';
