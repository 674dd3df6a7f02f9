-- A drift result is never replaced by less evidence (issue #39 point 1).
--
-- 1. Attempts are kept. drift_attempt holds one row per ended attempt of a drift run
--    (drift_run.attempt counts them, migration 0022): its status, verdict, row counts,
--    reasons and report, copied from the run row by trigger drift_attempt_recorded_trigger
--    when the attempt ends (status leaves 'running'; an attempt still running when the
--    interval is started again is recorded 'abandoned'). A row is never changed, nor deleted
--    while its run exists (drift_attempt_kept_trigger).
-- 2. The run row shows the interval's current attempt (drift_run.current_attempt): the
--    latest ended attempt, except that an attempt that ended no_data or insufficient_data
--    (also when degraded) does not replace a current attempt whose verdict was made on data
--    (ok or drift): the store puts that attempt's result back in the row
--    (modelgate/store/drift_attempts.py), and its feature, joint and estimate rows are
--    kept. A failed or abandoned attempt replaces the current one as before (the row says
--    it failed; is_drifting is left as it was). While an attempt runs, current_attempt
--    still names the one the row showed before it started.
-- Runs before this migration: only each run's latest attempt is known; it is copied as it stands.
-- Depends only on 0003, 0004, 0011, 0017, 0022, 0034.

ALTER TABLE drift_run ADD COLUMN current_attempt integer,
    ADD CONSTRAINT drift_run_current_attempt_check
        CHECK (current_attempt IS NULL OR current_attempt BETWEEN 1 AND attempt);

COMMENT ON COLUMN drift_run.current_attempt IS
    'The attempt whose result the row shows (NULL while the first attempt runs): the latest ended one, unless it ended no_data or insufficient_data after an attempt whose verdict was made on data (ok or drift).';

CREATE TABLE drift_attempt (
    drift_run_id         bigint      NOT NULL,
    attempt              integer     NOT NULL,
    status               text        NOT NULL,
    verdict              text,
    failure_reason       text,
    degraded_reason      text,
    evidence_reason      text,
    provider             text,
    rows_available       bigint,
    rows_sampled         bigint,
    rows_labelled        bigint,
    rows_set_aside       bigint,
    n_features_breached  integer,
    report_key           text,
    report_uri           text,
    started_at           timestamptz NOT NULL,
    finished_at          timestamptz NOT NULL,
    CONSTRAINT drift_attempt_pkey PRIMARY KEY (drift_run_id, attempt),
    CONSTRAINT drift_attempt_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT drift_attempt_attempt_check CHECK (attempt >= 1),
    CONSTRAINT drift_attempt_status_check
        CHECK (status IN ('ok', 'drift', 'no_data', 'insufficient_data', 'degraded', 'failed',
                          'abandoned'))
);

COMMENT ON TABLE drift_attempt IS
    'One row per ended attempt of a drift run (its status, verdict, counts, reasons, report); never changed.';

INSERT INTO drift_attempt (drift_run_id, attempt, status, verdict, failure_reason, degraded_reason,
                           evidence_reason, provider, rows_available, rows_sampled, rows_labelled,
                           rows_set_aside, n_features_breached, report_key, report_uri, started_at,
                           finished_at)
SELECT drift_run_id, attempt, status, verdict, failure_reason, degraded_reason, evidence_reason,
       provider, rows_available, rows_sampled, rows_labelled, rows_set_aside, n_features_breached,
       report_key, report_uri, started_at, COALESCE(finished_at, heartbeat_at, started_at)
FROM drift_run WHERE status <> 'running';
UPDATE drift_run SET current_attempt = attempt WHERE status <> 'running';

-- An attempt ends when the row's status leaves 'running': its result is copied, and it becomes
-- the row's current attempt (the store may then put an earlier attempt's result back).
CREATE FUNCTION drift_attempt_recorded() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'running' AND NEW.attempt <> OLD.attempt THEN
        INSERT INTO drift_attempt (drift_run_id, attempt, status, failure_reason, provider,
                                   rows_available, rows_sampled, rows_set_aside, started_at,
                                   finished_at)
        VALUES (OLD.drift_run_id, OLD.attempt, 'abandoned',
                'abandoned: attempt ' || NEW.attempt || ' started before it ended', OLD.provider,
                OLD.rows_available, OLD.rows_sampled, OLD.rows_set_aside, OLD.started_at, now());
    ELSIF OLD.status = 'running' AND NEW.status <> 'running' THEN
        INSERT INTO drift_attempt (drift_run_id, attempt, status, verdict, failure_reason,
                                   degraded_reason, evidence_reason, provider, rows_available,
                                   rows_sampled, rows_labelled, rows_set_aside,
                                   n_features_breached, report_key, report_uri, started_at,
                                   finished_at)
        VALUES (NEW.drift_run_id, NEW.attempt, NEW.status, NEW.verdict, NEW.failure_reason,
                NEW.degraded_reason, NEW.evidence_reason, NEW.provider, NEW.rows_available,
                NEW.rows_sampled, NEW.rows_labelled, NEW.rows_set_aside, NEW.n_features_breached,
                NEW.report_key, NEW.report_uri, NEW.started_at,
                COALESCE(NEW.finished_at, now()));
        NEW.current_attempt := NEW.attempt;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER drift_attempt_recorded_trigger BEFORE UPDATE ON drift_run
    FOR EACH ROW EXECUTE FUNCTION drift_attempt_recorded();

CREATE FUNCTION drift_attempt_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM drift_run
                                        WHERE drift_run_id = OLD.drift_run_id) THEN
        RETURN OLD;  -- its run was deleted (cascade)
    END IF;
    RAISE EXCEPTION 'attempt % of drift run % ended (%): its record is never changed or deleted; '
        're-run the interval to add an attempt', OLD.attempt, OLD.drift_run_id, OLD.status
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER drift_attempt_kept_trigger BEFORE UPDATE OR DELETE ON drift_attempt
    FOR EACH ROW EXECUTE FUNCTION drift_attempt_kept();

-- ---------------------------------------------------------------------------------------
-- Analyst views: new columns at the end of analytics.drift_runs; every attempt in
-- analytics.drift_attempts.
CREATE OR REPLACE VIEW analytics.drift_runs AS
SELECT dr.drift_run_id, mv.model_name, mv.version, dr.interval_start, dr.interval_end,
       dr.status, dr.verdict, dr.failure_reason, dr.provider, dr.rows_available,
       dr.rows_sampled, dr.rows_labelled, dr.n_features_breached, dr.started_at, dr.finished_at,
       (EXTRACT(EPOCH FROM dr.finished_at - dr.started_at) * 1000)::double precision AS duration_ms,
       CASE WHEN dr.status = 'degraded' THEN CASE WHEN dr.verdict = 'drift' THEN 'red' ELSE 'amber' END
            WHEN dr.status = 'ok' THEN 'green' WHEN dr.status IN ('no_data', 'insufficient_data') THEN 'amber'
            WHEN dr.status = 'running' THEN 'grey' ELSE 'red' END AS light,
       dr.degraded_reason, dr.rows_set_aside, dr.evidence_reason,
       dr.attempt, dr.current_attempt
FROM drift_run dr
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON COLUMN analytics.drift_runs.attempt IS
    'How many attempts of the interval were started; analytics.drift_attempts has every ended one.';
COMMENT ON COLUMN analytics.drift_runs.current_attempt IS
    'The attempt the row''s result comes from: the latest ended one, unless it found less evidence (no_data, insufficient_data) than an earlier attempt with a verdict on data.';

CREATE VIEW analytics.drift_attempts AS
SELECT da.drift_run_id, mv.model_name, mv.version, dr.interval_start, dr.interval_end,
       da.attempt, (da.attempt = dr.current_attempt) AS is_current, da.status, da.verdict,
       da.failure_reason, da.degraded_reason, da.evidence_reason, da.provider,
       da.rows_available, da.rows_sampled, da.rows_labelled, da.rows_set_aside,
       da.n_features_breached, da.report_uri, da.started_at, da.finished_at
FROM drift_attempt da
JOIN drift_run dr ON dr.drift_run_id = da.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON VIEW analytics.drift_attempts IS
    'One row per ended attempt of a drift run (an interval of a model version); is_current marks the one analytics.drift_runs shows. Never changed.';

ALTER VIEW analytics.drift_attempts OWNER TO modelgate_writer;
REVOKE ALL ON analytics.drift_attempts FROM PUBLIC;
GRANT SELECT ON analytics.drift_attempts TO modelgate_analyst;
