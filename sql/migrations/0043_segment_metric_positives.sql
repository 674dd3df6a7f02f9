-- Segments of multiclass and regression models (issue #43): segment_metric.positives, the
-- segment's label positives, is a binary model's count only; the other tasks' rows store NULL.
-- Depends only on 0039.

ALTER TABLE segment_metric ALTER COLUMN positives DROP NOT NULL,
    DROP CONSTRAINT segment_metric_n_check,
    ADD CONSTRAINT segment_metric_n_check
        CHECK (n >= 0 AND (positives IS NULL OR positives BETWEEN 0 AND n));

COMMENT ON COLUMN segment_metric.positives IS
    'Rows of the segment labelled positive (binary classification); NULL for multiclass and regression models.';
