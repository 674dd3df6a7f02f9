-- Drift runs, like evaluation runs (0005), carry a heartbeat and may end 'abandoned': left
-- running by a process that died (killed worker, lost machine), set by the next drift run of
-- the same model, so no row stays 'running' forever.

ALTER TABLE drift_run ADD COLUMN heartbeat_at timestamptz;

ALTER TABLE drift_run DROP CONSTRAINT drift_run_status_check;
ALTER TABLE drift_run ADD CONSTRAINT drift_run_status_check
    CHECK (status IN ('running', 'ok', 'drift', 'no_data', 'failed', 'abandoned'));
ALTER TABLE drift_run DROP CONSTRAINT drift_run_failure_reason_check;
ALTER TABLE drift_run ADD CONSTRAINT drift_run_failure_reason_check
    CHECK (status NOT IN ('failed', 'abandoned') OR failure_reason IS NOT NULL);

-- Finding stuck work: running rows by heartbeat.
CREATE INDEX drift_run_status_heartbeat_at_idx ON drift_run (status, heartbeat_at);

COMMENT ON COLUMN analytics.drift_runs.status IS
    'running | ok | drift | no_data | failed | abandoned (left running by a process that died: '
    'no heartbeat; see failure_reason).';
