"""``make test`` on a machine with no PostgreSQL server: the tests start an embedded one.

A second pytest session runs the store's database tests with ``MODELGATE_TEST_PG=embedded``,
which makes ``tests/conftest.py`` take the path it takes when nothing answers on
127.0.0.1:5432: an embedded PostgreSQL (``pgserver``) on a private socket in a temporary
folder, removed when the session ends.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
def test_the_store_tests_pass_on_an_embedded_postgres() -> None:
    env = {**os.environ, "MODELGATE_TEST_PG": "embedded"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/store/test_db.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    used = re.search(r"modelgate test PostgreSQL: (\S+)", done.stdout)
    assert used is not None, done.stdout[-2000:]
    folder = re.search(r"host=(/\S*modelgate-test-pg-[^/]+)/pgdata", used.group(1))
    assert folder is not None, used.group(1)  # a socket in a private folder, not a TCP server
    assert not Path(folder.group(1)).exists()  # stopped and removed with the session
