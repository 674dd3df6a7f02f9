-- Every decision stays on record (issue #37).
--
-- 1. Attempts are append-only. evaluation_attempt holds one row per attempt of an evaluation run
--    (evaluation_run.attempt counts them, migration 0022): its outcome, its report, and the
--    policy it was judged by (text, sha256 over every source, where it came from, how it differs
--    from the model's own policy and from the policy of the version's previous decided attempt,
--    and whether promotion under a looser policy was allowed). A trigger on evaluation_run keeps
--    the current attempt's row in step with the run row; once an attempt has ended its row never
--    changes. gate_decision and gate_check are keyed by attempt: a re-run adds the new attempt's
--    rows beside the old ones, and a decision's rows are never changed or deleted. The other
--    result tables (metrics, fairness, calibration, SHAP) still hold the latest attempt only;
--    each attempt's report keeps its own.
-- 2. A decision, once stored, never changes because a later step fails: such a failure (index
--    page, StatsD gauge, a step run after the decision such as a refused promotion) is recorded
--    in evaluation_step_failure beside the decision, and the retryable ones are retried by the
--    next stored run of the model or by `modelgate gc`.
-- Attempts before this migration: only each run's latest is known; it is copied as it stands.
-- Depends only on 0001-0028 (analytics.gate_checks as 0028 left it).

CREATE TABLE evaluation_attempt (
    evaluation_run_id           bigint      NOT NULL,
    attempt                     integer     NOT NULL,
    status                      text        NOT NULL DEFAULT 'running',
    failure_reason              text,
    started_at                  timestamptz NOT NULL DEFAULT now(),
    finished_at                 timestamptz,
    report_key                  text,
    report_uri                  text,
    policy_text                 text,
    policy_sha256               text,
    policy_source               text,
    policy_source_path          text,
    policy_diff                 jsonb,
    policy_looser_than_model    boolean,
    previous_evaluation_run_id  bigint,
    previous_attempt            integer,
    policy_changes              jsonb,
    policy_looser_than_previous boolean,
    looser_policy_allowed       boolean,
    CONSTRAINT evaluation_attempt_pkey PRIMARY KEY (evaluation_run_id, attempt),
    CONSTRAINT evaluation_attempt_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE,
    CONSTRAINT evaluation_attempt_previous_evaluation_run_id_previous_attempt_fkey
        FOREIGN KEY (previous_evaluation_run_id, previous_attempt)
        REFERENCES evaluation_attempt (evaluation_run_id, attempt),
    CONSTRAINT evaluation_attempt_attempt_check CHECK (attempt >= 1),
    CONSTRAINT evaluation_attempt_status_check
        CHECK (status IN ('running', 'passed', 'blocked', 'failed', 'abandoned')),
    CONSTRAINT evaluation_attempt_policy_source_check
        CHECK (policy_source IN ('task_default', 'model_file', 'ad_hoc')),
    CONSTRAINT evaluation_attempt_policy_diff_check CHECK (jsonb_typeof(policy_diff) = 'array'),
    CONSTRAINT evaluation_attempt_policy_changes_check CHECK (jsonb_typeof(policy_changes) = 'array'),
    CONSTRAINT evaluation_attempt_previous_check
        CHECK ((previous_evaluation_run_id IS NULL) = (previous_attempt IS NULL)),
    CONSTRAINT evaluation_attempt_policy_sha256_check CHECK (policy_sha256 ~ '^[0-9a-f]{64}$')
);
CREATE INDEX evaluation_attempt_previous_evaluation_run_id_previous_attempt_idx
    ON evaluation_attempt (previous_evaluation_run_id, previous_attempt);

COMMENT ON TABLE evaluation_attempt IS
    'One row per attempt of an evaluation run; a row whose attempt ended is never changed.';
COMMENT ON COLUMN evaluation_attempt.policy_sha256 IS
    'sha256 over every policy source of the attempt: the task default, the model''s policy file and the ad-hoc file.';
COMMENT ON COLUMN evaluation_attempt.policy_changes IS
    'Differences from the policy of the version''s previous decided attempt (previous_evaluation_run_id, previous_attempt): [{place, key, reference, effective, effect, blocking}].';
COMMENT ON COLUMN evaluation_attempt.policy_looser_than_previous IS
    'True when a check that blocked under the previous decided attempt''s policy is looser or unordered in this one.';

-- Runs as they stand: their latest attempt (earlier ones were reset away before this migration).
INSERT INTO evaluation_attempt (evaluation_run_id, attempt, status, failure_reason, started_at,
                                finished_at, report_key, report_uri, policy_text, policy_sha256,
                                policy_source, policy_source_path, policy_diff,
                                policy_looser_than_model, looser_policy_allowed)
SELECT er.evaluation_run_id, er.attempt, er.status, er.failure_reason, er.started_at,
       er.finished_at, er.report_key, er.report_uri, er.policy_text,
       CASE WHEN gd.policy_sha256 ~ '^[0-9a-f]{64}$' THEN gd.policy_sha256 END,
       er.policy_source, er.policy_source_path, er.policy_diff, er.policy_looser_than_model,
       er.looser_policy_allowed
FROM evaluation_run er LEFT JOIN gate_decision gd ON gd.evaluation_run_id = er.evaluation_run_id;

-- The current attempt's row follows the run row: a new row when an attempt starts (the one
-- before, if still running, is marked abandoned), its outcome and report when the run records them.
CREATE FUNCTION evaluation_attempt_follows_run() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.attempt <> OLD.attempt THEN
        UPDATE evaluation_attempt SET status = 'abandoned', finished_at = now(),
               failure_reason = 'abandoned: attempt ' || NEW.attempt || ' started before it ended'
        WHERE evaluation_run_id = OLD.evaluation_run_id AND attempt = OLD.attempt
          AND status = 'running';
    END IF;
    IF TG_OP = 'INSERT' OR NEW.attempt <> OLD.attempt THEN
        INSERT INTO evaluation_attempt (evaluation_run_id, attempt, status, failure_reason,
                                        started_at, finished_at, report_key, report_uri)
        VALUES (NEW.evaluation_run_id, NEW.attempt, NEW.status, NEW.failure_reason,
                NEW.started_at, NEW.finished_at, NEW.report_key, NEW.report_uri);
    ELSIF (NEW.status, NEW.failure_reason, NEW.finished_at, NEW.report_key, NEW.report_uri)
          IS DISTINCT FROM
          (OLD.status, OLD.failure_reason, OLD.finished_at, OLD.report_key, OLD.report_uri) THEN
        UPDATE evaluation_attempt SET status = NEW.status, failure_reason = NEW.failure_reason,
               finished_at = NEW.finished_at, report_key = NEW.report_key,
               report_uri = NEW.report_uri
        WHERE evaluation_run_id = NEW.evaluation_run_id AND attempt = NEW.attempt
          AND status = 'running';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER evaluation_attempt_follows_run_trigger
    AFTER INSERT OR UPDATE ON evaluation_run
    FOR EACH ROW EXECUTE FUNCTION evaluation_attempt_follows_run();

CREATE FUNCTION evaluation_attempt_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status <> 'running' THEN
        RAISE EXCEPTION 'attempt % of evaluation run % ended (%): its record is never changed or '
            'deleted; re-run the evaluation to add an attempt', OLD.attempt, OLD.evaluation_run_id,
            OLD.status USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER evaluation_attempt_kept_trigger
    BEFORE UPDATE OR DELETE ON evaluation_attempt
    FOR EACH ROW EXECUTE FUNCTION evaluation_attempt_kept();

-- ---------------------------------------------------------------------------------------
-- Gate decisions and checks keyed by attempt. Existing rows belong to their run's current
-- attempt (older attempts' rows were deleted by the reset); the promotion triggers are off
-- while the key is filled in, so promoted runs keep their rows too.
ALTER TABLE gate_decision ADD COLUMN attempt integer NOT NULL DEFAULT 1;
ALTER TABLE gate_check ADD COLUMN attempt integer NOT NULL DEFAULT 1;
ALTER TABLE gate_decision DISABLE TRIGGER gate_decision_promotion_kept_trigger;
ALTER TABLE gate_check DISABLE TRIGGER gate_check_promotion_kept_trigger;
UPDATE gate_decision gd SET attempt = er.attempt FROM evaluation_run er
WHERE er.evaluation_run_id = gd.evaluation_run_id AND er.attempt <> 1;
UPDATE gate_check gc SET attempt = er.attempt FROM evaluation_run er
WHERE er.evaluation_run_id = gc.evaluation_run_id AND er.attempt <> 1;
ALTER TABLE gate_decision ENABLE TRIGGER gate_decision_promotion_kept_trigger;
ALTER TABLE gate_check ENABLE TRIGGER gate_check_promotion_kept_trigger;
ALTER TABLE gate_decision ALTER COLUMN attempt DROP DEFAULT;
ALTER TABLE gate_check ALTER COLUMN attempt DROP DEFAULT;

ALTER TABLE gate_decision
    DROP CONSTRAINT gate_decision_pkey,
    ADD CONSTRAINT gate_decision_pkey PRIMARY KEY (evaluation_run_id, attempt),
    ADD CONSTRAINT gate_decision_evaluation_run_id_attempt_fkey
        FOREIGN KEY (evaluation_run_id, attempt)
        REFERENCES evaluation_attempt (evaluation_run_id, attempt) ON DELETE CASCADE;
ALTER TABLE gate_check
    DROP CONSTRAINT gate_check_pkey,
    ADD CONSTRAINT gate_check_pkey PRIMARY KEY (evaluation_run_id, attempt, check_id),
    ADD CONSTRAINT gate_check_evaluation_run_id_attempt_fkey
        FOREIGN KEY (evaluation_run_id, attempt)
        REFERENCES evaluation_attempt (evaluation_run_id, attempt) ON DELETE CASCADE;

COMMENT ON COLUMN gate_decision.attempt IS 'The attempt of the run this decision belongs to.';
COMMENT ON COLUMN gate_check.attempt IS 'The attempt of the run this check belongs to.';

-- A decision's rows are written once, in the transaction that stores the decision. A row
-- inserted without its attempt belongs to the run's current attempt.
CREATE FUNCTION gate_result_written_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.attempt IS NULL THEN  -- a row written without its attempt: the run's current one
            SELECT attempt INTO NEW.attempt FROM evaluation_run
            WHERE evaluation_run_id = NEW.evaluation_run_id;
        END IF;
        IF EXISTS (SELECT 1 FROM gate_decision
                   WHERE evaluation_run_id = NEW.evaluation_run_id AND attempt = NEW.attempt) THEN
            RAISE EXCEPTION 'attempt % of evaluation run % already has its gate decision; '
                're-run the evaluation to add an attempt', NEW.attempt, NEW.evaluation_run_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% rows of attempt % of evaluation run % record its decision: never changed '
        'or deleted', TG_TABLE_NAME, OLD.attempt, OLD.evaluation_run_id
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

-- named after the promotion triggers, which fire first (alphabetical order) and say why
CREATE TRIGGER gate_decision_written_once_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON gate_decision FOR EACH ROW EXECUTE FUNCTION gate_result_written_once();
CREATE TRIGGER gate_check_written_once_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON gate_check FOR EACH ROW EXECUTE FUNCTION gate_result_written_once();

-- ---------------------------------------------------------------------------------------
-- Failures of steps after a decision was stored, recorded beside it.
CREATE TABLE evaluation_step_failure (
    evaluation_step_failure_id  bigint      GENERATED ALWAYS AS IDENTITY,
    evaluation_run_id           bigint      NOT NULL,
    attempt                     integer     NOT NULL,
    step                        text        NOT NULL,
    reason                      text        NOT NULL,
    failed_at                   timestamptz NOT NULL DEFAULT now(),
    retried_at                  timestamptz,
    retried_by                  text,
    CONSTRAINT evaluation_step_failure_pkey PRIMARY KEY (evaluation_step_failure_id),
    CONSTRAINT evaluation_step_failure_evaluation_run_id_attempt_fkey
        FOREIGN KEY (evaluation_run_id, attempt)
        REFERENCES evaluation_attempt (evaluation_run_id, attempt) ON DELETE CASCADE,
    CONSTRAINT evaluation_step_failure_step_check
        CHECK (step IN ('index_page', 'statsd_gauge', 'after_decision')),
    CONSTRAINT evaluation_step_failure_retried_check
        CHECK ((retried_at IS NULL) = (retried_by IS NULL)
               AND (retried_at IS NULL OR step <> 'after_decision'))
);
CREATE INDEX evaluation_step_failure_evaluation_run_id_attempt_idx
    ON evaluation_step_failure (evaluation_run_id, attempt);
CREATE INDEX evaluation_step_failure_pending_idx
    ON evaluation_step_failure (step) WHERE retried_at IS NULL;

COMMENT ON TABLE evaluation_step_failure IS
    'A step that failed after its attempt''s decision was stored; the decision stands. index_page and statsd_gauge are retried (retried_at, retried_by).';

-- ---------------------------------------------------------------------------------------
-- Analyst views: new columns at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.evaluation_runs AS
SELECT er.evaluation_run_id, er.run_key, mv.model_name, mv.version,
       ch.version AS champion_version, er.status, er.failure_reason, er.provider,
       er.rows_scored, er.scoring_seconds AS scoring_s, er.scoring_rows_per_s,
       er.dataset_sha256, er.started_at, er.finished_at,
       (EXTRACT(EPOCH FROM er.finished_at - er.started_at) * 1000)::double precision AS duration_ms,
       er.archive_sha256, er.heartbeat_at,
       er.policy_source, er.policy_source_path, er.policy_looser_than_model,
       er.looser_policy_allowed, er.policy_diff, er.policy_text,
       er.promoted_at,
       er.attempt,
       (SELECT count(*) FROM evaluation_step_failure f
        WHERE f.evaluation_run_id = er.evaluation_run_id AND f.retried_at IS NULL
          AND f.step <> 'after_decision') AS pending_step_failures
FROM evaluation_run er
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN model_version ch ON ch.model_version_id = er.champion_version_id;

COMMENT ON COLUMN analytics.evaluation_runs.attempt IS
    'The run''s latest attempt, which the row''s other columns describe; analytics.evaluation_attempts has every attempt.';
COMMENT ON COLUMN analytics.evaluation_runs.pending_step_failures IS
    'Index page or StatsD writes after a stored decision that failed and were not retried yet.';

CREATE OR REPLACE VIEW analytics.gate_checks AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.started_at,
       gc.check_id, gc.kind, gc.metric_name, gc.sensitive_feature, gc.threshold_text,
       gc.observed, gc.ci_lower, gc.ci_upper, gc.n, gc.verdict, gc.severity, gc.reason,
       (gc.effect = 'block') AS is_blocking_failure,
       gc.basis, gc.on_inconclusive, gc.effect, gc.min_group_positives, gc.min_group_negatives,
       gc.required_positives, gc.required_negatives,
       gc.rows_to_decide, gc.group_positives_to_decide, gc.group_negatives_to_decide,
       gc.attempt, (gc.attempt = er.attempt) AS is_latest_attempt
FROM gate_check gc
JOIN evaluation_run er ON er.evaluation_run_id = gc.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON COLUMN analytics.gate_checks.attempt IS
    'The attempt of the run whose decision this check belongs to; every attempt''s checks are kept.';
COMMENT ON COLUMN analytics.gate_checks.is_latest_attempt IS
    'True on the checks of the run''s latest attempt.';

CREATE OR REPLACE VIEW analytics.latest_gate_decision AS
SELECT DISTINCT ON (mv.model_name, mv.version)
       mv.model_name, mv.version, er.evaluation_run_id, er.run_key, gd.passed, gd.summary,
       gd.had_champion, gd.policy_sha256, gd.decided_at,
       ARRAY(SELECT gc.reason FROM gate_check gc
             WHERE gc.evaluation_run_id = gd.evaluation_run_id AND gc.attempt = gd.attempt
               AND gc.effect = 'block'
             ORDER BY gc.check_id) AS blocking_failure_reasons,
       ARRAY(SELECT gc.reason FROM gate_check gc
             WHERE gc.evaluation_run_id = gd.evaluation_run_id AND gc.attempt = gd.attempt
               AND gc.effect = 'warn'
             ORDER BY gc.check_id) AS warning_reasons,
       gd.attempt
FROM gate_decision gd
JOIN evaluation_run er ON er.evaluation_run_id = gd.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id
ORDER BY mv.model_name, mv.version, gd.decided_at DESC, gd.evaluation_run_id DESC, gd.attempt DESC;

COMMENT ON COLUMN analytics.latest_gate_decision.attempt IS
    'The attempt of evaluation_run_id that made the decision.';

CREATE VIEW analytics.evaluation_attempts AS
SELECT mv.model_name, mv.version, ea.evaluation_run_id, er.run_key, ea.attempt,
       (ea.attempt = er.attempt) AS is_latest_attempt, ea.status, ea.failure_reason,
       gd.passed, gd.summary, gd.decided_at, ea.started_at, ea.finished_at, ea.report_uri, ea.policy_source, ea.policy_source_path, ea.policy_sha256,
       ea.policy_looser_than_model, ea.policy_looser_than_previous, ea.looser_policy_allowed,
       ea.previous_evaluation_run_id, ea.previous_attempt, ea.policy_changes, ea.policy_diff,
       ea.policy_text,
       (SELECT count(*) FROM evaluation_step_failure f
        WHERE f.evaluation_run_id = ea.evaluation_run_id AND f.attempt = ea.attempt
          AND f.retried_at IS NULL AND f.step <> 'after_decision') AS pending_step_failures
FROM evaluation_attempt ea
JOIN evaluation_run er ON er.evaluation_run_id = ea.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN gate_decision gd
       ON gd.evaluation_run_id = ea.evaluation_run_id AND gd.attempt = ea.attempt;

COMMENT ON VIEW analytics.evaluation_attempts IS
    'One row per attempt of an evaluation run: its outcome, decision, report and policy; never changed once the attempt ended.';

CREATE VIEW analytics.evaluation_step_failures AS
SELECT mv.model_name, mv.version, f.evaluation_run_id, er.run_key, f.attempt, f.step, f.reason,
       f.failed_at, f.retried_at, f.retried_by
FROM evaluation_step_failure f
JOIN evaluation_run er ON er.evaluation_run_id = f.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;

COMMENT ON VIEW analytics.evaluation_step_failures IS
    'One row per step that failed after its attempt''s decision was stored (the decision stands).';

ALTER VIEW analytics.evaluation_attempts OWNER TO modelgate_writer;
ALTER VIEW analytics.evaluation_step_failures OWNER TO modelgate_writer;
GRANT SELECT ON analytics.evaluation_attempts, analytics.evaluation_step_failures
TO modelgate_analyst;
