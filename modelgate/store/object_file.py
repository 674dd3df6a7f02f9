"""An object of the store as a read-only, seekable file that fetches only the bytes read.

A parquet reader given one (:class:`pyarrow.parquet.ParquetFile`) reads the footer and then
only the column chunks of the row groups it is asked for, each a ranged read of the store
(:meth:`~modelgate.store.objects.ObjectStore.get_range`), never the whole object.
"""

from __future__ import annotations

import io
import os

from modelgate.store.objects import ObjectStore


class ObjectFile(io.RawIOBase):
    """``key`` of ``store`` as a file; counts the requests and bytes it fetched.

    >>> import pathlib, tempfile
    >>> from modelgate.store.objects import LocalObjectStore
    >>> store = LocalObjectStore(pathlib.Path(tempfile.mkdtemp()))
    >>> _ = store.put_bytes("a/b.bin", b"0123456789", content_type="application/octet-stream")
    >>> f = ObjectFile(store, "a/b.bin")
    >>> _ = f.seek(-3, os.SEEK_END)
    >>> f.read(), f.read(), f.requests, f.bytes_read
    (b'789', b'', 1, 3)
    """

    def __init__(self, store: ObjectStore, key: str) -> None:
        super().__init__()
        self._store, self.key = store, key
        self._size = store.size(key)
        self._pos = 0
        self.requests = 0
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError(f"cannot seek to {base + offset} in object {self.key!r}")
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        n = self._size - self._pos if size is None or size < 0 else min(size, self._size - self._pos)
        if n <= 0:
            return b""
        data = self._store.get_range(self.key, self._pos, n)
        self.requests += 1
        self.bytes_read += len(data)
        self._pos += len(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        return self.read(-1)
