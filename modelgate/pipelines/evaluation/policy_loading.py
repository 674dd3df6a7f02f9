"""Which promotion policy a run applies (the task's default, the model's file, an ad-hoc
file), its hash, its provenance stored with the run, and the checked copy ``decide`` reads."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from modelgate.evaluation import (
    PolicyError,
    check_policy_for_task,
    default_policy,
    default_policy_path,
    load_policy,
    merge_policies,
    with_segment_columns,
)
from modelgate.pipelines.context import Context, safe_key_part
from modelgate.pipelines.evaluation import attempts, policy_provenance
from modelgate.pipelines.evaluation.run_refs import RunRef, get_pickle
from modelgate.resources import shipped_dir
from modelgate.store import runs

if TYPE_CHECKING:  # annotations only
    from modelgate.evaluation import Policy

log = logging.getLogger("modelgate.evaluate")


def record_policy(ctx: Context, ref: RunRef, policy: Any, policy_path: str | None,
                  model_name: str, task: str, *, promote: bool, allow_looser: bool,
                  sha256: str, model_version_id: int) -> None:
    """Store the attempt's policy provenance; refuse a promotion under a policy looser than
    the model's own or than the version's previous decided attempt's."""
    own = load_policy_for_run(None, model_name, task=task)[0] if policy_path else policy
    before = attempts.changes_from_previous(ctx, model_version_id, ref.evaluation_run_id, policy)
    stored = policy_provenance.provenance(
        policy, own, ad_hoc=policy_path, model_file=model_policy_path(model_name),
        default_file=default_policy_path(task), allow_looser=allow_looser, sha256=sha256,
        previous=before.previous, changes=before.changes, looser_than_previous=before.looser)
    runs.record_policy(ctx.db_url, ref.evaluation_run_id, stored)
    if stored.looser:
        log.warning("evaluation run %d: %s%s", ref.evaluation_run_id,
                    policy_provenance.policy_line(stored),
                    " (promotion under it allowed)" if allow_looser else "")
    policy_provenance.check_promotion(stored, promote=promote)


@dataclass(frozen=True, slots=True)
class CheckedPolicy:
    """The policy ``prepare`` checked (all layers merged) and the sha256 of its sources."""

    policy: Policy
    sha256: str


def policy_key(ref: RunRef) -> str:
    return f"{ref.prefix()}/policy.pkl"


def load_checked_policy(ctx: Context, ref: RunRef) -> CheckedPolicy:
    """The policy stored with the run by :func:`prepare`."""
    key = policy_key(ref)
    if not ctx.store.exists(key):
        raise LookupError(f"evaluation run {ref.evaluation_run_id} has no checked policy at {key!r}; "
                          "run its first step (prepare) again")
    checked: CheckedPolicy = get_pickle(ctx, key)
    return checked


def policy_dir() -> Path:
    """Where per-model policy overrides live: ``MODELGATE_POLICY_DIR``, else the ``policies/``
    shipped with modelgate (installed or in the checkout)."""


    return Path(os.environ.get("MODELGATE_POLICY_DIR") or shipped_dir("policies"))


def model_policy_path(model_name: str) -> Path:
    """The model's own policy file (it may not exist): ``<policy dir>/<model name>.yaml``."""
    return policy_dir() / f"{safe_key_part(model_name)}.yaml"


def load_policy_for_run(policy_path: str | None, model_name: str, *,
                        task: str = "binary_classification", segments: Sequence[str] = (),
                        segment_pairs: bool = False) -> tuple[Any, str]:
    """The task's default policy, then ``<policy dir>/<model name>.yaml``, then
    ``policy_path``, each merged over the previous one, then the segment columns given as a
    parameter (``evaluate --segments``, the DAG's ``segments`` and ``segment_pairs``:
    :func:`modelgate.evaluation.segment_policy.with_segment_columns`); returns the policy and
    a sha256 of all its sources.

    Each source enters the hash framed (:func:`_hash_policy_source`): ``default``,
    ``model_file``, ``ad_hoc``, then, when segment columns or pairs are given,
    ``segments_param`` (:func:`segments_param_source`), so attempts that differ only in
    them have different hashes. A run given none hashes as before the parameter existed.

    Raises
    ------
    PolicyError
        When a policy file is missing, unreadable or malformed, or the merged policy names a
        metric or gap the task does not report.
    """

    digest = hashlib.sha256()
    _hash_policy_source(digest, "default", default_policy_path(task).read_bytes())
    policy = default_policy(task)
    layers = [("model_file", model_policy_path(model_name))]
    if policy_path:
        if not Path(policy_path).is_file():  # a refusal (PolicyError): a retry finds no file either
            raise PolicyError(f"policy file {policy_path!r} does not exist")
        layers.append(("ad_hoc", Path(policy_path)))
    for role, path in layers:
        if path.is_file():
            try:
                _hash_policy_source(digest, role, path.read_bytes())
                layer = load_policy(path)
            except (OSError, UnicodeDecodeError) as exc:
                raise PolicyError(f"policy file {str(path)!r} cannot be read: {exc}") from exc
            policy = merge_policies(policy, layer)
            log.info("policy override %s applied", path)
    check_policy_for_task(policy, task)
    if segments or segment_pairs:
        _hash_policy_source(digest, "segments_param", segments_param_source(segments, segment_pairs))
        policy = replace(policy, segments=with_segment_columns(policy.segments, segments,
                                                               segment_pairs))
    return policy, digest.hexdigest()


def segments_param_source(segments: Sequence[str], pairs: bool) -> bytes:
    """The segment parameters as a policy source: JSON of the set of columns and ``pairs``.

    The columns are sorted and each kept once, as the run evaluates them
    (:func:`~modelgate.evaluation.segment_policy.with_segment_columns`): the same set in any
    order is the same source, and JSON keeps names apart that a joined string would not
    (``["a,b"]`` and ``["a", "b"]``).

    >>> segments_param_source(["region", "device", "region"], True)
    b'{"columns": ["device", "region"], "pairs": true}'
    """
    return json.dumps({"columns": sorted(set(segments)), "pairs": bool(pairs)}).encode()


def _hash_policy_source(digest: Any, role: str, content: bytes) -> None:
    """Add one policy source to the run's policy hash as ``role``, its length and its bytes:
    framed so the hash is injective (with plain concatenation, bytes moved from the model's
    file to the ad-hoc file, or a source present in another role, would hash alike)."""
    digest.update(f"{role}\n{len(content)}\n".encode())
    digest.update(content)
