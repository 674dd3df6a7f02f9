"""Mutants of the drift threshold rule (one of which once passed every drift test) must fail them.

Each mutant is applied to a copy of the packages laid out as the installed wheel (the same
staging as ``tests/support/mutation.py``, put first on ``PYTHONPATH``, so the checkout is never
changed), and ``tests/drift`` is run against it in a fresh interpreter: it must report failing
tests (pytest's exit code 1, not a collection or usage error).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# The driver, tests/support/mutation.py, runs as a script too: imported by its own name.
sys.path.insert(0, str(Path(__file__).parent / "support"))
import mutation  # noqa: E402

# three fresh pytest runs of tests/drift (about 9 s each): the full tier
pytestmark = pytest.mark.e2e

MODULE = "drift/data_drift.py"
# (what the mutant drops, original line, mutated line)
MUTANTS = {
    "threshold-is-the-floor": (
        "    threshold = max(floor, relative * baseline, null)\n",
        "    threshold = floor\n",
    ),
    "no-size-aware-null": (
        "    threshold = max(floor, relative * baseline, null)\n",
        "    threshold = max(floor, relative * baseline)\n",
    ),
    "no-sample-size-rescaling": (
        "    return (1 / n + 1 / m) / (1 / halves[0] + 1 / halves[1])\n",
        "    return 1.0\n",
    ),
}


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree / "site"), "PYTHONDONTWRITEBYTECODE": "1",
           "MODELGATE_TEST_NO_BYTECODE": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("known-mutants")
    mutation.stage(tree)
    return tree


def test_the_staged_module_is_the_one_imported(staged: Path) -> None:
    done = _run(staged, "-c", "import modelgate.drift.data_drift as m; print(m.__file__)")
    assert Path(done.stdout.strip()) == staged / mutation.staged_path(MODULE)


@pytest.mark.parametrize("name", list(MUTANTS), ids=list(MUTANTS))
def test_tests_drift_fails_on_the_mutant(staged: Path, name: str) -> None:
    original, mutated = MUTANTS[name]
    target = staged / mutation.staged_path(MODULE)
    source = target.read_text()
    assert source.count(original) == 1, f"the line the {name} mutant changes has moved"
    target.write_text(source.replace(original, mutated))
    try:
        done = _run(staged, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-x",
                    "-q", "-m", "not e2e", "tests/drift")
    finally:
        target.write_text(source)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert " failed" in done.stdout.splitlines()[-1]
