-- Nobody but the owner creates anything in this database (issue #37 point 6).
--
-- PostgreSQL gives PUBLIC, and so every role that may connect, TEMPORARY on a new database:
-- an analyst could create temporary tables and, in schema pg_temp, functions. Migration 0004
-- took CREATE on schema public from PUBLIC; this takes CREATE (new schemas) and TEMPORARY on
-- the database from PUBLIC and from modelgate_analyst, and CREATE on both schemas from
-- modelgate_analyst, in case a deployment granted them by hand.
--
-- What stays: the database owner (who runs the migrations) keeps its own privileges, as the
-- owner of analytics modelgate_writer keeps CREATE there (it owns the views), and
-- modelgate_writer never used TEMPORARY (no statement of modelgate creates a temporary table).
-- The database's name differs per deployment (and per test session), hence EXECUTE format.
--
-- Advisory locks need no privilege and only a superuser could revoke pg_advisory_lock, so an
-- analyst can still take the migration lock; modelgate no longer takes it unless a migration
-- is pending, and then waits a bounded time (MODELGATE_MIGRATION_WAIT_S, modelgate/store/
-- migration_lock.py).

DO $$
BEGIN
    EXECUTE format('REVOKE CREATE, TEMPORARY ON DATABASE %I FROM PUBLIC, modelgate_analyst',
                   current_database());
END
$$;

REVOKE CREATE ON SCHEMA public FROM PUBLIC, modelgate_analyst;
REVOKE CREATE ON SCHEMA analytics FROM PUBLIC, modelgate_analyst;
