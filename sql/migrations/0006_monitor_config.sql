-- Drift monitoring of every production model: what each model's monitoring reads, label
-- partitions quarantined after a bad delivery, and a traffic light in the drift-runs view.
-- Depends only on 0003 (tables) and 0004 (schema analytics and roles).

CREATE TABLE monitor_config (
    model_name       text        NOT NULL,
    live_uri         text        NOT NULL,
    labels_uri       text        NOT NULL,
    reference_uri    text        NOT NULL,
    sample_rows      integer     NOT NULL DEFAULT 5000,
    thresholds       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT monitor_config_pkey PRIMARY KEY (model_name),
    CONSTRAINT monitor_config_live_uri_check CHECK (live_uri <> ''),
    CONSTRAINT monitor_config_labels_uri_check CHECK (labels_uri <> ''),
    CONSTRAINT monitor_config_reference_uri_check CHECK (reference_uri <> ''),
    CONSTRAINT monitor_config_sample_rows_check CHECK (sample_rows > 0),
    CONSTRAINT monitor_config_thresholds_check CHECK (jsonb_typeof(thresholds) = 'object')
);

-- A labels partition that cannot be joined (duplicate ids) is set aside, not retried by
-- every later run; `modelgate monitor retry` clears the mark once it is fixed.
ALTER TABLE scored_interval
    ADD COLUMN quarantined_at timestamptz,
    ADD COLUMN quarantine_reason text,
    ADD COLUMN quarantined_by_run_id bigint,
    ADD CONSTRAINT scored_interval_quarantine_check
        CHECK ((quarantined_at IS NULL) = (quarantine_reason IS NULL)),
    ADD CONSTRAINT scored_interval_quarantined_by_run_id_fkey FOREIGN KEY (quarantined_by_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE SET NULL;
CREATE INDEX scored_interval_quarantined_by_run_id_idx ON scored_interval (quarantined_by_run_id);

-- Columns can only be appended to a view in place; the grants of 0004 stay.
CREATE OR REPLACE VIEW analytics.drift_runs AS
SELECT dr.drift_run_id, mv.model_name, mv.version, dr.interval_start, dr.interval_end,
       dr.status, dr.verdict, dr.failure_reason, dr.provider, dr.rows_available,
       dr.rows_sampled, dr.rows_labelled, dr.n_features_breached, dr.started_at, dr.finished_at,
       (EXTRACT(EPOCH FROM dr.finished_at - dr.started_at) * 1000)::double precision AS duration_ms,
       CASE dr.status WHEN 'ok' THEN 'green' WHEN 'no_data' THEN 'amber'
                      WHEN 'running' THEN 'grey' ELSE 'red' END AS light
FROM drift_run dr
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON COLUMN analytics.drift_runs.light IS
    'green = ok, amber = no_data (nothing to judge; the drift flag is left as it was), '
    'red = drift or failed, grey = running.';

CREATE VIEW analytics.quarantined_partitions AS
SELECT mv.model_name, mv.version, si.interval_start, si.interval_end, si.quarantined_at,
       si.quarantine_reason, si.quarantined_by_run_id AS drift_run_id
FROM scored_interval si
JOIN model_version mv ON mv.model_version_id = si.model_version_id
WHERE si.quarantined_at IS NOT NULL;

COMMENT ON VIEW analytics.quarantined_partitions IS
    'Label partitions set aside by drift monitoring (e.g. duplicate ids); '
    '`modelgate monitor retry NAME --interval START` reprocesses one after it is fixed.';
ALTER VIEW analytics.quarantined_partitions OWNER TO modelgate_writer;
REVOKE ALL ON analytics.quarantined_partitions FROM PUBLIC;
GRANT SELECT ON analytics.quarantined_partitions TO modelgate_analyst;
