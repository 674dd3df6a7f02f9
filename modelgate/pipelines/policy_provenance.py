"""Policy provenance of an evaluation run: what it stores about its policy, and the promotion
guard for looser ad-hoc policies.

A run's policy is the task's default, then the model's policy file, then an ad-hoc file
(``--policy``, the DAG's ``policy`` param). The run stores the merged policy's text, its
source (the topmost layer present), and its differences from the model's own policy (the
same layers without the ad-hoc file, :func:`modelgate.evaluation.policy_diff.diff_policies`).
Promoting under a policy looser than the model's own on a blocking check needs an explicit
allowance (``--allow-looser-policy``, the DAG's ``allow_looser_policy`` param), checked when
the run starts and again by the promote step, and stored with the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelgate.evaluation.policy import Policy
from modelgate.evaluation.policy_diff import PolicyChange, diff_policies
from modelgate.evaluation.policy_text import policy_text
from modelgate.store.runs import PolicyProvenance

ALLOW_HINT = "--allow-looser-policy (DAG param allow_looser_policy)"


class LooserPolicyRefused(ValueError):
    """Promotion was asked for under a policy looser than the model's own, without the
    explicit allowance; ``checks`` are the looser checks, as text."""

    def __init__(self, source_path: str, checks: list[str]) -> None:
        self.source_path, self.checks = source_path, checks
        super().__init__(f"policy {source_path} is looser than the model's own on blocking "
                         f"checks: {'; '.join(checks)}; promoting under it needs {ALLOW_HINT}, "
                         "whose use is recorded with the run")

    def __reduce__(self) -> tuple[type[LooserPolicyRefused], tuple[str, list[str]]]:
        return type(self), (self.source_path, self.checks)


def provenance(policy: Policy, own: Policy, *, ad_hoc: str | None, model_file: Path,
               default_file: Path, allow_looser: bool) -> PolicyProvenance:
    """What the run stores about its policy.

    Parameters
    ----------
    policy : Policy
        The run's merged policy.
    own : Policy
        The model's own policy: the same layers without the ad-hoc file.
    ad_hoc : str or None
        The ad-hoc policy file, if one was given.
    model_file, default_file : Path
        The model's policy file (it may not exist) and the task's default policy.
    allow_looser : bool
        Whether promotion under a looser policy was explicitly allowed.

    Returns
    -------
    PolicyProvenance
    """
    if ad_hoc:
        source, path = "ad_hoc", Path(ad_hoc).resolve()
    elif model_file.is_file():
        source, path = "model_file", model_file.resolve()
    else:
        source, path = "task_default", default_file.resolve()
    diff = diff_policies(policy, own)
    return PolicyProvenance(policy_text(policy), source, str(path),
                            [c.to_record() for c in diff.changes], diff.looser, allow_looser)


def looser_checks(stored: PolicyProvenance) -> list[str]:
    """The stored changes that loosen a check the model's own policy blocks on, as text."""
    changes = (PolicyChange(**record) for record in stored.diff)
    return [c.text() for c in changes if c.loosens_blocking]


def check_promotion(stored: PolicyProvenance | None, *, promote: bool) -> None:
    """Refuse promotion under a looser policy without the explicit allowance.

    Raises
    ------
    LooserPolicyRefused
        Naming the looser checks and the flag that allows them.
    """
    if not promote or stored is None or not stored.looser_than_model or stored.looser_allowed:
        return
    raise LooserPolicyRefused(stored.source_path, looser_checks(stored))


def policy_line(stored: PolicyProvenance | None) -> str:
    """One line on the run's policy, for the CLI's text output and the report header.

    >>> policy_line(PolicyProvenance("version: 1\\n", "model_file", "/p/churn.yaml", [], False, False))
    'policy: model_file /p/churn.yaml'
    """
    if stored is None:
        return "policy: not recorded"
    line = f"policy: {stored.source} {stored.source_path}"
    if stored.looser_than_model:
        line += (f" (LOOSER than the model's own: {'; '.join(looser_checks(stored))}; promotion "
                 f"{'explicitly allowed' if stored.looser_allowed else 'not allowed'})")
    return line


def policy_json(stored: PolicyProvenance | None) -> dict[str, Any] | None:
    """The run's policy provenance in the CLI's JSON (None when the run recorded none)."""
    if stored is None:
        return None
    return {"source": stored.source, "source_path": stored.source_path,
            "looser_than_model": stored.looser_than_model,
            "looser_policy_allowed": stored.looser_allowed, "differences": stored.diff}


def report_fields(stored: PolicyProvenance | None) -> dict[str, str | None]:
    """The report header's ``policy`` and ``policy_looser`` fields
    (:class:`modelgate.reports.views.EvaluationReportView`)."""
    if stored is None:
        return {"policy": "not recorded", "policy_looser": None}
    looser = None
    if stored.looser_than_model:
        looser = (f"Judged by {stored.source_path}, looser than the model's own policy on: "
                  f"{'; '.join(looser_checks(stored))}. Promotion under it was "
                  f"{'explicitly allowed' if stored.looser_allowed else 'not allowed'}.")
    return {"policy": f"{stored.source} ({stored.source_path})", "policy_looser": looser}
