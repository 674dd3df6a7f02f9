"""Which files of a folder or ``s3://`` prefix are data: the one listing every command uses.

``modelgate evaluate --data``, ``modelgate monitor set`` (its reference and the live and
label partitions it checks), the drift runs (reference, live and label partitions) and both
DAGs list a dataset through this module, so a folder that one of them reads is the folder
all of them read. The rules are Spark's and Hive's:

* a folder is searched recursively (``day=1/part-0.parquet`` is data);
* a file or folder whose name starts with ``_`` or ``.`` is not data (``_temporary/``,
  ``_SUCCESS``, ``.part-0.parquet.crc``, editors' and uploaders' temporary files), at any
  depth under the listed folder or prefix (:func:`hidden`);
* only ``*.parquet`` files are data;
* a link is followed (a linked folder once: no loops); a link that points nowhere is left
  out with a warning naming it, never in silence;
* files come sorted as strings, the order an ``s3://`` listing of the same files has.

Nothing here opens a file: the listing is names (and, for ``s3://``, sizes) only.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Protocol

from modelgate.logsafe import one_line

log = logging.getLogger(__name__)

PARQUET_SUFFIX = ".parquet"


class SizedLister(Protocol):
    """What this module needs of an object store: its keys under a prefix with their sizes."""

    def list_sizes(self, prefix: str) -> list[tuple[str, int]]: ...


def hidden(relative: str) -> bool:
    """Whether a file is left out of a dataset, as Spark and Hive leave it: some part of its
    path under the dataset starts with ``_`` or ``.`` (``_temporary/``, ``_SUCCESS``,
    ``.part-0.parquet.crc``, editors' and uploaders' temporary files).

    >>> hidden("day=1/part-0.parquet"), hidden("_temporary/0/part-0.parquet"), hidden(".x.parquet")
    (False, True, True)
    """
    return any(part.startswith(("_", ".")) for part in relative.split("/"))


def walk_parquet(path: Path) -> list[str]:
    """The data files under a local folder (the rules of this module), sorted; ``[]`` when
    the folder holds none or does not exist. A file given as ``path`` is itself.

    One walk of the folder (``os.scandir``); links that point nowhere are named in a warning.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("day=1/a.parquet", "_temporary/0/b.parquet", "_SUCCESS", ".a.parquet.crc"):
    ...     (d / name).parent.mkdir(parents=True, exist_ok=True); _ = (d / name).write_bytes(b"")
    >>> [pathlib.Path(p).relative_to(d).as_posix() for p in walk_parquet(d)]
    ['day=1/a.parquet']
    """
    if path.is_file():
        return [str(path)]
    if not path.is_dir():
        return []
    found: list[str] = []
    dangling: list[str] = []
    stack, seen = [path], {os.path.realpath(path)}
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.name.startswith(("_", ".")):
                    continue
                if entry.is_dir():
                    real = os.path.realpath(entry.path)
                    if real not in seen:  # a linked directory is walked once: no loops
                        seen.add(real)
                        stack.append(Path(entry.path))
                elif entry.is_file():
                    if entry.name.endswith(PARQUET_SUFFIX):
                        found.append(entry.path)
                elif entry.is_symlink():
                    dangling.append(Path(entry.path).relative_to(path).as_posix())
    if dangling:
        log.warning("dataset %s: %d link(s) point to nothing and are left out: %s",
                    one_line(str(path)), len(dangling), one_line(", ".join(sorted(dangling)[:20])))
    found.sort()
    return found


def s3_parquet(store: SizedLister, key: str) -> list[tuple[str, int]]:
    """``(key, bytes)`` of the data objects of an ``s3://`` key: the object itself when
    ``key`` names a ``*.parquet`` object, else the data objects under the prefix ``key/``
    (hidden parts judged below the prefix), sorted; ``[]`` when there are none."""
    if key.endswith(PARQUET_SUFFIX):
        size = dict(store.list_sizes(key)).get(key)
        if size is not None:
            return [(key, size)]
    prefix = key.rstrip("/") + "/" if key.strip("/") else ""
    return sorted((k, size) for k, size in store.list_sizes(prefix)
                  if k.endswith(PARQUET_SUFFIX) and not hidden(k[len(prefix):]))
