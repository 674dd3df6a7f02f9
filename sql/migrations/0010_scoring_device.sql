-- Why a run scored on its execution provider, and whether CUDA could round to TF32 (issue #13).
-- Both NULL on runs recorded before this migration: those did not say.
ALTER TABLE evaluation_run
    ADD COLUMN provider_reason text,
    ADD COLUMN tf32_allowed    boolean,
    ADD CONSTRAINT evaluation_run_tf32_allowed_check
        CHECK (tf32_allowed IS NOT TRUE OR provider = 'CUDAExecutionProvider');

ALTER TABLE drift_run
    ADD COLUMN provider_reason text,
    ADD COLUMN tf32_allowed    boolean,
    ADD CONSTRAINT drift_run_tf32_allowed_check
        CHECK (tf32_allowed IS NOT TRUE OR provider = 'CUDAExecutionProvider');

COMMENT ON COLUMN evaluation_run.provider_reason IS
    'Why provider scored the data, e.g. "auto: CPU, 97% of the graph is in operators CUDA lacks".';
COMMENT ON COLUMN evaluation_run.tf32_allowed IS
    'True when CUDA was allowed TF32 matrix products (scores then differ from the CPU''s by about 1e-3); false otherwise.';
COMMENT ON COLUMN drift_run.provider_reason IS
    'Why provider scored the live sample (see evaluation_run.provider_reason).';
COMMENT ON COLUMN drift_run.tf32_allowed IS
    'True when CUDA was allowed TF32 matrix products; false otherwise.';
