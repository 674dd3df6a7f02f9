# The two commands a newcomer needs: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3.11
VENV := .venv
MOTO_VENV := .venv-moto
BIN := $(VENV)/bin
# `make ORT=gpu ...` installs onnxruntime-gpu for CUDA 13 instead of the CPU build (never both);
# `make ORT=gpu-cu12 ...` the CUDA 12 build.
ORT ?= cpu
# One stamp per ONNX Runtime build, so `make ORT=gpu ...` after a CPU install reinstalls.
STAMP := $(VENV)/.installed-$(strip $(ORT))

.PHONY: demo test test-fast venv moto-venv services lint bench mutation mutation-retest clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# another build was installed: remove it first, the CPU and GPU wheels share one module
	@if [ -n "$$(ls $(VENV)/.installed-* 2>/dev/null | grep -vx '$(STAMP)')" ]; then \
		$(BIN)/python -m pip uninstall --quiet -y onnxruntime onnxruntime-gpu; fi
	@rm -f $(VENV)/.installed-*
	$(BIN)/python -m pip install --quiet -e ".[$(strip $(ORT)),dev,demo]"
	@touch $(STAMP)

venv: $(STAMP)

# moto's S3 server lives in its own environment: it pins packages Airflow also uses.
$(MOTO_VENV)/bin/moto_server:
	@test -x $(MOTO_VENV)/bin/python || $(PYTHON) -m venv $(MOTO_VENV)
	$(MOTO_VENV)/bin/python -m pip install --quiet "moto[server]>=5,<6"

moto-venv: $(MOTO_VENV)/bin/moto_server

services:
	@.ci/ensure-postgres
	@.ci/ensure-chromium

demo: venv
	$(BIN)/modelgate demo

# Two pytest sessions: the fast tier spread over every core (tests/conftest.py), then the
# end-to-end tier in one process, whose schedulers and browsers should not compete for the
# cores. Both run (unless the first was interrupted: Ctrl-C or a collection error, pytest's exit
# code 2), and either failing fails the target; a tier that PYTEST_ARGS leaves empty (exit
# code 5) is not a failure unless both are.
test: venv moto-venv services lint
	@$(BIN)/python -m pytest -q -m "not e2e" $(PYTEST_ARGS); fast=$$?; \
	if [ $$fast -eq 2 ]; then exit 2; fi; \
	$(BIN)/python -m pytest -q -m e2e $(PYTEST_ARGS); e2e=$$?; \
	echo "make test: fast tier exit $$fast, end-to-end tier exit $$e2e"; \
	if [ $$fast -eq 5 ] && [ $$e2e -eq 5 ]; then exit 5; fi; \
	for rc in $$fast $$e2e; do [ $$rc -eq 0 ] || [ $$rc -eq 5 ] || exit $$rc; done

# The fast tier: everything but the end-to-end tests (browser, soak, DAG runs, demo).
test-fast: venv moto-venv lint
	@.ci/ensure-postgres
	$(BIN)/python -m pytest -q -m "not e2e" $(PYTEST_ARGS)

# DAG files are left out of mypy: TaskFlow turns typed task calls into XComArgs.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy modelgate drift fairness evaluation reports bench

bench: venv
	$(BIN)/python -m bench.run_all

# Mutation testing of one core module (not part of `make test`; minutes to an hour per module).
# It mutates a wheel-like copy under .modelgate/mutation/, never the checkout. See tests/MUTATION.md.
# `make mutation-retest MODULE=...` re-runs only the last session's survivors against the current tests.
MODULE ?= drift/data_drift.py
mutation: venv
	$(BIN)/python tests/support/mutation.py $(MODULE)

mutation-retest: venv
	$(BIN)/python tests/support/mutation.py --retest $(MODULE)

clean:
	rm -rf $(VENV) $(MOTO_VENV) .modelgate
