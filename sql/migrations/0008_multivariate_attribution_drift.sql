-- Multivariate drift (sliced Wasserstein on standardised numeric features) and attribution
-- drift (distance between normalised mean |SHAP| profiles) per drift run, the references they
-- are measured against (once per model version), and analyst views over both.
-- Depends only on 0003 (drift_run, model_version) and 0004 (roles, schema analytics).

CREATE TABLE multivariate_reference (
    model_version_id   bigint           NOT NULL,
    object_key         text             NOT NULL,
    object_uri         text             NOT NULL,
    features           text[]           NOT NULL,
    n_rows             bigint           NOT NULL,
    n_projections      integer          NOT NULL,
    baseline           double precision NOT NULL,
    created_at         timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT multivariate_reference_pkey PRIMARY KEY (model_version_id),
    CONSTRAINT multivariate_reference_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT multivariate_reference_n_projections_check CHECK (n_projections >= 1),
    CONSTRAINT multivariate_reference_baseline_check CHECK (baseline >= 0)
);

-- The attribution profile of the model version on its reference rows, and where the
-- background rows of the SHAP masker are kept (every drift run explains against the same ones).
CREATE TABLE attribution_reference (
    model_version_id     bigint           NOT NULL,
    n_rows               integer          NOT NULL,
    baseline             double precision NOT NULL,
    half_size_1          integer          NOT NULL,
    half_size_2          integer          NOT NULL,
    algorithm            text             NOT NULL,
    evaluations_per_row  integer          NOT NULL,
    background_rows      integer          NOT NULL,
    background_key       text             NOT NULL,
    background_uri       text             NOT NULL,
    created_at           timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT attribution_reference_pkey PRIMARY KEY (model_version_id),
    CONSTRAINT attribution_reference_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES model_version (model_version_id),
    CONSTRAINT attribution_reference_baseline_check CHECK (baseline >= 0 AND baseline <= 1),
    CONSTRAINT attribution_reference_n_rows_check CHECK (n_rows >= 2)
);

CREATE TABLE attribution_reference_share (
    model_version_id   bigint           NOT NULL,
    feature            text             NOT NULL,
    share              double precision NOT NULL,
    mean_abs_shap      double precision NOT NULL,
    CONSTRAINT attribution_reference_share_pkey PRIMARY KEY (model_version_id, feature),
    CONSTRAINT attribution_reference_share_model_version_id_fkey FOREIGN KEY (model_version_id)
        REFERENCES attribution_reference (model_version_id) ON DELETE CASCADE,
    CONSTRAINT attribution_reference_share_share_check CHECK (share >= 0 AND share <= 1),
    CONSTRAINT attribution_reference_share_mean_abs_shap_check CHECK (mean_abs_shap >= 0)
);

CREATE TABLE multivariate_drift (
    drift_run_id          bigint           NOT NULL,
    statistic_name        text             NOT NULL,
    statistic_value       double precision,
    baseline              double precision,
    threshold             double precision,
    verdict               text             NOT NULL,
    n_features            integer          NOT NULL,
    n_projections         integer          NOT NULL,
    n_reference           bigint           NOT NULL,
    n_current             bigint           NOT NULL,
    n_compared            bigint           NOT NULL,
    n_incomplete_current  bigint           NOT NULL,
    CONSTRAINT multivariate_drift_pkey PRIMARY KEY (drift_run_id),
    CONSTRAINT multivariate_drift_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT multivariate_drift_verdict_check CHECK (verdict IN ('ok', 'drift', 'no_data')),
    CONSTRAINT multivariate_drift_statistic_value_check
        CHECK (statistic_value IS NULL OR statistic_value >= 0),
    CONSTRAINT multivariate_drift_no_data_check
        CHECK ((verdict = 'no_data') = (statistic_value IS NULL))
);

CREATE TABLE attribution_drift (
    drift_run_id     bigint           NOT NULL,
    statistic_name   text             NOT NULL,
    statistic_value  double precision,
    baseline         double precision,
    threshold        double precision,
    verdict          text             NOT NULL,
    n_reference      integer          NOT NULL,
    n_current        integer          NOT NULL,
    CONSTRAINT attribution_drift_pkey PRIMARY KEY (drift_run_id),
    CONSTRAINT attribution_drift_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES drift_run (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT attribution_drift_verdict_check CHECK (verdict IN ('ok', 'drift', 'no_data')),
    CONSTRAINT attribution_drift_statistic_value_check
        CHECK (statistic_value IS NULL OR (statistic_value >= 0 AND statistic_value <= 1 + 1e-12)),
    CONSTRAINT attribution_drift_no_data_check
        CHECK ((verdict = 'no_data') = (statistic_value IS NULL))
);

CREATE TABLE attribution_drift_share (
    drift_run_id     bigint           NOT NULL,
    feature          text             NOT NULL,
    reference_share  double precision NOT NULL,
    current_share    double precision NOT NULL,
    CONSTRAINT attribution_drift_share_pkey PRIMARY KEY (drift_run_id, feature),
    CONSTRAINT attribution_drift_share_drift_run_id_fkey FOREIGN KEY (drift_run_id)
        REFERENCES attribution_drift (drift_run_id) ON DELETE CASCADE,
    CONSTRAINT attribution_drift_share_share_check CHECK (
        reference_share >= 0 AND reference_share <= 1 AND current_share >= 0 AND current_share <= 1)
);
-- Every foreign key above is the leading column of its table's primary key, which indexes it.

-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW analytics.multivariate_drift_by_interval AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status, md.statistic_name, md.statistic_value, md.baseline, md.threshold,
       md.verdict, md.n_features, md.n_projections, md.n_reference, md.n_current, md.n_compared,
       md.n_incomplete_current
FROM multivariate_drift md
JOIN drift_run dr ON dr.drift_run_id = md.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id;

COMMENT ON VIEW analytics.multivariate_drift_by_interval IS
    'One row per drift run: joint drift of the numeric features (catches changes in how features move together).';
COMMENT ON COLUMN analytics.multivariate_drift_by_interval.statistic_name IS
    'sliced_wasserstein_2: sliced Wasserstein-2 distance on features standardised by the reference.';
COMMENT ON COLUMN analytics.multivariate_drift_by_interval.statistic_value IS
    'The statistic, in reference standard deviations; NULL when there was no complete live row.';
COMMENT ON COLUMN analytics.multivariate_drift_by_interval.baseline IS
    'The statistic between two halves of the reference, rescaled to the compared sizes.';
COMMENT ON COLUMN analytics.multivariate_drift_by_interval.threshold IS
    'max(floor, relative * baseline); verdict is drift when statistic_value > threshold.';
COMMENT ON COLUMN analytics.multivariate_drift_by_interval.n_compared IS
    'Live rows compared (a seeded sample when more than the reference''s max_rows).';
COMMENT ON COLUMN analytics.multivariate_drift_by_interval.n_incomplete_current IS
    'Live rows left out for a missing or infinite numeric value.';

CREATE OR REPLACE VIEW analytics.attribution_drift_by_interval AS
SELECT mv.model_name, mv.version, dr.drift_run_id, dr.interval_start, dr.interval_end,
       dr.status AS run_status, ad.statistic_name, ad.statistic_value, ad.baseline, ad.threshold,
       ad.verdict, ad.n_reference, ad.n_current, s.feature, s.reference_share, s.current_share,
       s.current_share - s.reference_share AS share_change
FROM attribution_drift ad
JOIN drift_run dr ON dr.drift_run_id = ad.drift_run_id
JOIN model_version mv ON mv.model_version_id = dr.model_version_id
LEFT JOIN attribution_drift_share s ON s.drift_run_id = ad.drift_run_id;

COMMENT ON VIEW analytics.attribution_drift_by_interval IS
    'One row per drift run x feature: share of mean |SHAP| on live rows vs the reference profile.';
COMMENT ON COLUMN analytics.attribution_drift_by_interval.statistic_value IS
    'Total variation distance between the profiles (0..1: the share of attribution that moved); '
    'repeated on every feature row of the run.';
COMMENT ON COLUMN analytics.attribution_drift_by_interval.reference_share IS
    'Share of the feature in the mean |SHAP| of the reference rows (shares sum to 1).';
COMMENT ON COLUMN analytics.attribution_drift_by_interval.current_share IS
    'Share of the feature in the mean |SHAP| of the explained live rows.';
COMMENT ON COLUMN analytics.attribution_drift_by_interval.share_change IS 'current_share - reference_share.';

ALTER VIEW analytics.multivariate_drift_by_interval OWNER TO modelgate_writer;
ALTER VIEW analytics.attribution_drift_by_interval OWNER TO modelgate_writer;
REVOKE ALL ON analytics.multivariate_drift_by_interval, analytics.attribution_drift_by_interval
    FROM PUBLIC;
GRANT SELECT ON analytics.multivariate_drift_by_interval, analytics.attribution_drift_by_interval
    TO modelgate_analyst;
