# syntax=docker/dockerfile:1
# modelgate on Apache Airflow 3.3 -- CPU image (ONNX Runtime's CPU wheel, extra `cpu`).
#
#   docker build -t modelgate:cpu .
#   docker run --rm modelgate:cpu version           # = airflow version
#   docker run --rm modelgate:cpu modelgate --help  # other programs run as given
#
# The commands are the official Airflow image's: api-server, scheduler, dag-processor,
# triggerer, `celery worker` (see docker/entrypoint.sh). docker-compose.yml runs them all.
# Dockerfile.gpu is the same on a CUDA base with the `gpu` extra instead: an image gets
# exactly one of the two, because onnxruntime and onnxruntime-gpu install the same
# `onnxruntime` module and the one installed last silently replaces the other.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

# Airflow's Celery executor and its Redis broker client. Not in pyproject.toml: the package
# runs without Celery (embedded demo, LocalExecutor); only this deployment needs them.
ARG CELERY_REQUIREMENTS="apache-airflow-providers-celery>=3.26,<4 redis"

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    AIRFLOW_HOME=/opt/airflow \
    MODELGATE_HOME=/opt/airflow/modelgate \
    MODELGATE_POLICY_DIR=/opt/airflow/policies

# tini: PID 1 that forwards signals (Celery's warm shutdown) and reaps children.
# curl: the compose healthchecks of the api-server and the scheduler.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini curl ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/modelgate-src

# Dependencies first, in their own layer: editing modelgate's code does not reinstall them.
COPY pyproject.toml ./
COPY docker/pyproject_requirements.py /usr/local/lib/modelgate-build/
RUN python /usr/local/lib/modelgate-build/pyproject_requirements.py pyproject.toml cpu \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt ${CELERY_REQUIREMENTS} \
    && rm /tmp/requirements.txt

# README.m[d] is copied when it exists (pyproject names it as the long description); the
# glob needs pyproject.toml beside it, as COPY refuses a source list that matches nothing.
COPY pyproject.toml README.m[d] ./
COPY modelgate/ modelgate/
COPY drift/ drift/
COPY fairness/ fairness/
COPY evaluation/ evaluation/
COPY reports/ reports/
COPY sql/ sql/
# Per-model promotion policy overrides (policies/<model>.yaml), found via MODELGATE_POLICY_DIR.
COPY policies/ /opt/airflow/policies/
COPY docker/check_image.py /usr/local/lib/modelgate-build/
# The SQL migrations are not package data: modelgate.store.db looks for them at its
# MIGRATIONS_DIR, so they are copied there; check_image.py then loads them, and fails the
# build if the image holds the wrong ONNX Runtime, or both.
RUN pip install ".[cpu]" ${CELERY_REQUIREMENTS} \
    && migrations="$(python -c 'from modelgate.store.db import MIGRATIONS_DIR; print(MIGRATIONS_DIR)')" \
    && mkdir -p "${migrations}" \
    && cp sql/migrations/*.sql "${migrations}/" \
    && python /usr/local/lib/modelgate-build/check_image.py cpu

# Non-root user with the official Airflow image's uid and group 0, so files in shared
# volumes have the same owner whichever image (CPU or GPU) wrote them.
RUN useradd --uid 50000 --gid 0 --home-dir /opt/airflow --no-create-home --shell /bin/bash airflow \
    && mkdir -p /opt/airflow/dags /opt/airflow/logs /opt/airflow/auth "${MODELGATE_HOME}" \
    && chown -R airflow:0 /opt/airflow \
    && chmod -R g+rwX /opt/airflow
COPY --chown=airflow:0 dags/ /opt/airflow/dags/
COPY --chmod=0755 docker/entrypoint.sh /usr/local/bin/modelgate-entrypoint

USER airflow
WORKDIR /opt/airflow
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/modelgate-entrypoint"]
CMD ["--help"]
