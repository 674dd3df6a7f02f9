"""Evaluation run keys: what makes two evaluation runs different.

A run key names the caller's key (the DAG run, or the CLI's data and policy hashes), the
candidate (name, version, archive sha256) and the comparison (the champion's version and
archive, none, or the candidate itself), so a later run of a promoted version never resets
the run its promotion rests on.
"""

from __future__ import annotations

from modelgate.pipelines.context import safe_key_part
from modelgate.store import models


def evaluation_run_key(base: str, row: models.ModelVersionRow,
                       champion: models.ModelVersionRow | None) -> str:
    """The run key: the caller's key, the model's name, version and archive sha256, and the
    comparison: ``vs-v<version>-<archive sha256>`` of the champion, ``vs-none`` without one,
    ``vs-self`` when the candidate is itself production (a re-run of the promoted version).

    The same ONNX bytes registered under two names or versions give two runs, never one, and
    a later run of a promoted version never shares the key of the run that promoted it.

    >>> row = models.ModelVersionRow(1, "churn", "2", "a" * 64, "b" * 64, "k", "u", {}, "candidate",
    ...                              False)
    >>> evaluation_run_key("cli__0123__default", row, None)
    'cli__0123__default__churn__v2__bbbbbbbbbbbb__vs-none'
    >>> champion = models.ModelVersionRow(0, "churn", "1", "c" * 64, "d" * 64, "k", "u", {},
    ...                                   "production", False)
    >>> evaluation_run_key("cli__0123__default", row, champion)[-28:]
    'bbbbbbbbbbbb__vs-v1-dddddddd'
    """
    if champion is None:
        versus = "vs-none"
    elif champion.model_version_id == row.model_version_id:
        versus = "vs-self"
    else:
        versus = f"vs-v{safe_key_part(champion.version)}-{champion.archive_sha256[:8]}"
    return f"{run_key_prefix(base, row.model_name, row.version)}{row.archive_sha256[:12]}__{versus}"


def run_key_prefix(base: str, model_name: str, version: str) -> str:
    """What every run key of ``model_name`` ``version`` under the caller's key ``base``
    starts with, whatever the archive and the comparison (:func:`evaluation_run_key`).

    >>> run_key_prefix("model_evaluation__manual__1", "churn", "2")
    'model_evaluation__manual__1__churn__v2__'
    """
    return f"{base}__{safe_key_part(model_name)}__v{safe_key_part(version)}__"
