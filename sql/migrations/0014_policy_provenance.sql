-- Policy provenance (issue #20): every run stores the policy it was judged by, where it came
-- from, how it differs from the model's own policy, and whether promotion under a looser one
-- was explicitly allowed.
-- All NULL on runs recorded before this migration, and on a run that failed before its policy
-- was checked (a malformed policy file): those did not say.

ALTER TABLE evaluation_run
    ADD COLUMN policy_text              text,
    ADD COLUMN policy_source            text,
    ADD COLUMN policy_source_path       text,
    ADD COLUMN policy_diff              jsonb,
    ADD COLUMN policy_looser_than_model boolean,
    ADD COLUMN looser_policy_allowed    boolean,
    ADD CONSTRAINT evaluation_run_policy_source_check
        CHECK (policy_source IN ('task_default', 'model_file', 'ad_hoc')),
    -- all or nothing: a run either recorded its policy in full or not at all
    ADD CONSTRAINT evaluation_run_policy_recorded_check
        CHECK (num_nulls(policy_text, policy_source, policy_source_path, policy_diff,
                         policy_looser_than_model, looser_policy_allowed) IN (0, 6)),
    ADD CONSTRAINT evaluation_run_policy_diff_check
        CHECK (jsonb_typeof(policy_diff) = 'array'),
    -- without an ad-hoc file the run's policy is the model's own
    ADD CONSTRAINT evaluation_run_policy_looser_than_model_check
        CHECK (policy_source = 'ad_hoc' OR (policy_looser_than_model IS NOT TRUE
                                            AND policy_diff = '[]'::jsonb));

COMMENT ON COLUMN evaluation_run.policy_text IS
    'The policy the run was judged by (default, model file and ad-hoc file merged), as one YAML document.';
COMMENT ON COLUMN evaluation_run.policy_source IS
    'task_default (no policy file for the model), model_file (policies/<model>.yaml) or ad_hoc (--policy / the DAG''s policy param).';
COMMENT ON COLUMN evaluation_run.policy_source_path IS
    'The file of policy_source: the task''s default policy, the model''s policy file or the ad-hoc file.';
COMMENT ON COLUMN evaluation_run.policy_diff IS
    'Differences from the model''s own policy: [{place, key, reference, effective, effect, blocking}] (empty without an ad-hoc file).';
COMMENT ON COLUMN evaluation_run.policy_looser_than_model IS
    'True when the run''s policy is looser than the model''s own on a check that blocks under the model''s own.';
COMMENT ON COLUMN evaluation_run.looser_policy_allowed IS
    'True when promotion under a looser policy was explicitly allowed (--allow-looser-policy / DAG param allow_looser_policy).';

-- Evidence of a run's policy is written once per attempt: while the run is running, into empty
-- columns. It changes only when a re-run of the same run key resets the row (status back to
-- running, every policy column NULL), never under a finished run's results.
CREATE FUNCTION evaluation_run_policy_written_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.policy_source IS NOT NULL
       AND (NEW.policy_text, NEW.policy_source, NEW.policy_source_path, NEW.policy_diff,
            NEW.policy_looser_than_model, NEW.looser_policy_allowed)
           IS DISTINCT FROM
           (OLD.policy_text, OLD.policy_source, OLD.policy_source_path, OLD.policy_diff,
            OLD.policy_looser_than_model, OLD.looser_policy_allowed)
       AND NOT (NEW.status = 'running' AND NEW.policy_source IS NULL)
    THEN
        RAISE EXCEPTION 'evaluation run % keeps the policy it recorded; re-run it to record another',
            OLD.evaluation_run_id USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER evaluation_run_policy_written_once_trigger
    BEFORE UPDATE ON evaluation_run
    FOR EACH ROW EXECUTE FUNCTION evaluation_run_policy_written_once();

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
       er.looser_policy_allowed, er.policy_diff, er.policy_text
FROM evaluation_run er
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN model_version ch ON ch.model_version_id = er.champion_version_id;

COMMENT ON COLUMN analytics.evaluation_runs.policy_source IS
    'Where the run''s policy came from: task_default, model_file or ad_hoc; NULL when the run did not record it.';
COMMENT ON COLUMN analytics.evaluation_runs.policy_looser_than_model IS
    'True when the run was judged by an ad-hoc policy looser than the model''s own on a blocking check (see policy_diff).';
COMMENT ON COLUMN analytics.evaluation_runs.looser_policy_allowed IS
    'True when promotion under a looser policy was explicitly allowed for this run.';
COMMENT ON COLUMN analytics.evaluation_runs.policy_diff IS
    'Differences from the model''s own policy: [{place, key, reference, effective, effect, blocking}].';
COMMENT ON COLUMN analytics.evaluation_runs.policy_text IS
    'The policy the run was judged by, as one YAML document.';
