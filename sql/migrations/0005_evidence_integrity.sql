-- Evidence that cannot be overwritten, go stale or get stuck (issue #10).
--
-- * model_version is append-only: a registered (name, version) keeps its model sha256, archive
--   sha256, archive key and manifest forever, and is never deleted (only stage and is_drifting
--   change). Enforced here so no code path (or hand-written SQL) can swap the evidence.
-- * evaluation_run pins the archive sha256 it evaluates, carries a heartbeat, and may end
--   'abandoned' (left running by a process that died; set by the next run of the same model).
-- * evaluation_refusal records evaluations refused before a run row could exist (unknown model
--   version), so a failed request is never invisible.
-- * fairness_group is keyed by the sha256 of the group label, so labels of any length are stored
--   in full (a btree entry is limited to about 2.7 kB).
-- Depends only on 0001-0004.

CREATE FUNCTION model_version_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'model_version is append-only: % v% cannot be deleted',
            OLD.model_name, OLD.version USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF (NEW.model_name, NEW.version, NEW.sha256, NEW.archive_sha256, NEW.archive_key, NEW.manifest)
       IS DISTINCT FROM
       (OLD.model_name, OLD.version, OLD.sha256, OLD.archive_sha256, OLD.archive_key, OLD.manifest)
    THEN
        RAISE EXCEPTION 'model_version is append-only: % v% keeps its archive and manifest; '
            'register a new version instead', OLD.model_name, OLD.version
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER model_version_append_only_trigger
    BEFORE UPDATE OR DELETE ON model_version
    FOR EACH ROW EXECUTE FUNCTION model_version_append_only();

ALTER TABLE evaluation_run
    ADD COLUMN archive_sha256 text,
    ADD COLUMN heartbeat_at timestamptz,
    ADD CONSTRAINT evaluation_run_archive_sha256_check
        CHECK (archive_sha256 IS NULL OR archive_sha256 ~ '^[0-9a-f]{64}$');
ALTER TABLE evaluation_run DROP CONSTRAINT evaluation_run_status_check;
ALTER TABLE evaluation_run ADD CONSTRAINT evaluation_run_status_check
    CHECK (status IN ('running', 'passed', 'blocked', 'failed', 'abandoned'));
ALTER TABLE evaluation_run DROP CONSTRAINT evaluation_run_failure_reason_check;
ALTER TABLE evaluation_run ADD CONSTRAINT evaluation_run_failure_reason_check
    CHECK (status NOT IN ('failed', 'abandoned') OR failure_reason IS NOT NULL);
-- Finding stuck work: running rows by heartbeat.
CREATE INDEX evaluation_run_status_heartbeat_at_idx ON evaluation_run (status, heartbeat_at);

CREATE TABLE evaluation_refusal (
    evaluation_refusal_id  bigint GENERATED ALWAYS AS IDENTITY,
    run_key                text        NOT NULL,
    model_name             text        NOT NULL,
    version                text        NOT NULL,
    dataset_uri            text        NOT NULL,
    reason                 text        NOT NULL,
    refused_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT evaluation_refusal_pkey PRIMARY KEY (evaluation_refusal_id)
);
CREATE INDEX evaluation_refusal_model_name_version_idx ON evaluation_refusal (model_name, version);

-- convert_to is only STABLE (it depends on the database encoding, fixed at CREATE DATABASE);
-- with a fixed target encoding the result never changes, so it may key a generated column.
CREATE FUNCTION text_sha256(value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT encode(sha256(convert_to(value, 'UTF8')), 'hex') $$;

ALTER TABLE fairness_group
    ADD COLUMN group_label_sha256 text GENERATED ALWAYS AS (text_sha256(group_label)) STORED;
ALTER TABLE fairness_group DROP CONSTRAINT fairness_group_pkey;
ALTER TABLE fairness_group ADD CONSTRAINT fairness_group_pkey
    PRIMARY KEY (evaluation_run_id, sensitive_feature, group_label_sha256);

-- ---------------------------------------------------------------------------------------
-- Analyst views: new columns go at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.evaluation_runs AS
SELECT er.evaluation_run_id, er.run_key, mv.model_name, mv.version,
       ch.version AS champion_version, er.status, er.failure_reason, er.provider,
       er.rows_scored, er.scoring_seconds AS scoring_s, er.scoring_rows_per_s,
       er.dataset_sha256, er.started_at, er.finished_at,
       (EXTRACT(EPOCH FROM er.finished_at - er.started_at) * 1000)::double precision AS duration_ms,
       er.archive_sha256, er.heartbeat_at
FROM evaluation_run er
JOIN model_version mv ON mv.model_version_id = er.model_version_id
LEFT JOIN model_version ch ON ch.model_version_id = er.champion_version_id;

COMMENT ON COLUMN analytics.evaluation_runs.status IS
    'running | passed | blocked (the promotion gate said no) | failed (see failure_reason) | '
    'abandoned (left running by a process that died: no heartbeat; see failure_reason).';
COMMENT ON COLUMN analytics.evaluation_runs.failure_reason IS
    'Why the run failed or was abandoned; set only when status is failed or abandoned.';
COMMENT ON COLUMN analytics.evaluation_runs.archive_sha256 IS
    'sha256 of the model archive (model.onnx + manifest) this run evaluated; pinned when it started.';
COMMENT ON COLUMN analytics.evaluation_runs.heartbeat_at IS
    'Last sign of life of the process running it; a running row with an old heartbeat is stuck.';

CREATE OR REPLACE VIEW analytics.evaluation_refusals AS
SELECT r.evaluation_refusal_id, r.run_key, r.model_name, r.version, r.reason, r.refused_at
FROM evaluation_refusal r;

COMMENT ON VIEW analytics.evaluation_refusals IS
    'Evaluations refused before a run could start (e.g. an unknown model version), with the reason.';
COMMENT ON COLUMN analytics.evaluation_refusals.reason IS 'One-line reason the request was refused.';

ALTER VIEW analytics.evaluation_refusals OWNER TO modelgate_writer;
REVOKE ALL ON analytics.evaluation_refusals FROM PUBLIC;
GRANT SELECT ON analytics.evaluation_refusals TO modelgate_analyst;
