-- Rolling production back to an earlier version (issue #37 point 4).
--
-- `modelgate model rollback NAME --to VERSION --reason TEXT` makes an archived version (a former
-- production version) production again and archives the current one, in one transaction that
-- locks the model's versions and checks production is still the version the rollback was planned
-- from, like a promotion. Each rollback is one row here: who, when, why, from which version to
-- which, and the passed evaluation run (with its passed gate decision) the target rests on. Rows
-- are never changed or deleted, and a row is accepted only when its run is a passed run of the
-- target version whose gate decision passed. Depends only on 0001, 0002, 0004 and 0005.

CREATE TABLE model_rollback (
    model_rollback_id  bigint      GENERATED ALWAYS AS IDENTITY,
    model_name         text        NOT NULL,
    from_version       text        NOT NULL,
    to_version         text        NOT NULL,
    evaluation_run_id  bigint      NOT NULL,
    rolled_back_by     text        NOT NULL,
    reason             text        NOT NULL,
    rolled_back_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT model_rollback_pkey PRIMARY KEY (model_rollback_id),
    CONSTRAINT model_rollback_model_name_from_version_fkey FOREIGN KEY (model_name, from_version)
        REFERENCES model_version (model_name, version),
    CONSTRAINT model_rollback_model_name_to_version_fkey FOREIGN KEY (model_name, to_version)
        REFERENCES model_version (model_name, version),
    CONSTRAINT model_rollback_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id),
    CONSTRAINT model_rollback_versions_check CHECK (from_version <> to_version),
    CONSTRAINT model_rollback_rolled_back_by_check CHECK (btrim(rolled_back_by) <> ''),
    CONSTRAINT model_rollback_reason_check CHECK (btrim(reason) <> '')
);
CREATE INDEX model_rollback_model_name_from_version_idx ON model_rollback (model_name, from_version);
CREATE INDEX model_rollback_model_name_to_version_idx ON model_rollback (model_name, to_version);
CREATE INDEX model_rollback_evaluation_run_id_idx ON model_rollback (evaluation_run_id);

COMMENT ON TABLE model_rollback IS
    'One row per rollback of production to an earlier version (modelgate model rollback); append-only.';
COMMENT ON COLUMN model_rollback.evaluation_run_id IS
    'The passed evaluation run of to_version (passed gate decision) the rollback rests on.';

CREATE FUNCTION model_rollback_checked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'model_rollback is append-only: rollback % is never changed or deleted',
            OLD.model_rollback_id USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM evaluation_run er
        JOIN model_version mv ON mv.model_version_id = er.model_version_id
        JOIN gate_decision gd ON gd.evaluation_run_id = er.evaluation_run_id
        WHERE er.evaluation_run_id = NEW.evaluation_run_id AND er.status = 'passed' AND gd.passed
          AND mv.model_name = NEW.model_name AND mv.version = NEW.to_version)
    THEN
        RAISE EXCEPTION 'evaluation run % is not a passed run (passed gate decision) of % v%: '
            'a rollback returns only to a version that passed its gate',
            NEW.evaluation_run_id, NEW.model_name, NEW.to_version
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER model_rollback_checked_trigger
    BEFORE INSERT OR UPDATE OR DELETE ON model_rollback
    FOR EACH ROW EXECUTE FUNCTION model_rollback_checked();

-- ---------------------------------------------------------------------------------------
CREATE VIEW analytics.model_rollbacks AS
SELECT r.model_rollback_id, r.model_name, r.from_version, r.to_version, r.evaluation_run_id,
       r.rolled_back_by, r.reason, r.rolled_back_at
FROM model_rollback r;

COMMENT ON VIEW analytics.model_rollbacks IS
    'One row per rollback of a model''s production version to an earlier one (modelgate model rollback): who, when, why, from and to.';
COMMENT ON COLUMN analytics.model_rollbacks.from_version IS
    'The version that was in production and was archived by the rollback.';
COMMENT ON COLUMN analytics.model_rollbacks.to_version IS
    'The earlier (archived) version made production again.';
COMMENT ON COLUMN analytics.model_rollbacks.evaluation_run_id IS
    'The passed evaluation run of to_version the rollback rests on (analytics.evaluation_runs).';
COMMENT ON COLUMN analytics.model_rollbacks.rolled_back_by IS
    'Who rolled back (modelgate model rollback --by, default the OS user).';
COMMENT ON COLUMN analytics.model_rollbacks.reason IS 'Why, in the words of whoever rolled back.';
COMMENT ON COLUMN analytics.model_rollbacks.rolled_back_at IS 'When (the database''s now() of the rollback''s transaction).';

ALTER VIEW analytics.model_rollbacks OWNER TO modelgate_writer;
REVOKE ALL ON analytics.model_rollbacks FROM PUBLIC;
GRANT SELECT ON analytics.model_rollbacks TO modelgate_analyst;
