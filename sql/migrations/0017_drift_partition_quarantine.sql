-- Drift monitoring that says what it skipped (issue #21): every live or labels partition a run
-- could not use is recorded with its reason; the run that set it aside finishes 'degraded'
-- (its verdict stays ok / drift / no_data) instead of failing or passing silently. Labelled
-- rows are counted per scored interval, so a re-run keeps rows_labelled equal to what the
-- detector was fed.

CREATE TABLE quarantined_partition (
    quarantined_partition_id  bigint GENERATED ALWAYS AS IDENTITY,
    model_version_id          bigint      NOT NULL,
    source                    text        NOT NULL,
    partition_name            text        NOT NULL,
    partition_uri             text        NOT NULL,
    interval_start            timestamptz NOT NULL,
    interval_end              timestamptz NOT NULL,
    reason                    text        NOT NULL,
    drift_run_id              bigint      NOT NULL,
    quarantined_at            timestamptz NOT NULL DEFAULT now(),
    released_at               timestamptz,
    CONSTRAINT quarantined_partition_pkey PRIMARY KEY (quarantined_partition_id),
    CONSTRAINT quarantined_partition_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT quarantined_partition_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT quarantined_partition_source_check CHECK (source IN ('live', 'labels')),
    CONSTRAINT quarantined_partition_reason_check CHECK (reason <> ''),
    CONSTRAINT quarantined_partition_interval_check CHECK (interval_start < interval_end)
);
CREATE INDEX quarantined_partition_model_version_id_idx ON quarantined_partition (model_version_id);
CREATE INDEX quarantined_partition_drift_run_id_idx ON quarantined_partition (drift_run_id);
-- One open quarantine per (model_version_id, source, partition_name): a retried task finds
-- it instead of adding a second.
CREATE UNIQUE INDEX quarantined_partition_open_key
    ON quarantined_partition (model_version_id, source, partition_name) WHERE released_at IS NULL;

-- Labels quarantined before this migration (duplicate ids) keep their open quarantine.
INSERT INTO quarantined_partition (model_version_id, source, partition_name, partition_uri,
                                   interval_start, interval_end, reason, drift_run_id, quarantined_at)
SELECT si.model_version_id, 'labels',
       'dt=' || to_char(si.interval_start AT TIME ZONE 'UTC', 'YYYY-MM-DD'), '',
       si.interval_start, si.interval_end, si.quarantine_reason, si.quarantined_by_run_id,
       si.quarantined_at
FROM scored_interval si
WHERE si.quarantined_at IS NOT NULL AND si.quarantined_by_run_id IS NOT NULL;

ALTER TABLE drift_run ADD COLUMN degraded_reason text;
ALTER TABLE drift_run DROP CONSTRAINT drift_run_status_check;
ALTER TABLE drift_run ADD CONSTRAINT drift_run_status_check
    CHECK (status IN ('running', 'ok', 'drift', 'no_data', 'degraded', 'failed', 'abandoned'));
ALTER TABLE drift_run ADD CONSTRAINT drift_run_degraded_reason_check
    CHECK (status <> 'degraded' OR degraded_reason IS NOT NULL);

-- Labelled rows each scored interval fed to ADWIN; drift_run.rows_labelled is their sum over
-- the intervals the run consumed.
ALTER TABLE scored_interval ADD COLUMN rows_labelled bigint,
    ADD CONSTRAINT scored_interval_rows_labelled_check CHECK (rows_labelled IS NULL OR rows_labelled >= 0);
-- Intervals consumed before this migration: a run that consumed one gets its count; a run that
-- consumed several has its whole count on its earliest interval (the split was not recorded),
-- so each run's sum, and the total the detector saw, are kept.
UPDATE scored_interval si SET rows_labelled = CASE WHEN si.interval_start = first.interval_start
                                                   THEN COALESCE(dr.rows_labelled, 0) ELSE 0 END
FROM drift_run dr,
     LATERAL (SELECT min(s.interval_start) AS interval_start FROM scored_interval s
              WHERE s.consumed_by_run_id = dr.drift_run_id) first
WHERE si.consumed_by_run_id = dr.drift_run_id AND si.labels_consumed_at IS NOT NULL;

COMMENT ON TABLE quarantined_partition IS
    'Live or labels partitions a drift run could not use (unreadable, missing or mistyped '
    'columns, labels outside the model''s classes, duplicate ids), with the run that set them '
    'aside; released_at is set by `modelgate monitor retry`.';
COMMENT ON COLUMN drift_run.degraded_reason IS
    'Why a finished run is degraded: the partitions it quarantined, each with its reason.';
COMMENT ON COLUMN scored_interval.rows_labelled IS
    'Labelled rows of this interval fed to ADWIN (NULL until its labels are consumed).';

-- Columns can only be appended to a view in place; the grants of 0004 stay.
CREATE OR REPLACE VIEW analytics.drift_runs AS
SELECT dr.drift_run_id, mv.model_name, mv.version, dr.interval_start, dr.interval_end,
       dr.status, dr.verdict, dr.failure_reason, dr.provider, dr.rows_available,
       dr.rows_sampled, dr.rows_labelled, dr.n_features_breached, dr.started_at, dr.finished_at,
       (EXTRACT(EPOCH FROM dr.finished_at - dr.started_at) * 1000)::double precision AS duration_ms,
       CASE WHEN dr.status = 'degraded' THEN CASE WHEN dr.verdict = 'drift' THEN 'red' ELSE 'amber' END
            WHEN dr.status = 'ok' THEN 'green' WHEN dr.status = 'no_data' THEN 'amber'
            WHEN dr.status = 'running' THEN 'grey' ELSE 'red' END AS light,
       dr.degraded_reason
FROM drift_run dr
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON COLUMN analytics.drift_runs.status IS
    'running | ok | drift | no_data | degraded (finished, but partitions were quarantined: see '
    'degraded_reason; verdict holds ok, drift or no_data) | failed | abandoned (left running by '
    'a process that died: no heartbeat; see failure_reason).';
COMMENT ON COLUMN analytics.drift_runs.light IS
    'green = ok, amber = no_data or degraded without drift, red = drift, failed or abandoned, '
    'grey = running.';
COMMENT ON COLUMN analytics.drift_runs.degraded_reason IS
    'The partitions a degraded run quarantined, each named with its reason.';

CREATE OR REPLACE VIEW analytics.quarantined_partitions AS
SELECT mv.model_name, mv.version, qp.interval_start, qp.interval_end, qp.quarantined_at,
       qp.reason AS quarantine_reason, qp.drift_run_id, qp.source, qp.partition_name,
       qp.partition_uri
FROM quarantined_partition qp
JOIN model_version mv ON mv.model_version_id = qp.model_version_id
WHERE qp.released_at IS NULL;

COMMENT ON VIEW analytics.quarantined_partitions IS
    'Live and label partitions set aside by drift monitoring and not released; drift_run_id is '
    'the run that set each aside (status degraded). `modelgate monitor retry NAME --interval '
    'START` releases those of an interval and reprocesses it after they are fixed.';
