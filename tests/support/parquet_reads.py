"""A spy on the parquet files a check opens and the row groups it reads; the real reader reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


class ParquetReads:
    """Files opened through :meth:`open` (by name, in order) and the ``(file, row group)``
    pairs read from them through ``ParquetFile.read_row_group``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[str] = []
        self.groups: list[tuple[str, int]] = []
        self._names: dict[int, str] = {}
        real = pq.ParquetFile.read_row_group

        def read_row_group(pf: pq.ParquetFile, i: int, *args: Any, **kwargs: Any) -> pa.Table:
            self.groups.append((self._names.get(id(pf), "?"), i))
            return real(pf, i, *args, **kwargs)

        monkeypatch.setattr(pq.ParquetFile, "read_row_group", read_row_group)

    def open(self, uri: str) -> pq.ParquetFile:
        pf = pq.ParquetFile(uri)
        self.opened.append(Path(uri).name)
        self._names[id(pf)] = Path(uri).name
        return pf
