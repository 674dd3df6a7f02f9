-- A kept attempt's scored sample goes back with its verdict (issue #39).
--
-- record_sample writes an attempt's scored sample into the run row (scores_uri, and how it was
-- scored: provider_reason, tf32_allowed, set_aside_reason) as soon as the sample is scored.
-- drift_attempt (0038) did not keep these, so when an attempt that ended no_data or
-- insufficient_data was recorded beside an earlier verdict on data, the store put that
-- verdict's status, counts and report back in the row but left the thin attempt's sample
-- (NULL, or its few rows). drift_attempt now keeps them, trigger drift_attempt_recorded
-- copies them, and modelgate/store/drift_attempts.put_back restores them with the rest.
-- Earlier attempts: the run row's values are copied to its latest attempt when the row shows
-- it; the others' are unknown (NULL; the interval's scored_interval row names the sample of the
-- verdict on data by its object key).
-- Depends only on 0003, 0010, 0034, 0038.

ALTER TABLE drift_attempt ADD COLUMN scores_uri text, ADD COLUMN provider_reason text,
    ADD COLUMN tf32_allowed boolean, ADD COLUMN set_aside_reason text;

COMMENT ON COLUMN drift_attempt.scores_uri IS
    'The attempt''s scored sample (drift_run.scores_uri while it was the current attempt); NULL without one.';

ALTER TABLE drift_attempt DISABLE TRIGGER drift_attempt_kept_trigger;
UPDATE drift_attempt da
SET scores_uri = dr.scores_uri, provider_reason = dr.provider_reason,
    tf32_allowed = dr.tf32_allowed, set_aside_reason = dr.set_aside_reason
FROM drift_run dr
WHERE dr.drift_run_id = da.drift_run_id AND da.attempt = dr.current_attempt
  AND dr.current_attempt = dr.attempt;
ALTER TABLE drift_attempt ENABLE TRIGGER drift_attempt_kept_trigger;

CREATE OR REPLACE FUNCTION drift_attempt_recorded() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'running' AND NEW.attempt <> OLD.attempt THEN
        INSERT INTO drift_attempt (drift_run_id, attempt, status, failure_reason, provider,
                                   rows_available, rows_sampled, rows_set_aside, started_at,
                                   finished_at, scores_uri, provider_reason, tf32_allowed,
                                   set_aside_reason)
        VALUES (OLD.drift_run_id, OLD.attempt, 'abandoned',
                'abandoned: attempt ' || NEW.attempt || ' started before it ended', OLD.provider,
                OLD.rows_available, OLD.rows_sampled, OLD.rows_set_aside, OLD.started_at, now(),
                OLD.scores_uri, OLD.provider_reason, OLD.tf32_allowed, OLD.set_aside_reason);
    ELSIF OLD.status = 'running' AND NEW.status <> 'running' THEN
        INSERT INTO drift_attempt (drift_run_id, attempt, status, verdict, failure_reason,
                                   degraded_reason, evidence_reason, provider, rows_available,
                                   rows_sampled, rows_labelled, rows_set_aside,
                                   n_features_breached, report_key, report_uri, started_at,
                                   finished_at, scores_uri, provider_reason, tf32_allowed,
                                   set_aside_reason)
        VALUES (NEW.drift_run_id, NEW.attempt, NEW.status, NEW.verdict, NEW.failure_reason,
                NEW.degraded_reason, NEW.evidence_reason, NEW.provider, NEW.rows_available,
                NEW.rows_sampled, NEW.rows_labelled, NEW.rows_set_aside, NEW.n_features_breached,
                NEW.report_key, NEW.report_uri, NEW.started_at,
                COALESCE(NEW.finished_at, now()), NEW.scores_uri, NEW.provider_reason,
                NEW.tf32_allowed, NEW.set_aside_reason);
        NEW.current_attempt := NEW.attempt;
    END IF;
    RETURN NEW;
END
$$;
