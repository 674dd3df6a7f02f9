"""Retention of ``runs/`` intermediates: what ``modelgate gc`` deletes.

An evaluation leaves intermediates under ``runs/evaluation/<run key>/`` (pickled step
results, each partition's scores) that its later steps and the CLI's summary read; a drift
run under ``runs/drift/<model>/<version>/<interval start>/`` (feature and concept pickles,
the scored sample). Once the run has ended (passed, blocked, failed or abandoned; for drift,
every run of that interval) for longer than the retention, nothing reads them: a re-run
writes its own. A drift interval's scored sample stays while ``scored_interval.scores_key``
points to it, since late labels are joined to it. The rule: delete the objects of such runs, except any
object a stored row points to (a ``*_key`` or ``*_uri`` column holding its key or URI, or a
folder above it, such as ``evaluation_run.scores_uri``). Runs still ``running`` and folders
with no run row are left alone. Reports (``reports/``) and archives (``models/``) are never
under ``runs/``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from dataclasses import dataclass

from modelgate.pipelines.context import Context, safe_key_part
from modelgate.store import drift_runs, runs

log = logging.getLogger("modelgate.retention")

EVALUATION_PREFIX = "runs/evaluation/"
DRIFT_PREFIX = "runs/drift/"


@dataclass(frozen=True, slots=True)
class Collected:
    """What one collection did: runs whose objects were looked at, objects deleted and kept."""

    runs: int
    deleted: int
    kept_referenced: int
    dry_run: bool

    def to_record(self) -> dict[str, int | bool]:
        return {"runs": self.runs, "deleted": self.deleted, "kept_referenced": self.kept_referenced,
                "dry_run": self.dry_run}


def _referenced(key: str, references: set[str], uri_of: str) -> bool:
    """Whether ``key`` or a folder above it is held by a stored row, as a key or as a URI."""
    parts = key.split("/")
    candidates = {"/".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return any(c in references or f"{uri_of}{c}" in references for c in candidates)


def collect_runs(ctx: Context, *, retention: dt.timedelta, dry_run: bool = False) -> Collected:
    """Delete the ``runs/`` intermediates of evaluation and drift runs that ended more than
    ``retention`` ago, keeping every object a stored row points to (see the module doc).

    One listing of each of ``runs/evaluation/`` and ``runs/drift/``, and one delete request per
    1000 objects (S3).
    """
    if retention < dt.timedelta(0):
        raise ValueError(f"retention must not be negative; got {retention!r}")
    ended = {f"{EVALUATION_PREFIX}{safe_key_part(k)}"
             for k in runs.ended_run_keys(ctx.db_url, ended_before=retention)}
    # the folder DriftRef.prefix() names; an interval start written another way is kept
    ended |= {f"{DRIFT_PREFIX}{safe_key_part(m)}/{safe_key_part(v)}/{safe_key_part(s.isoformat())}"
              for m, v, s in drift_runs.ended_intervals(ctx.db_url, ended_before=retention)}
    by_run: dict[str, list[str]] = defaultdict(list)
    for prefix, depth in ((EVALUATION_PREFIX, 1), (DRIFT_PREFIX, 3)):
        for key in ctx.store.list_keys(prefix):
            parts = key[len(prefix):].split("/")
            by_run[prefix + "/".join(parts[:depth])].append(key)
    references = runs.stored_object_references(ctx.db_url)
    uri_of = ctx.store.uri("k")[:-1]  # what a key's URI starts with
    doomed, kept, looked = [], 0, 0
    for run_folder, keys in by_run.items():
        if run_folder not in ended:
            continue
        looked += 1
        for key in keys:
            if _referenced(key, references, uri_of):
                kept += 1
            else:
                doomed.append(key)
    if doomed and not dry_run:
        ctx.store.delete_keys(doomed)
    log.info("runs/ retention (%s): %s %d object(s) of %d ended run(s), kept %d a stored row "
             "points to", retention, "would delete" if dry_run else "deleted", len(doomed), looked, kept)
    return Collected(looked, len(doomed), kept, dry_run)
