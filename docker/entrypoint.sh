#!/usr/bin/env bash
# Entrypoint of the modelgate images, compatible with the official Airflow image's commands:
#
#   <image> api-server | scheduler | dag-processor | triggerer | celery worker | db migrate ...
#       runs `airflow <args>` (so `celery worker` is `airflow celery worker`);
#   <image> bash | sh | python | python3 | airflow | modelgate | /some/path ...
#       runs the program as given.
#
# tini (PID 1, see the Dockerfiles) forwards signals, so `exec` keeps Celery's warm
# shutdown on SIGTERM working.
set -euo pipefail

if [[ $# -eq 0 ]]; then
    set -- --help
fi

case "$1" in
    bash | sh | python | python3 | airflow | modelgate | /*)
        exec "$@"
        ;;
    *)
        exec airflow "$@"
        ;;
esac
