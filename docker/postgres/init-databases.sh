#!/usr/bin/env bash
# Creates the two databases and their login roles. The postgres image runs this once, on the
# first start with an empty data volume (it is mounted into /docker-entrypoint-initdb.d);
# passwords changed in .env later must be changed in the database too (ALTER ROLE).
#
#   airflow          Airflow's metadata database, owned by login role `airflow`.
#   modelgate        modelgate's results store, owned by login role `modelgate_owner`, which
#                    runs the migrations (`modelgate db upgrade` in airflow-init).
#
# The tasks connect as `modelgate_app`, a member of `modelgate_writer`: it reads and writes
# rows but cannot change the schema. Migration 0004 grants `modelgate_writer` its table
# privileges and hands it the analytics views; those two NOLOGIN groups (and
# `modelgate_analyst`) are created here so that the migrating role can be a member of
# `modelgate_writer` (needed to give the views to it) without being a superuser.
# Analysts get their own LOGIN roles, members of `modelgate_analyst`.
#
# Passwords reach psql as variables (:'name' quotes them as SQL literals), never as text
# in this file or in a command line.
set -euo pipefail

: "${AIRFLOW_DB_PASSWORD:?}" "${RESULTS_DB_OWNER_PASSWORD:?}" "${RESULTS_DB_APP_PASSWORD:?}"

psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER}" --dbname postgres \
    -v airflow_password="${AIRFLOW_DB_PASSWORD}" \
    -v owner_password="${RESULTS_DB_OWNER_PASSWORD}" \
    -v app_password="${RESULTS_DB_APP_PASSWORD}" <<'SQL'
CREATE ROLE airflow LOGIN PASSWORD :'airflow_password';
CREATE DATABASE airflow OWNER airflow;
REVOKE ALL ON DATABASE airflow FROM PUBLIC;
GRANT CONNECT ON DATABASE airflow TO airflow;

CREATE ROLE modelgate_writer NOLOGIN;
CREATE ROLE modelgate_analyst NOLOGIN;
CREATE ROLE modelgate_owner LOGIN PASSWORD :'owner_password' IN ROLE modelgate_writer;
CREATE ROLE modelgate_app LOGIN PASSWORD :'app_password' IN ROLE modelgate_writer;
CREATE DATABASE modelgate OWNER modelgate_owner;
REVOKE ALL ON DATABASE modelgate FROM PUBLIC;
GRANT CONNECT ON DATABASE modelgate TO modelgate_writer, modelgate_analyst;
SQL
