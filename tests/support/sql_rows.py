"""One SQL statement against a results database, in a transaction of its own: the rows it
returns (none for a statement that returns none, e.g. an UPDATE a trigger may refuse)."""

from __future__ import annotations

from typing import Any

from modelgate.store.db import transaction


def sql_rows(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with transaction(url) as cur:
        cur.execute(sql, args)
        return [] if cur.description is None else list(cur.fetchall())
