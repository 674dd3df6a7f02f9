"""Policy provenance of an evaluation run: what it stores about its policy, and the promotion
guard for looser ad-hoc policies.

A run's policy is the task's default, then the model's policy file, then an ad-hoc file
(``--policy``, the DAG's ``policy`` param). The run stores the merged policy's text, its
source (the topmost layer present), and its differences from the model's own policy (the
same layers without the ad-hoc file, :func:`modelgate.evaluation.policy_diff.diff_policies`).
Each attempt also stores the sha256 of every source and its differences from the policy of
the version's previous decided attempt (:mod:`.attempts`), so loosening the model's own file
between attempts is seen as well. Promoting under a policy looser than either on a blocking
check needs an explicit allowance (``--allow-looser-policy``, the DAG's
``allow_looser_policy`` param), checked when the run starts and again by the promote step,
and stored with the attempt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelgate.evaluation import Policy, PolicyChange, diff_policies, policy_text
from modelgate.pipelines.refusals import InputRefused
from modelgate.store.runs import PolicyProvenance

ALLOW_HINT = "--allow-looser-policy (DAG param allow_looser_policy)"


MODEL_OWN = "the model's own policy"


class LooserPolicyRefused(InputRefused):
    """Promotion was asked for under a policy looser than the model's own (or than the
    policy of the version's previous decided attempt, ``against``), without the explicit
    allowance; ``checks`` are the looser checks, as text."""

    def __init__(self, source_path: str, checks: list[str], against: str = MODEL_OWN) -> None:
        self.source_path, self.checks, self.against = source_path, checks, against
        super().__init__(f"policy {source_path} is looser than {against} on blocking "
                         f"checks: {'; '.join(checks)}; promoting under it needs {ALLOW_HINT}, "
                         "whose use is recorded with the run")

    def __reduce__(self) -> tuple[type[LooserPolicyRefused], tuple[str, list[str], str]]:
        return type(self), (self.source_path, self.checks, self.against)


def previous_name(previous: tuple[int, int] | None) -> str:
    """The previous decided attempt a policy was compared with, in words.

    >>> previous_name((12, 1))
    "the policy of the version's previous decided attempt (run 12 attempt 1)"
    """
    if previous is None:
        return "no previous attempt"
    return (f"the policy of the version's previous decided attempt (run {previous[0]} "
            f"attempt {previous[1]})")


def provenance(policy: Policy, own: Policy, *, ad_hoc: str | None, model_file: Path,
               default_file: Path, allow_looser: bool, sha256: str | None = None,
               previous: tuple[int, int] | None = None,
               changes: tuple[dict[str, Any], ...] = (),
               looser_than_previous: bool = False) -> PolicyProvenance:
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
    sha256 : str, optional
        The sha256 over every source of the policy.
    previous, changes, looser_than_previous
        The version's previous decided attempt (run id, attempt), the differences from its
        policy as records, and whether they loosen a blocking check
        (:func:`modelgate.pipelines.evaluation.attempts.changes_from_previous`).

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
                            [c.to_record() for c in diff.changes], diff.looser, allow_looser,
                            sha256, previous, changes, looser_than_previous)


def _loosening(records: Any) -> list[str]:
    changes = (PolicyChange(**record) for record in records)
    return [c.text() for c in changes if c.loosens_blocking]


def looser_checks(stored: PolicyProvenance) -> list[str]:
    """The stored changes that loosen a check the model's own policy blocks on, as text."""
    return _loosening(stored.diff)


def looser_than_previous_checks(stored: PolicyProvenance) -> list[str]:
    """The changes from the previous decided attempt's policy that loosen a check it blocked
    on, as text."""
    return _loosening(stored.changes)


def _against(stored: PolicyProvenance) -> tuple[str, list[str]]:
    """What the policy is looser than, in words, and the looser checks (no repeats)."""
    names, checks = [], []
    if stored.looser_than_model:
        names.append(MODEL_OWN)
        checks += looser_checks(stored)
    if stored.looser_than_previous:
        names.append(previous_name(stored.previous))
        checks += looser_than_previous_checks(stored)
    return " and ".join(names), list(dict.fromkeys(checks))


def check_promotion(stored: PolicyProvenance | None, *, promote: bool) -> None:
    """Refuse promotion under a looser policy without the explicit allowance.

    Raises
    ------
    LooserPolicyRefused
        Naming the looser checks and the flag that allows them.
    """
    if not promote or stored is None or not stored.looser or stored.looser_allowed:
        return
    against, checks = _against(stored)
    raise LooserPolicyRefused(stored.source_path, checks, against)


def policy_line(stored: PolicyProvenance | None) -> str:
    """One line on the run's policy, for the CLI's text output and the report header.

    >>> policy_line(PolicyProvenance("version: 1\\n", "model_file", "/p/churn.yaml", [], False, False))
    'policy: model_file /p/churn.yaml'
    """
    if stored is None:
        return "policy: not recorded"
    line = f"policy: {stored.source} {stored.source_path}"
    if stored.looser:
        against, checks = _against(stored)
        line += (f" (LOOSER than {against}: {'; '.join(checks)}; promotion "
                 f"{'explicitly allowed' if stored.looser_allowed else 'not allowed'})")
    return line


def policy_json(stored: PolicyProvenance | None) -> dict[str, Any] | None:
    """The run's policy provenance in the CLI's JSON (None when the run recorded none)."""
    if stored is None:
        return None
    return {"source": stored.source, "source_path": stored.source_path,
            "looser_than_model": stored.looser_than_model,
            "looser_policy_allowed": stored.looser_allowed, "differences": stored.diff,
            "sha256": stored.sha256,
            "previous_attempt": None if stored.previous is None else {
                "evaluation_run_id": stored.previous[0], "attempt": stored.previous[1]},
            "looser_than_previous": stored.looser_than_previous,
            "changes_from_previous": list(stored.changes)}


def report_fields(stored: PolicyProvenance | None) -> dict[str, str | None]:
    """The report header's ``policy`` and ``policy_looser`` fields
    (:class:`modelgate.reports.views.EvaluationReportView`)."""
    if stored is None:
        return {"policy": "not recorded", "policy_looser": None}
    looser = None
    if stored.looser:
        against, checks = _against(stored)
        looser = (f"Judged by {stored.source_path}, looser than {against} on: "
                  f"{'; '.join(checks)}. Promotion under it was "
                  f"{'explicitly allowed' if stored.looser_allowed else 'not allowed'}.")
    return {"policy": f"{stored.source} ({stored.source_path})", "policy_looser": looser}
