"""Fixtures shared by the reliability tests: a policy directory with no per-model overrides, a
policy whose checks only warn, and the first rows of the demo's held-out set as a file.

Registered through ``pytest_plugins`` in ``tests/conftest.py``: a ``conftest.py`` here would
shadow ``tests/conftest.py`` for every test that does ``from conftest import ...``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from modelgate.config import Settings

# Every check only warns: a run's outcome is "passed" whatever the numbers, so tests using it
# are about evidence, not about the demo model's quality.
LENIENT_POLICY = """\
metrics:
  roc_auc:
    value: {lower: 0.0, severity: warn}
    change: {absolute: -1.0, severity: warn}
  log_loss:
    change: {relative: -100.0, severity: warn}
fairness:
  default:
    equalized_odds_difference: {upper: 1.0, severity: warn}
    demographic_parity_difference: {upper: 1.0, severity: warn}
"""


@pytest.fixture()
def env(settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """settings_env with no per-model policy overrides, so outcomes depend on the test only."""
    empty = tmp_path / "no-policies"
    empty.mkdir()
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(empty))
    return settings_env


@pytest.fixture()
def lenient(tmp_path: Path) -> Path:
    path = tmp_path / "lenient.yaml"
    path.write_text(LENIENT_POLICY)
    return path


@pytest.fixture()
def small_heldout(demo_builds: dict[str, Any], tmp_path: Path) -> Callable[[int], Path]:
    """Writes the first ``rows`` rows of demo version 1's held-out set to a parquet file."""
    def write(rows: int) -> Path:
        path = tmp_path / "heldout-small.parquet"
        pd.read_parquet(demo_builds["1"].heldout_path).iloc[:rows].to_parquet(path, index=False)
        return path
    return write
