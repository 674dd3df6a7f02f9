-- Model versions, evaluation runs and their performance metrics.
-- Conventions: singular snake_case tables, timestamptz only, units in column names,
-- constraints named <table>_pkey / <table>_<cols>_key / <table>_<col>_fkey / <table>_<name>_check,
-- every foreign key indexed.

CREATE TABLE model_version (
    model_version_id   bigint GENERATED ALWAYS AS IDENTITY,
    model_name         text        NOT NULL,
    version            text        NOT NULL,
    sha256             text        NOT NULL,
    archive_sha256     text        NOT NULL,
    archive_key        text        NOT NULL,
    archive_uri        text        NOT NULL,
    manifest           jsonb       NOT NULL,
    stage              text        NOT NULL DEFAULT 'candidate',
    is_drifting        boolean     NOT NULL DEFAULT false,
    registered_at      timestamptz NOT NULL DEFAULT now(),
    stage_changed_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT model_version_pkey PRIMARY KEY (model_version_id),
    CONSTRAINT model_version_model_name_version_key UNIQUE (model_name, version),
    CONSTRAINT model_version_stage_check
        CHECK (stage IN ('candidate', 'production', 'archived', 'rejected')),
    CONSTRAINT model_version_sha256_check CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    CONSTRAINT model_version_archive_sha256_check CHECK (archive_sha256 ~ '^[0-9a-f]{64}$')
);
-- Exactly one model in production per model name, enforced by the database.
CREATE UNIQUE INDEX model_version_model_name_production_key
    ON model_version (model_name) WHERE stage = 'production';

CREATE TABLE evaluation_run (
    evaluation_run_id      bigint GENERATED ALWAYS AS IDENTITY,
    run_key                text        NOT NULL,
    model_version_id       bigint      NOT NULL,
    champion_version_id    bigint,
    dataset_uri            text        NOT NULL,
    dataset_sha256         text,
    status                 text        NOT NULL DEFAULT 'running',
    failure_reason         text,
    provider               text,
    rows_scored            bigint,
    scoring_seconds        double precision,
    scoring_rows_per_s     double precision,
    scores_uri             text,
    report_key             text,
    report_uri             text,
    started_at             timestamptz NOT NULL DEFAULT now(),
    finished_at            timestamptz,
    CONSTRAINT evaluation_run_pkey PRIMARY KEY (evaluation_run_id),
    CONSTRAINT evaluation_run_run_key_key UNIQUE (run_key),
    CONSTRAINT evaluation_run_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT evaluation_run_champion_version_id_fkey FOREIGN KEY (champion_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT evaluation_run_status_check
        CHECK (status IN ('running', 'passed', 'blocked', 'failed')),
    CONSTRAINT evaluation_run_rows_scored_check CHECK (rows_scored IS NULL OR rows_scored >= 0),
    CONSTRAINT evaluation_run_failure_reason_check
        CHECK (status <> 'failed' OR failure_reason IS NOT NULL)
);
CREATE INDEX evaluation_run_model_version_id_idx ON evaluation_run (model_version_id);
CREATE INDEX evaluation_run_champion_version_id_idx ON evaluation_run (champion_version_id);

CREATE TABLE evaluation_metric (
    evaluation_run_id  bigint           NOT NULL,
    model_role         text             NOT NULL,
    metric_name        text             NOT NULL,
    value              double precision,
    ci_lower           double precision,
    ci_upper           double precision,
    n                  bigint,
    undefined_reason   text,
    CONSTRAINT evaluation_metric_pkey PRIMARY KEY (evaluation_run_id, model_role, metric_name),
    CONSTRAINT evaluation_metric_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE,
    CONSTRAINT evaluation_metric_model_role_check
        CHECK (model_role IN ('candidate', 'champion', 'delta')),
    CONSTRAINT evaluation_metric_interval_check
        CHECK (ci_lower IS NULL OR ci_upper IS NULL OR ci_lower <= ci_upper)
);
