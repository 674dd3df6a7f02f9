"""One check of the promotion gate: its verdict, the evidence behind it, and its stored row.

:class:`GateCheck` is what :func:`~.gate.decide` returns per threshold (value, change,
fairness) and :func:`~.segment_gate.segment_checks` per segment threshold; both import
it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from modelgate.records import finite_or_none

from .policy_fields import Basis, Severity

__all__ = ["NO_FAIRNESS_CHECK", "CheckKind", "Effect", "GateCheck", "Verdict", "bounds_text"]

#: The metric of the warning that a reported sensitive feature has no fairness threshold.
NO_FAIRNESS_CHECK = "no_fairness_check"

Verdict = Literal["pass", "breach", "inconclusive", "fail", "skipped"]
CheckKind = Literal["value", "change", "fairness", "segment"]
Effect = Literal["block", "warn", "none"]


@dataclass(frozen=True, slots=True)
class GateCheck:
    """The outcome of one threshold, with the evidence behind it.

    Attributes
    ----------
    check_id : str
        Stable id: ``value:<metric>``, ``change:<metric>:absolute|relative``,
        ``fairness:<feature>:<metric>`` (feature ``*`` when no report was supplied),
        ``segment:<metric>:limit|margin`` (:mod:`.segment_gate`).
    kind : {"value", "change", "fairness", "segment"}
    metric : str
    sensitive_feature : str or None
        For fairness checks.
    lower, upper : float or None
        The limits ``observed`` was held to (``observed >= lower``, ``observed <= upper``),
        in its units: a change check's are on the change (relative for ``relative``), in
        the sign of candidate - champion; None where there is no such limit.
    observed : float or None
        The point value compared (the delta, or relative delta, for change checks); None
        when missing.
    ci_lower, ci_upper : float or None
        Its bootstrap interval, when known.
    n : int or None
        Rows behind the estimate.
    basis : {"point_estimate", "interval"}
        What was judged: the point alone, or the whole interval.
    verdict : {"pass", "breach", "inconclusive", "fail", "skipped"}
        ``fail``: the number is missing or undefined, or the basis needs an interval and
        there is none.
    severity : {"block", "warn"}
        The threshold's severity.
    reason : str
        One sentence for a human reader.
    on_inconclusive : {"block", "warn"}
        What an ``inconclusive`` verdict does when ``severity`` is ``block``.
    min_group_positives, min_group_negatives : int or None
        Fairness checks of a classifier: the fewest label positives and negatives of any
        group taking part in the gap; None otherwise.
    required_positives, required_negatives : int or None
        The policy's minimums the verdict applied to those counts (interval basis, gaps
        whose rates divide by them); None where none applied.
    rows_to_decide, group_positives_to_decide, group_negatives_to_decide : int or None
        ``inconclusive`` checks: about how many more rows (and, for a classifier's fairness
        gap, label positives and negatives in the group with the fewest) would make the
        interval clear the limit at the observed effect (:mod:`.sample_size`); None otherwise
        and when the point equals the limit (the reason says so).
    rows_to_decide_if_equal : int or None
        ``inconclusive`` fairness gaps whose interval holds 0: about how many more rows would
        show the gap below its limit if the groups' rates were equal (:mod:`.sample_size`);
        None otherwise.
    group_positives_to_decide_if_equal, group_negatives_to_decide_if_equal : int or None
        The same projection for the group with the fewest label positives and negatives.
    """

    check_id: str
    kind: CheckKind
    metric: str
    sensitive_feature: str | None
    lower: float | None
    upper: float | None
    observed: float | None
    ci_lower: float | None
    ci_upper: float | None
    n: int | None
    basis: Basis
    verdict: Verdict
    severity: Severity
    reason: str
    on_inconclusive: Severity = "block"
    min_group_positives: int | None = None
    min_group_negatives: int | None = None
    required_positives: int | None = None
    required_negatives: int | None = None
    rows_to_decide: int | None = None
    group_positives_to_decide: int | None = None
    group_negatives_to_decide: int | None = None
    rows_to_decide_if_equal: int | None = None
    group_positives_to_decide_if_equal: int | None = None
    group_negatives_to_decide_if_equal: int | None = None

    @property
    def effect(self) -> Effect:
        """What the check does to the decision: ``block``, ``warn`` or ``none``.

        >>> check = GateCheck("value:f1", "value", "f1", None, 0.8, None, 0.81, 0.78, 0.84, 228,
        ...                   "interval", "inconclusive", "block", "", on_inconclusive="warn")
        >>> check.effect, check.status
        ('warn', 'inconclusive at n = 228')
        """
        if self.verdict in ("pass", "skipped"):
            return "none"
        if self.verdict == "inconclusive" and self.on_inconclusive == "warn":
            return "warn"
        return self.severity

    @property
    def status(self) -> str:
        """The verdict in words: ``breached``, ``inconclusive at n = <n>``, ``not computable``,
        ``passed`` or ``skipped``."""
        if self.verdict == "inconclusive":
            return f"inconclusive at n = {self.n}"
        if self.metric == NO_FAIRNESS_CHECK:
            return "not checked"
        return {"breach": "breached", "fail": "not computable", "pass": "passed"}.get(
            self.verdict, str(self.verdict))

    @property
    def threshold(self) -> str:
        """The limits in words, as stored in ``gate_check.threshold_text`` and reported.

        >>> check = GateCheck("change:log_loss:relative", "change", "log_loss", None, None, 0.02,
        ...                   None, None, None, None, "point_estimate", "skipped", "warn", "")
        >>> check.threshold
        'relative change <= +0.02 (lower is better)'
        """
        if self.kind == "change":
            mode = self.check_id.rsplit(":", 1)[1]
            if self.lower is not None:
                return f"{mode} change >= {self.lower:+g} (higher is better)"
            return f"{mode} change <= {self.upper:+g} (lower is better)"
        return bounds_text(self.lower, self.upper)

    def to_record(self) -> dict[str, Any]:
        """The check as a ``gate_check`` row (the caller adds the run), with its limits.

        Returns
        -------
        dict
            The stored columns ``check_id``, ``kind``, ``metric_name``, ``sensitive_feature``,
            ``threshold_text`` (:attr:`threshold`), ``observed``, ``ci_lower``, ``ci_upper``,
            ``n``, ``verdict``, ``severity``, ``reason``, ``basis``, ``on_inconclusive``,
            ``effect``, ``min_group_positives``, ``min_group_negatives``,
            ``required_positives``, ``required_negatives``, ``rows_to_decide``,
            ``group_positives_to_decide``, ``group_negatives_to_decide``,
            ``rows_to_decide_if_equal``, ``group_positives_to_decide_if_equal`` and
            ``group_negatives_to_decide_if_equal``, then ``lower`` and ``upper``;
            numbers None where missing or not finite.

        Examples
        --------
        >>> check = GateCheck("value:recall", "value", "recall", None, 0.8, None, 0.85, 0.81,
        ...                   0.89, 400, "interval", "pass", "block", "recall is fine")
        >>> record = check.to_record()
        >>> record["metric_name"], record["threshold_text"], record["verdict"], record["effect"]
        ('recall', '>= 0.8', 'pass', 'none')
        """
        return {"check_id": self.check_id, "kind": self.kind, "metric_name": self.metric,
                "sensitive_feature": self.sensitive_feature, "threshold_text": self.threshold,
                "observed": finite_or_none(self.observed), "ci_lower": finite_or_none(self.ci_lower),
                "ci_upper": finite_or_none(self.ci_upper), "n": self.n, "verdict": self.verdict,
                "severity": self.severity, "reason": self.reason, "basis": self.basis,
                "on_inconclusive": self.on_inconclusive, "effect": self.effect,
                "min_group_positives": self.min_group_positives,
                "min_group_negatives": self.min_group_negatives,
                "required_positives": self.required_positives,
                "required_negatives": self.required_negatives,
                "rows_to_decide": self.rows_to_decide,
                "group_positives_to_decide": self.group_positives_to_decide,
                "group_negatives_to_decide": self.group_negatives_to_decide,
                "rows_to_decide_if_equal": self.rows_to_decide_if_equal,
                "group_positives_to_decide_if_equal": self.group_positives_to_decide_if_equal,
                "group_negatives_to_decide_if_equal": self.group_negatives_to_decide_if_equal,
                "lower": finite_or_none(self.lower), "upper": finite_or_none(self.upper)}


def bounds_text(lower: float | None, upper: float | None, fmt: str = "g") -> str:
    """The limits in words: ``>= 0.7``, ``<= 0.1``, ``>= 0 and <= 1``."""
    bounds = [f">= {lower:{fmt}}"] if lower is not None else []
    bounds += [f"<= {upper:{fmt}}"] if upper is not None else []
    return " and ".join(bounds)
