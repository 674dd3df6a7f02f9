-- Retiring a candidate that will never be promoted (issue #23): an evaluation that failed on a
-- wrong manifest, or a version superseded before it was judged, used to stay 'candidate'
-- forever. `modelgate model retire` records who retired it, when and why; nothing is deleted
-- (model_version is append-only, migration 0005). A retired version is never promoted: promotion
-- takes candidates only. Depends only on 0001-0005.

ALTER TABLE model_version
    ADD COLUMN retired_at     timestamptz,
    ADD COLUMN retired_by     text,
    ADD COLUMN retired_reason text;
ALTER TABLE model_version DROP CONSTRAINT model_version_stage_check;
ALTER TABLE model_version ADD CONSTRAINT model_version_stage_check
    CHECK (stage IN ('candidate', 'production', 'archived', 'rejected', 'retired'));
-- a retired row says who, when and why; no other row carries any of the three
ALTER TABLE model_version ADD CONSTRAINT model_version_retired_check
    CHECK (CASE WHEN stage = 'retired'
                THEN num_nulls(retired_at, retired_by, retired_reason) = 0
                     AND btrim(retired_by) <> '' AND btrim(retired_reason) <> ''
                ELSE num_nulls(retired_at, retired_by, retired_reason) = 3 END);

COMMENT ON COLUMN model_version.retired_at IS 'When the version was retired (stage retired); NULL otherwise.';
COMMENT ON COLUMN model_version.retired_by IS 'Who retired it (modelgate model retire --by, default the OS user).';
COMMENT ON COLUMN model_version.retired_reason IS 'Why it was retired, in the words of whoever retired it.';

-- Retirement is final and its record is kept as written.
CREATE FUNCTION model_version_retired_is_final() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.stage = 'retired'
       AND (NEW.stage, NEW.retired_at, NEW.retired_by, NEW.retired_reason)
           IS DISTINCT FROM (OLD.stage, OLD.retired_at, OLD.retired_by, OLD.retired_reason)
    THEN
        RAISE EXCEPTION 'model_version % v% is retired; its stage and retirement record do not change',
            OLD.model_name, OLD.version USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER model_version_retired_is_final_trigger
    BEFORE UPDATE ON model_version
    FOR EACH ROW EXECUTE FUNCTION model_version_retired_is_final();

-- ---------------------------------------------------------------------------------------
-- Analyst view: the new columns go at the end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW analytics.model_versions AS
SELECT mv.model_version_id, mv.model_name, mv.version, mv.sha256, mv.stage, mv.is_drifting,
       mv.registered_at, mv.stage_changed_at, mv.retired_at, mv.retired_by, mv.retired_reason
FROM model_version mv;

COMMENT ON COLUMN analytics.model_versions.stage IS
    'candidate | production | archived | rejected | retired (a candidate that will never be '
    'promoted; see retired_*); at most one production version per model_name.';
COMMENT ON COLUMN analytics.model_versions.retired_at IS 'When the version was retired; NULL unless stage = retired.';
COMMENT ON COLUMN analytics.model_versions.retired_by IS 'Who retired the version.';
COMMENT ON COLUMN analytics.model_versions.retired_reason IS 'Why the version was retired.';
