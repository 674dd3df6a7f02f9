"""The promotion gate: metric results + policy -> decision with one reason per check.

:func:`decide` is pure: it reads estimates computed elsewhere (:func:`~.metrics.evaluate`,
:func:`~.metrics.compare`, :func:`modelgate.fairness.fairness_report`) and a
:class:`~.policy.Policy`, and returns a :class:`GateDecision`.  It neither promotes a model
nor fails a task.

Rules
-----
* Every threshold of the policy becomes one :class:`GateCheck` (a change threshold with
  both ``absolute`` and ``relative`` becomes two), in the order value, change, fairness.
* A metric the policy names but the results lack, or whose value is undefined (NaN),
  fails its check, with the threshold's severity.
* Without a champion every change check is ``skipped`` with a reason.  When ``deltas``
  (from :func:`~.metrics.compare`) are given they are used for change checks, point and
  interval; otherwise the delta is ``candidate.value - champion.value``.  A change check
  judged by confidence bound needs ``deltas``: without them it fails, saying so.
* With ``use_confidence_bound`` a check judges the pessimistic end of the interval (see
  :mod:`.policy`); a NaN interval then fails the check.
* Default fairness thresholds apply to every report in ``fairness``; thresholds for a
  named feature require that feature's report.  Default thresholds with no report at all
  fail: a gate must not pass silently because fairness was never computed.
* ``passed`` is True when no check with severity ``block`` failed; failed ``warn``
  checks are listed as warnings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from modelgate.fairness.metrics import FairnessEstimate, FairnessReport

from modelgate.records import finite_or_none

from .metrics import MetricDelta, MetricEstimate
from .policy import ChangeThreshold, FairnessThreshold, Policy, Severity, ValueThreshold

__all__ = ["GateCheck", "GateDecision", "decide"]

Verdict = Literal["pass", "fail", "skipped"]
CheckKind = Literal["value", "change", "fairness"]


@dataclass(frozen=True, slots=True)
class GateCheck:
    """The outcome of one threshold.

    Attributes
    ----------
    check_id : str
        Stable id: ``value:<metric>``, ``change:<metric>:absolute|relative``,
        ``fairness:<feature>:<metric>`` (feature ``*`` when no report was supplied).
    kind : {"value", "change", "fairness"}
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
    basis : {"point_estimate", "confidence_bound"}
        What was judged.
    verdict : {"pass", "fail", "skipped"}
    severity : {"block", "warn"}
    reason : str
        One sentence for a human reader.
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
    basis: Literal["point_estimate", "confidence_bound"]
    verdict: Verdict
    severity: Severity
    reason: str

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
        bounds = [f">= {self.lower:g}"] if self.lower is not None else []
        bounds += [f"<= {self.upper:g}"] if self.upper is not None else []
        return " and ".join(bounds)

    def to_record(self) -> dict[str, Any]:
        """The check as a ``gate_check`` row (the caller adds the run), with its limits.

        Returns
        -------
        dict
            The stored columns ``check_id``, ``kind``, ``metric_name``, ``sensitive_feature``,
            ``threshold_text`` (:attr:`threshold`), ``observed``, ``ci_lower``, ``ci_upper``,
            ``n``, ``verdict``, ``severity`` and ``reason``, then ``lower``, ``upper`` and
            ``basis``; numbers None where missing or not finite.

        Examples
        --------
        >>> check = GateCheck("value:recall", "value", "recall", None, 0.8, None, 0.85, 0.81,
        ...                   0.89, 400, "confidence_bound", "pass", "block", "recall is fine")
        >>> record = check.to_record()
        >>> record["metric_name"], record["threshold_text"], record["verdict"], record["lower"]
        ('recall', '>= 0.8', 'pass', 0.8)
        """
        return {"check_id": self.check_id, "kind": self.kind, "metric_name": self.metric,
                "sensitive_feature": self.sensitive_feature, "threshold_text": self.threshold,
                "observed": finite_or_none(self.observed), "ci_lower": finite_or_none(self.ci_lower),
                "ci_upper": finite_or_none(self.ci_upper), "n": self.n, "verdict": self.verdict,
                "severity": self.severity, "reason": self.reason, "lower": finite_or_none(self.lower),
                "upper": finite_or_none(self.upper), "basis": self.basis}


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's decision: ``passed`` and every check, failures first in ``summary``."""

    passed: bool
    checks: tuple[GateCheck, ...]
    blocking_failures: tuple[GateCheck, ...]
    warnings: tuple[GateCheck, ...]
    summary: str

    def to_record(self) -> dict[str, Any]:
        """The decision as a ``gate_decision`` row (the caller adds the run, the policy's
        sha256 and whether there was a champion); each check has its own record.

        Examples
        --------
        >>> GateDecision(True, (), (), (), "passed: 0 checks").to_record()
        {'passed': True, 'summary': 'passed: 0 checks'}
        """
        return {"passed": self.passed, "summary": self.summary}


def decide(
    candidate: Mapping[str, MetricEstimate],
    champion: Mapping[str, MetricEstimate] | None,
    fairness: Mapping[str, FairnessReport],
    policy: Policy,
    *,
    deltas: Mapping[str, MetricDelta] | None = None,
) -> GateDecision:
    """Apply ``policy`` to a candidate's results.

    Parameters
    ----------
    candidate : Mapping[str, MetricEstimate]
        Candidate metrics by name, e.g. ``evaluate(...).by_name()``.
    champion : Mapping[str, MetricEstimate] or None
        The current champion's metrics on the same data; None when there is no champion.
    fairness : Mapping[str, FairnessReport]
        Fairness reports of the candidate, by sensitive feature name.
    policy : Policy
        From :func:`~.policy.load_policy`.
    deltas : Mapping[str, MetricDelta], optional
        Paired deltas from ``compare(...).by_name()``; used by change checks.

    Returns
    -------
    GateDecision

    Examples
    --------
    >>> from modelgate.evaluation.policy import load_policy
    >>> policy = load_policy("metrics: {roc_auc: {value: {lower: 0.7}, change: {absolute: -0.01}}}")
    >>> auc = MetricEstimate("roc_auc", 0.65, 0.62, 0.68, 5000)
    >>> decision = decide({"roc_auc": auc}, None, {}, policy)
    >>> decision.passed
    False
    >>> print(decision.summary)  # doctest: +NORMALIZE_WHITESPACE
    Promotion gate FAILED: 1 blocking failure(s), 0 warning(s), 0 passed, 1 skipped.
    BLOCK   value:roc_auc: roc_auc = 0.6500 is below the lower bound 0.7000
            (CI [0.6200, 0.6800], n=5000).
    SKIPPED change:roc_auc:absolute: no champion model, so change thresholds are not applied.
    """
    default_cb = bool(policy.use_confidence_bound)
    checks = [_value_check(t, candidate.get(t.metric), _cb(t, default_cb)) for t in policy.values]
    for t in policy.changes:
        checks.extend(_change_checks(t, candidate, champion, deltas, _cb(t, default_cb)))
    checks.extend(_fairness_checks(fairness, policy, default_cb))
    blocking = tuple(c for c in checks if c.verdict == "fail" and c.severity == "block")
    warnings = tuple(c for c in checks if c.verdict == "fail" and c.severity == "warn")
    return GateDecision(not blocking, tuple(checks), blocking, warnings,
                        _summary(checks, blocking, warnings))


def _cb(threshold: ValueThreshold | ChangeThreshold | FairnessThreshold, default: bool) -> bool:
    return default if threshold.use_confidence_bound is None else threshold.use_confidence_bound


def _value_check(t: ValueThreshold, est: MetricEstimate | None, use_cb: bool) -> GateCheck:
    bounds = [f">= {t.lower:g}"] if t.lower is not None else []
    bounds += [f"<= {t.upper:g}"] if t.upper is not None else []

    def row(verdict: Verdict, reason: str) -> GateCheck:
        return GateCheck(f"value:{t.metric}", "value", t.metric, None, t.lower, t.upper,
                         *_numbers(est), _basis(use_cb), verdict, t.severity, reason)

    problem = _unusable(t.metric, est, use_cb)
    if problem:
        return row("fail", problem)
    assert est is not None
    failures = []
    if t.lower is not None:
        judged, label = _judged(est.value, est.ci_lower, use_cb, "lower")
        if judged < t.lower:
            failures.append(f"{t.metric} {label}{judged:.4f} is below the lower bound "
                            f"{t.lower:.4f}")
    if t.upper is not None:
        judged, label = _judged(est.value, est.ci_upper, use_cb, "upper")
        if judged > t.upper:
            failures.append(f"{t.metric} {label}{judged:.4f} is above the upper bound "
                            f"{t.upper:.4f}")
    context = f"(CI [{est.ci_lower:.4f}, {est.ci_upper:.4f}], n={est.n})"
    if failures:
        return row("fail", f"{'; '.join(failures)} {context}.")
    return row("pass", f"{t.metric} = {est.value:.4f} meets {' and '.join(bounds)} {context}.")


def _change_checks(
    t: ChangeThreshold,
    candidate: Mapping[str, MetricEstimate],
    champion: Mapping[str, MetricEstimate] | None,
    deltas: Mapping[str, MetricDelta] | None,
    use_cb: bool,
) -> list[GateCheck]:
    checks = []
    for mode, margin in (("absolute", t.absolute), ("relative", t.relative)):
        if margin is None:
            continue
        if champion is None:
            reason = "no champion model, so change thresholds are not applied."
            checks.append(_change_gatecheck(t, mode, margin, use_cb, "skipped", reason))
        else:
            delta = deltas.get(t.metric) if deltas is not None else None
            checks.append(_change_check(t, mode, margin, candidate, champion, delta, use_cb))
    return checks


def _change_check(t: ChangeThreshold, mode: str, margin: float,
                  candidate: Mapping[str, MetricEstimate], champion: Mapping[str, MetricEstimate],
                  delta: MetricDelta | None, use_cb: bool) -> GateCheck:
    new, old = candidate.get(t.metric), champion.get(t.metric)
    problem = _unusable(t.metric, new, False) or _unusable(t.metric, old, False, who="champion")
    if delta is None and (problem or use_cb):
        problem = problem or ("use_confidence_bound is set but no paired interval of the change "
                              "was supplied (pass deltas=compare(...).by_name()).")
        return _change_gatecheck(t, mode, margin, use_cb, "fail", problem)
    if delta is not None:
        cand, champ, d, lo, hi, n = (delta.candidate, delta.champion, delta.delta,
                                     delta.ci_lower, delta.ci_upper, delta.n)
    else:
        assert new is not None and old is not None
        cand, champ, d, lo, hi, n = new.value, old.value, new.value - old.value, math.nan, \
            math.nan, new.n
    scale = abs(champ) if mode == "relative" else 1.0
    if not math.isfinite(d) or scale == 0:
        why = "the champion's value is 0" if scale == 0 else (
            f"the change is undefined ({delta.undefined_reason if delta else 'NaN'})")
        return _change_gatecheck(t, mode, margin, use_cb, "fail",
                                 f"{t.metric} {mode} change cannot be computed: {why}.")
    sign = 1.0 if t.direction == "higher_is_better" else -1.0
    nums = (d / scale, lo / scale, hi / scale, n)
    judged = min(sign * lo, sign * hi) / scale if use_cb else sign * d / scale
    if not math.isfinite(judged):
        return _change_gatecheck(t, mode, margin, use_cb, "fail",
                                 f"{t.metric}: the change has no confidence interval to judge.",
                                 nums)
    verdict: Verdict = "pass" if judged >= margin else "fail"
    context = f"(candidate {cand:.4f}, champion {champ:.4f}, n={n})"
    if sign > 0:
        label = "pessimistic bound of the improvement" if use_cb else "improvement"
        relation = "meets" if verdict == "pass" else "is below"
        reason = f"{t.metric} {mode} {label} {judged:+.4f} {relation} the allowed {margin:+.4f} {context}."
    else:
        # Lower is better: say it in the sign of ``observed`` (candidate - champion), the
        # number shown beside the reason, so a worse candidate reads as a positive change.
        label = "pessimistic (upper) bound of the change" if use_cb else "change"
        relation = "meets" if verdict == "pass" else "exceeds"
        reason = (f"{t.metric} {mode} {label} {-judged:+.4f} {relation} the limit <= {-margin:+.4f} "
                  f"(lower is better; {context[1:]}.")
    return _change_gatecheck(t, mode, margin, use_cb, verdict, reason, nums)


def _change_gatecheck(t: ChangeThreshold, mode: str, margin: float, use_cb: bool,
                      verdict: Verdict, reason: str,
                      nums: tuple[float | None, float | None, float | None, int | None] = (
                          None, None, None, None)) -> GateCheck:
    # In the sign of ``observed`` (candidate - champion), so the two read the same way.
    lower, upper = (margin, None) if t.direction == "higher_is_better" else (None, -margin)
    return GateCheck(f"change:{t.metric}:{mode}", "change", t.metric, None, lower, upper, *nums,
                     _basis(use_cb), verdict, t.severity, reason)


def _fairness_checks(fairness: Mapping[str, FairnessReport], policy: Policy,
                     default_cb: bool) -> list[GateCheck]:
    checks = []
    if not fairness:
        for t in policy.fairness_default:
            checks.append(_fairness_row(t, "*", None, _cb(t, default_cb), "fail",
                                        "no fairness report was supplied, but the policy sets "
                                        "fairness thresholds for every sensitive feature."))
    features = list(fairness) + [f for f, _ in policy.fairness_features if f not in fairness]
    for feature in features:
        report = fairness.get(feature)
        for t in policy.fairness_for(feature):
            use_cb = _cb(t, default_cb)
            if report is None:
                checks.append(_fairness_row(t, feature, None, use_cb, "fail",
                                            f"fairness report for sensitive feature {feature!r} "
                                            "missing."))
                continue
            est = report.by_name().get(t.metric)
            checks.append(_fairness_check(t, feature, est, use_cb))
    return checks


def _fairness_check(t: FairnessThreshold, feature: str, est: FairnessEstimate | None,
                    use_cb: bool) -> GateCheck:
    problem = _unusable(t.metric, est, use_cb)
    if problem:
        return _fairness_row(t, feature, est, use_cb, "fail", f"[{feature}] {problem}")
    assert est is not None
    judged, label = _judged(est.value, est.ci_upper, use_cb, "upper")
    verdict: Verdict = "pass" if judged <= t.upper else "fail"
    groups = (f"; highest group {est.highest_group!r}, lowest {est.lowest_group!r}"
              if est.highest_group is not None else "")
    excluded = (f"; excluded: {', '.join(f'{g!r} ({why})' for g, why in est.excluded_groups)}"
                if est.excluded_groups else "")
    relation = "is within" if verdict == "pass" else "exceeds"
    reason = (f"[{feature}] {t.metric} {label}{judged:.4f} {relation} the upper bound "
              f"{t.upper:.4f} (CI [{est.ci_lower:.4f}, {est.ci_upper:.4f}], n={est.n}"
              f"{groups}{excluded}).")
    return _fairness_row(t, feature, est, use_cb, verdict, reason)


def _fairness_row(t: FairnessThreshold, feature: str, est: FairnessEstimate | None,
                  use_cb: bool, verdict: Verdict, reason: str) -> GateCheck:
    return GateCheck(f"fairness:{feature}:{t.metric}", "fairness", t.metric,
                     None if feature == "*" else feature, None, t.upper, *_numbers(est),
                     _basis(use_cb), verdict, t.severity, reason)


def _unusable(metric: str, est: MetricEstimate | FairnessEstimate | None, use_cb: bool,
              who: str = "candidate") -> str | None:
    if est is None:
        return f"metric {metric} missing from the {who}'s results."
    if not math.isfinite(est.value):
        return f"metric {metric} of the {who} is undefined ({est.undefined_reason or 'NaN'})."
    if use_cb and not (math.isfinite(est.ci_lower) and math.isfinite(est.ci_upper)):
        return f"metric {metric} has no confidence interval to judge (n_bootstrap = 0?)."
    return None


def _judged(value: float, bound: float, use_cb: bool, side: str) -> tuple[float, str]:
    if use_cb:
        return bound, f"{side} confidence bound "
    return value, "= "


def _numbers(est: MetricEstimate | FairnessEstimate | None
             ) -> tuple[float | None, float | None, float | None, int | None]:
    if est is None:
        return None, None, None, None
    return est.value, est.ci_lower, est.ci_upper, est.n


def _basis(use_cb: bool) -> Literal["point_estimate", "confidence_bound"]:
    return "confidence_bound" if use_cb else "point_estimate"


def _summary(checks: list[GateCheck], blocking: tuple[GateCheck, ...],
             warnings: tuple[GateCheck, ...]) -> str:
    passed = sum(c.verdict == "pass" for c in checks)
    skipped = [c for c in checks if c.verdict == "skipped"]
    head = (f"Promotion gate {'PASSED' if not blocking else 'FAILED'}: {len(blocking)} blocking "
            f"failure(s), {len(warnings)} warning(s), {passed} passed, {len(skipped)} skipped.")
    lines = [head]
    lines += [f"BLOCK   {c.check_id}: {c.reason}" for c in blocking]
    lines += [f"WARN    {c.check_id}: {c.reason}" for c in warnings]
    lines += [f"SKIPPED {c.check_id}: {c.reason}" for c in skipped]
    return "\n".join(lines)
