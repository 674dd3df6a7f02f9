-- Segments: metrics per slice of the data and the gate's segment thresholds (issue #43).
--
-- segment_metric holds one row per evaluation run x attempt x segment x metric: the metric on
-- the segment's rows and on the rest of the data, their difference with its interval, the
-- one-sided p-value that the segment is worse and its q-value (adjusted over the report's
-- family of tests). segment_gate_check holds one row per attempt x segment threshold x judged
-- segment: the verdict of that segment under the threshold (gate_check keeps one row per
-- threshold, kind 'segment', naming the deciding segment). Both are keyed by attempt and
-- written once, with the decision, like gate_check (gate_result_written_once, migration 0029).
-- Depends only on 0001-0038.

ALTER TABLE gate_check DROP CONSTRAINT gate_check_kind_check,
    ADD CONSTRAINT gate_check_kind_check CHECK (kind IN ('value', 'change', 'fairness', 'segment'));

CREATE TABLE segment_metric (
    evaluation_run_id    bigint           NOT NULL,
    attempt              integer          NOT NULL,
    segment              text             NOT NULL,
    segment_columns      text[]           NOT NULL,
    segment_values       text[]           NOT NULL,
    metric_name          text             NOT NULL,
    n                    bigint           NOT NULL,
    positives            bigint           NOT NULL,
    judged               boolean          NOT NULL,
    not_judged_reason    text,
    higher_is_better     boolean          NOT NULL,
    value                double precision,
    ci_lower             double precision,
    ci_upper             double precision,
    rest_value           double precision,
    rest_ci_lower        double precision,
    rest_ci_upper        double precision,
    difference           double precision,
    difference_ci_lower  double precision,
    difference_ci_upper  double precision,
    p_value              double precision,
    q_value              double precision,
    correction           text             NOT NULL,
    undefined_reason     text,
    CONSTRAINT segment_metric_pkey PRIMARY KEY (evaluation_run_id, attempt, segment, metric_name),
    CONSTRAINT segment_metric_evaluation_run_id_attempt_fkey FOREIGN KEY (evaluation_run_id, attempt)
        REFERENCES evaluation_attempt (evaluation_run_id, attempt) ON DELETE CASCADE,
    CONSTRAINT segment_metric_columns_check
        CHECK (cardinality(segment_columns) BETWEEN 1 AND 2
               AND cardinality(segment_values) = cardinality(segment_columns)),
    CONSTRAINT segment_metric_n_check CHECK (n >= 0 AND positives BETWEEN 0 AND n),
    CONSTRAINT segment_metric_judged_check CHECK (judged = (not_judged_reason IS NULL)),
    CONSTRAINT segment_metric_p_value_check
        CHECK ((p_value IS NULL OR p_value BETWEEN 0 AND 1) AND (q_value IS NULL OR q_value BETWEEN 0 AND 1)),
    CONSTRAINT segment_metric_correction_check CHECK (correction IN ('bh', 'by', 'holm'))
);

COMMENT ON TABLE segment_metric IS
    'One row per evaluation run x attempt x segment (a value of a segment column, or of a pair) x metric; written once with the decision.';
COMMENT ON COLUMN segment_metric.difference IS
    'value - rest_value (the segment against every other row), in the metric''s units.';
COMMENT ON COLUMN segment_metric.p_value IS
    'One-sided p-value that the segment is worse than the rest; NULL when not judged.';
COMMENT ON COLUMN segment_metric.q_value IS
    'p_value adjusted over every judged (segment, metric) of the attempt by correction.';

CREATE TABLE segment_gate_check (
    evaluation_run_id    bigint           NOT NULL,
    attempt              integer          NOT NULL,
    check_id             text             NOT NULL,
    segment              text             NOT NULL,
    segment_columns      text[]           NOT NULL,
    segment_values       text[]           NOT NULL,
    metric_name          text             NOT NULL,
    kind                 text             NOT NULL,
    n                    bigint           NOT NULL,
    observed             double precision,
    ci_lower             double precision,
    ci_upper             double precision,
    lower                double precision,
    upper                double precision,
    p_value              double precision,
    q_value              double precision,
    verdict              text             NOT NULL,
    CONSTRAINT segment_gate_check_pkey PRIMARY KEY (evaluation_run_id, attempt, check_id, segment),
    CONSTRAINT segment_gate_check_evaluation_run_id_attempt_check_id_fkey
        FOREIGN KEY (evaluation_run_id, attempt, check_id)
        REFERENCES gate_check (evaluation_run_id, attempt, check_id) ON DELETE CASCADE,
    CONSTRAINT segment_gate_check_kind_check CHECK (kind IN ('limit', 'margin')),
    CONSTRAINT segment_gate_check_verdict_check CHECK (verdict IN ('pass', 'breach', 'inconclusive'))
);

COMMENT ON TABLE segment_gate_check IS
    'One row per evaluation run x attempt x segment threshold (gate_check of kind segment) x judged segment: that segment''s verdict; written once with the decision.';

-- written once, with the decision, as gate_check (migration 0029)
CREATE TRIGGER segment_metric_written_once_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON segment_metric FOR EACH ROW EXECUTE FUNCTION gate_result_written_once();
CREATE TRIGGER segment_gate_check_written_once_trigger BEFORE INSERT OR UPDATE OR DELETE
    ON segment_gate_check FOR EACH ROW EXECUTE FUNCTION gate_result_written_once();

-- ---------------------------------------------------------------------------------------
CREATE VIEW analytics.segment_metrics AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.started_at, sm.attempt,
       (sm.attempt = er.attempt) AS is_latest_attempt,
       sm.segment, sm.segment_columns, sm.segment_values, sm.metric_name, sm.n, sm.positives,
       sm.judged, sm.not_judged_reason, sm.higher_is_better, sm.value, sm.ci_lower, sm.ci_upper,
       sm.rest_value, sm.rest_ci_lower, sm.rest_ci_upper, sm.difference, sm.difference_ci_lower,
       sm.difference_ci_upper, sm.p_value, sm.q_value, sm.correction, sm.undefined_reason
FROM segment_metric sm
JOIN evaluation_run er ON er.evaluation_run_id = sm.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;
COMMENT ON VIEW analytics.segment_metrics IS
    'One row per evaluation run x attempt x segment x metric: the metric on the slice and on the rest, their difference, p-value and q-value.';

CREATE VIEW analytics.segment_gate_checks AS
SELECT mv.model_name, mv.version, er.evaluation_run_id, er.run_key, er.started_at, sg.attempt,
       (sg.attempt = er.attempt) AS is_latest_attempt,
       sg.check_id, sg.segment, sg.segment_columns, sg.segment_values, sg.metric_name, sg.kind,
       sg.n, sg.observed, sg.ci_lower, sg.ci_upper, sg.lower, sg.upper, sg.p_value, sg.q_value,
       sg.verdict, gc.severity, gc.effect AS check_effect
FROM segment_gate_check sg
JOIN gate_check gc ON gc.evaluation_run_id = sg.evaluation_run_id AND gc.attempt = sg.attempt
                  AND gc.check_id = sg.check_id
JOIN evaluation_run er ON er.evaluation_run_id = sg.evaluation_run_id
JOIN model_version mv ON mv.model_version_id = er.model_version_id;
COMMENT ON VIEW analytics.segment_gate_checks IS
    'One row per evaluation run x attempt x segment threshold x judged segment: the segment''s verdict, and the effect of the threshold''s check.';

ALTER VIEW analytics.segment_metrics OWNER TO modelgate_writer;
ALTER VIEW analytics.segment_gate_checks OWNER TO modelgate_writer;
GRANT SELECT ON analytics.segment_metrics, analytics.segment_gate_checks TO modelgate_analyst;
