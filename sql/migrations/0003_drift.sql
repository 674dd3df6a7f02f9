-- Drift monitoring: reference sketches, drift runs per data interval, per-feature data drift,
-- ADWIN concept-drift change points and the detector state carried between runs.

CREATE TABLE reference_sketch (
    model_version_id   bigint      NOT NULL,
    object_key         text        NOT NULL,
    object_uri         text        NOT NULL,
    n_rows             bigint      NOT NULL,
    n_features         integer     NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reference_sketch_pkey PRIMARY KEY (model_version_id),
    CONSTRAINT reference_sketch_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id)
);

CREATE TABLE drift_run (
    drift_run_id         bigint GENERATED ALWAYS AS IDENTITY,
    model_version_id     bigint      NOT NULL,
    interval_start       timestamptz NOT NULL,
    interval_end         timestamptz NOT NULL,
    status               text        NOT NULL DEFAULT 'running',
    verdict              text,
    failure_reason       text,
    provider             text,
    rows_available       bigint,
    rows_sampled         bigint,
    rows_labelled        bigint,
    n_features_breached  integer,
    scores_uri           text,
    report_key           text,
    report_uri           text,
    started_at           timestamptz NOT NULL DEFAULT now(),
    finished_at          timestamptz,
    CONSTRAINT drift_run_pkey PRIMARY KEY (drift_run_id),
    CONSTRAINT drift_run_model_version_id_interval_start_interval_end_key
        UNIQUE (model_version_id, interval_start, interval_end),
    CONSTRAINT drift_run_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT drift_run_status_check CHECK (status IN ('running', 'ok', 'drift', 'no_data', 'failed')),
    CONSTRAINT drift_run_interval_check CHECK (interval_start < interval_end),
    CONSTRAINT drift_run_failure_reason_check CHECK (status <> 'failed' OR failure_reason IS NOT NULL)
);
CREATE INDEX drift_run_model_version_id_idx ON drift_run (model_version_id);

CREATE TABLE feature_drift (
    drift_run_id            bigint           NOT NULL,
    feature                 text             NOT NULL,
    kind                    text             NOT NULL,
    drift_rank              integer          NOT NULL,
    wasserstein             double precision,
    wasserstein_normalised  double precision,
    js_divergence_base2     double precision,
    statistic_name          text,
    statistic_value         double precision,
    baseline                double precision,
    threshold               double precision,
    verdict                 text             NOT NULL,
    n_reference             bigint           NOT NULL,
    n_current               bigint           NOT NULL,
    n_missing_current       bigint           NOT NULL,
    unseen_categories       text[]           NOT NULL DEFAULT '{}',
    CONSTRAINT feature_drift_pkey PRIMARY KEY (drift_run_id, feature),
    CONSTRAINT feature_drift_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT feature_drift_kind_check CHECK (kind IN ('numeric', 'categorical', 'prediction')),
    CONSTRAINT feature_drift_verdict_check CHECK (verdict IN ('ok', 'drift', 'no_data')),
    CONSTRAINT feature_drift_js_divergence_base2_check
        CHECK (js_divergence_base2 IS NULL OR (js_divergence_base2 >= 0 AND js_divergence_base2 <= 1 + 1e-12)),
    CONSTRAINT feature_drift_wasserstein_check CHECK (wasserstein IS NULL OR wasserstein >= 0)
);

-- Live rows scored in an interval whose labels have not been fed to ADWIN yet.
CREATE TABLE scored_interval (
    model_version_id   bigint      NOT NULL,
    interval_start     timestamptz NOT NULL,
    interval_end       timestamptz NOT NULL,
    scores_key         text        NOT NULL,
    rows_scored        bigint      NOT NULL,
    labels_consumed_at timestamptz,
    consumed_by_run_id bigint,
    CONSTRAINT scored_interval_pkey PRIMARY KEY (model_version_id, interval_start, interval_end),
    CONSTRAINT scored_interval_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT scored_interval_consumed_by_run_id_fkey FOREIGN KEY (consumed_by_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE SET NULL
);
CREATE INDEX scored_interval_consumed_by_run_id_idx ON scored_interval (consumed_by_run_id);

CREATE TABLE concept_drift_change (
    model_version_id   bigint           NOT NULL,
    stream_position    bigint           NOT NULL,
    drift_run_id       bigint           NOT NULL,
    event_time         timestamptz,
    error_rate_before  double precision NOT NULL,
    error_rate_after   double precision NOT NULL,
    CONSTRAINT concept_drift_change_pkey PRIMARY KEY (model_version_id, stream_position),
    CONSTRAINT concept_drift_change_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT concept_drift_change_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE
);
CREATE INDEX concept_drift_change_drift_run_id_idx ON concept_drift_change (drift_run_id);

CREATE TABLE detector_state (
    model_version_id   bigint      NOT NULL,
    detector           text        NOT NULL,
    state              bytea       NOT NULL,
    elements_seen      bigint      NOT NULL,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    updated_by_run_id  bigint,
    CONSTRAINT detector_state_pkey PRIMARY KEY (model_version_id, detector),
    CONSTRAINT detector_state_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT detector_state_updated_by_run_id_fkey FOREIGN KEY (updated_by_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE SET NULL
);
CREATE INDEX detector_state_updated_by_run_id_idx ON detector_state (updated_by_run_id);
