#!/usr/bin/env bash
# One-shot setup run by the `airflow-init` service before any other Airflow service starts.
# Every step is idempotent, so `docker compose up` may run it on every start.
#
# 0. Stop when .env still holds docker/.env.example's change-me placeholders.
# 1. Airflow's metadata database: `airflow db migrate`.
# 2. The UI's admin user. Airflow 3's simple auth manager takes its users from
#    AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS and their passwords from the JSON file
#    AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE (a volume shared with the
#    api-server). Writing it here from .env replaces the random password the api-server
#    would otherwise generate and print to its log.
# 3. modelgate's results store: `modelgate db upgrade` applies the SQL migrations, as the
#    owner role given by MODELGATE_DATABASE_URL (the tasks use a role without DDL rights).
set -euo pipefail

: "${AIRFLOW_ADMIN_USER:?}" "${AIRFLOW_ADMIN_PASSWORD:?}"
: "${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE:?}" "${MODELGATE_DATABASE_URL:?}"

# Refuse the placeholders of docker/.env.example (names only: values are never printed).
placeholders=()
for name in $(compgen -e); do
    if [[ "${!name}" == *change-me* ]]; then placeholders+=("${name}"); fi
done
if (( ${#placeholders[@]} )); then
    echo "airflow-init: replace the change-me placeholders in .env (seen in: ${placeholders[*]})" >&2
    exit 1
fi

airflow db migrate

python - <<'PY'
import json
import os
from pathlib import Path

path = Path(os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
path.parent.mkdir(parents=True, exist_ok=True)
tmp = path.with_name(path.name + ".tmp")
fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.fchmod(fd, 0o600)  # also when a leftover tmp file had other permissions
with os.fdopen(fd, "w") as handle:
    json.dump({os.environ["AIRFLOW_ADMIN_USER"]: os.environ["AIRFLOW_ADMIN_PASSWORD"]}, handle)
tmp.replace(path)
print(f"simple auth manager: password of {os.environ['AIRFLOW_ADMIN_USER']!r} set from .env")
PY

modelgate db upgrade
