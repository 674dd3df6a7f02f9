"""Every SQL statement lives in ``modelgate/store/``: no other module of the package (or DAG
file) holds SQL text, runs a cursor or imports the database driver.

Read from the source with ``ast``: string literals (f-string parts included) that look like
SQL statements, calls of ``execute``/``executemany``/``cursor``/``fetch*``, and imports of
``psycopg2`` or of ``modelgate.store.db.transaction``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from test_import_layers import FILES, REPO

SQL = re.compile(r"\b(SELECT\s+[\w*(]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                 r"CREATE\s+(TABLE|VIEW|INDEX)|ALTER\s+TABLE|DROP\s+TABLE)")
DB_CALLS = {"execute", "executemany", "cursor", "fetchone", "fetchall", "fetchmany"}


def sql_outside_store(path: Path) -> list[str]:
    """What in one source file looks like database access: ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            found.append(f"{node.lineno}: SQL text {node.value.strip()[:60]!r}")
        elif isinstance(node, ast.Attribute) and node.attr in DB_CALLS:
            found.append(f"{node.lineno}: .{node.attr}(...)")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names])
            found += [f"{node.lineno}: import {n}" for n in names
                      if n.split(".")[0] == "psycopg2" or n == "modelgate.store.db.transaction"]
    return found


OUTSIDE_STORE = sorted([*(p for m, p in FILES.items() if not m.startswith("modelgate.store")),
                        *(REPO / "dags").glob("*.py")])


@pytest.mark.parametrize("path", OUTSIDE_STORE, ids=lambda p: str(p.relative_to(REPO)))
def test_no_sql_outside_the_store(path: Path) -> None:
    assert sql_outside_store(path) == [], "move this into a named function in modelgate/store/"


def test_the_check_finds_sql_it_is_shown(tmp_path: Path) -> None:
    source = tmp_path / "leak.py"
    source.write_text(
        "from modelgate.store.db import transaction\n"
        "def f(url, name):\n"
        "    with transaction(url) as cur:\n"
        "        cur.execute(f\"SELECT status FROM drift_run WHERE name = '{name}'\")\n"
        "        return cur.fetchone()\n"
        "NOTE = 'select the model you want'  # prose, not SQL\n")
    assert sorted(sql_outside_store(source)) == [
        "1: import modelgate.store.db.transaction", "4: .execute(...)",
        "4: SQL text \"SELECT status FROM drift_run WHERE name = '\"", "5: .fetchone(...)"]
