-- Drift per segment (issue #43 item 4).
--
-- segment_drift holds one row per drift run x attempt x segment (a value of a segment column
-- named in the monitoring config) x feature: the rows of the segment on each side (reference,
-- interval), the test (two-sample KS for a numeric feature, Pearson chi-square for a
-- categorical one), its p-value and its q-value adjusted over every (feature, segment) test of
-- the attempt, and the status: drift (q <= level), no_drift, or insufficient_data (fewer than
-- min_rows rows on a side: not tested, not in the family). Keyed by attempt and never changed
-- or deleted while its run exists (segment_drift_kept_trigger), like drift_attempt (0038).
-- Depends only on 0003, 0004, 0038.

CREATE TABLE segment_drift (
    drift_run_id     bigint           NOT NULL,
    attempt          integer          NOT NULL,
    segment_column   text             NOT NULL,
    segment_value    text             NOT NULL,
    feature          text             NOT NULL,
    kind             text             NOT NULL,
    test             text             NOT NULL,
    n_reference      bigint           NOT NULL,
    n_current        bigint           NOT NULL,
    statistic        double precision,
    p_value          double precision,
    q_value          double precision,
    status           text             NOT NULL,
    correction       text             NOT NULL,
    level            double precision NOT NULL,
    min_rows         integer          NOT NULL,
    family_size      integer          NOT NULL,
    CONSTRAINT segment_drift_pkey
        PRIMARY KEY (drift_run_id, attempt, segment_column, segment_value, feature),
    CONSTRAINT segment_drift_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT segment_drift_attempt_check CHECK (attempt >= 1),
    CONSTRAINT segment_drift_kind_check CHECK (kind IN ('numeric', 'categorical')),
    CONSTRAINT segment_drift_test_check CHECK (test IN ('ks', 'chi2')),
    CONSTRAINT segment_drift_n_check CHECK (n_reference >= 0 AND n_current >= 0),
    CONSTRAINT segment_drift_status_check CHECK (status IN ('drift', 'no_drift', 'insufficient_data')),
    CONSTRAINT segment_drift_tested_check
        CHECK ((status = 'insufficient_data') = (p_value IS NULL) AND (p_value IS NULL) = (q_value IS NULL)),
    CONSTRAINT segment_drift_p_value_check
        CHECK ((p_value IS NULL OR p_value BETWEEN 0 AND 1) AND (q_value IS NULL OR q_value BETWEEN 0 AND 1)),
    CONSTRAINT segment_drift_correction_check CHECK (correction IN ('bh', 'by', 'holm')),
    CONSTRAINT segment_drift_level_check CHECK (level > 0 AND level < 1),
    CONSTRAINT segment_drift_family_check CHECK (min_rows >= 2 AND family_size >= 0)
);

COMMENT ON TABLE segment_drift IS
    'One row per drift run x attempt x segment x feature: the feature''s test within the segment against the reference''s same segment; never changed.';
COMMENT ON COLUMN segment_drift.q_value IS
    'p_value adjusted by correction over every tested (feature, segment) of the attempt (family_size tests); drift when q_value <= level.';

CREATE FUNCTION segment_drift_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM drift_run
                                        WHERE drift_run_id = OLD.drift_run_id) THEN
        RETURN OLD;  -- its run was deleted (cascade)
    END IF;
    RAISE EXCEPTION 'segment drift of attempt % of drift run % is never changed or deleted; '
        're-run the interval to add an attempt', OLD.attempt, OLD.drift_run_id
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER segment_drift_kept_trigger BEFORE UPDATE OR DELETE ON segment_drift
    FOR EACH ROW EXECUTE FUNCTION segment_drift_kept();

CREATE VIEW analytics.segment_drift AS
SELECT mv.model_name, mv.version, sd.drift_run_id, dr.interval_start, dr.interval_end, sd.attempt,
       (sd.attempt = dr.current_attempt) AS is_current_attempt,
       sd.segment_column, sd.segment_value, sd.feature, sd.kind, sd.test, sd.n_reference,
       sd.n_current, sd.statistic, sd.p_value, sd.q_value, sd.status, sd.correction, sd.level,
       sd.min_rows, sd.family_size
FROM segment_drift sd
JOIN drift_run dr ON dr.drift_run_id = sd.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;
COMMENT ON VIEW analytics.segment_drift IS
    'One row per drift run x attempt x segment x feature: the test within the segment, its p-value, q-value and status.';

ALTER VIEW analytics.segment_drift OWNER TO modelgate_writer;
GRANT SELECT ON analytics.segment_drift TO modelgate_analyst;
