-- Fairness by sensitive group, SHAP importance, calibration and the promotion gate's checks.

CREATE TABLE fairness_group (
    evaluation_run_id  bigint           NOT NULL,
    sensitive_feature  text             NOT NULL,
    group_label        text             NOT NULL,
    n                  bigint           NOT NULL,
    base_rate          double precision,
    selection_rate     double precision,
    tpr                double precision,
    fpr                double precision,
    ppv                double precision,
    fnr                double precision,
    is_small_group     boolean          NOT NULL,
    CONSTRAINT fairness_group_pkey PRIMARY KEY (evaluation_run_id, sensitive_feature, group_label),
    CONSTRAINT fairness_group_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE,
    CONSTRAINT fairness_group_n_check CHECK (n >= 0)
);

CREATE TABLE fairness_metric (
    evaluation_run_id  bigint           NOT NULL,
    sensitive_feature  text             NOT NULL,
    metric_name        text             NOT NULL,
    value              double precision,
    ci_lower           double precision,
    ci_upper           double precision,
    CONSTRAINT fairness_metric_pkey PRIMARY KEY (evaluation_run_id, sensitive_feature, metric_name),
    CONSTRAINT fairness_metric_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE
);

CREATE TABLE calibration_bin (
    evaluation_run_id  bigint           NOT NULL,
    bin_index          integer          NOT NULL,
    bin_lower          double precision NOT NULL,
    bin_upper          double precision NOT NULL,
    n                  bigint           NOT NULL,
    mean_predicted     double precision,
    observed_rate      double precision,
    CONSTRAINT calibration_bin_pkey PRIMARY KEY (evaluation_run_id, bin_index),
    CONSTRAINT calibration_bin_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE
);

CREATE TABLE shap_importance (
    evaluation_run_id  bigint           NOT NULL,
    feature            text             NOT NULL,
    importance_rank    integer          NOT NULL,
    mean_abs_shap      double precision NOT NULL,
    CONSTRAINT shap_importance_pkey PRIMARY KEY (evaluation_run_id, feature),
    CONSTRAINT shap_importance_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE,
    CONSTRAINT shap_importance_mean_abs_shap_check CHECK (mean_abs_shap >= 0)
);

CREATE TABLE shap_budget (
    evaluation_run_id     bigint  NOT NULL,
    algorithm             text    NOT NULL,
    rows_explained        integer NOT NULL,
    background_rows       integer NOT NULL,
    evaluations_per_row   bigint  NOT NULL,
    max_additivity_error  double precision NOT NULL,
    CONSTRAINT shap_budget_pkey PRIMARY KEY (evaluation_run_id),
    CONSTRAINT shap_budget_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE
);

CREATE TABLE gate_decision (
    evaluation_run_id  bigint      NOT NULL,
    passed             boolean     NOT NULL,
    summary            text        NOT NULL,
    policy_sha256      text        NOT NULL,
    had_champion       boolean     NOT NULL,
    decided_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gate_decision_pkey PRIMARY KEY (evaluation_run_id),
    CONSTRAINT gate_decision_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE
);

CREATE TABLE gate_check (
    evaluation_run_id  bigint           NOT NULL,
    check_id           text             NOT NULL,
    kind               text             NOT NULL,
    metric_name        text             NOT NULL,
    sensitive_feature  text,
    threshold_text     text             NOT NULL,
    observed           double precision,
    ci_lower           double precision,
    ci_upper           double precision,
    n                  bigint,
    verdict            text             NOT NULL,
    severity           text             NOT NULL,
    reason             text             NOT NULL,
    CONSTRAINT gate_check_pkey PRIMARY KEY (evaluation_run_id, check_id),
    CONSTRAINT gate_check_evaluation_run_id_fkey FOREIGN KEY (evaluation_run_id)
        REFERENCES evaluation_run (evaluation_run_id) ON DELETE CASCADE,
    CONSTRAINT gate_check_kind_check CHECK (kind IN ('value', 'change', 'fairness')),
    CONSTRAINT gate_check_verdict_check CHECK (verdict IN ('pass', 'fail', 'skipped')),
    CONSTRAINT gate_check_severity_check CHECK (severity IN ('block', 'warn'))
);
