#!/usr/bin/env bash
# Create isolated virtualenvs for the peer drift libraries used by bench/bench_drift.py (and
# NannyML for bench/bench_estimation_nannyml.py).
# Evidently and NannyML pin numpy/pandas/scipy versions that conflict with modelgate's .venv,
# so each gets its own venv (gitignored by the `.venv-*/` rule). Run from the repo root:
#   bash bench/setup_peers.sh            # both peers
#   bash bench/setup_peers.sh nannyml    # only the named peer(s)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
# Both peers still import pandas internals removed in pandas 3, and nannyml imports statsmodels
# without declaring it, hence the extra pins.
declare -A EXTRA=([evidently]="pandas<3" [nannyml]="pandas<3 statsmodels")
peers=("$@")
if [[ ${#peers[@]} -eq 0 ]]; then
    peers=(evidently nannyml)
fi
for peer in "${peers[@]}"; do
    if [[ -z "${EXTRA[$peer]+set}" ]]; then
        echo "setup_peers: unknown peer '${peer}' (expected evidently or nannyml)" >&2
        exit 2
    fi
    venv=".venv-${peer}"
    if [[ ! -x "${venv}/bin/python" ]]; then
        "${PY}" -m venv "${venv}"
    fi
    # shellcheck disable=SC2086
    "${venv}/bin/pip" install --quiet "${peer}" pyarrow psutil ${EXTRA[$peer]} \
        || echo "setup_peers: pip install ${peer} failed" >&2
    "${venv}/bin/python" -c "import ${peer}; print('${peer}', ${peer}.__version__)" \
        || echo "setup_peers: import ${peer} failed" >&2
done
