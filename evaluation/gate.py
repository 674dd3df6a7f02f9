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
  on the interval basis needs ``deltas``: without them it fails, saying so.
* Every check's verdict is ``pass``, ``breach`` or ``inconclusive`` by its basis (see
  :mod:`.policy`): on the ``interval`` basis ``pass`` needs the whole interval on the
  allowed side of the limit and ``breach`` the whole interval past it; in between, or
  when a group of a TPR/FPR gap has fewer label positives or negatives than the policy's
  minimum, it is ``inconclusive``.  On the ``point_estimate`` basis the point alone
  decides, ``pass`` or ``breach``.  A check whose number is missing or undefined, or
  that needs an interval and has none, is ``fail``.
* Each check's :attr:`GateCheck.effect` is what it does to the decision: ``breach`` and
  ``fail`` act at the threshold's severity; ``inconclusive`` acts at the severity too
  unless ``on_inconclusive: warn`` makes it a warning; ``pass`` and ``skipped`` do
  nothing.  Reasons and the summary say which: "blocked: breached" reads differently
  from "blocked: inconclusive at n = 228".
* An ``inconclusive`` check says about how many more rows (for a fairness gap, positives
  and negatives of its smallest group) would decide it at the observed effect
  (:func:`.sample_size.rows_to_decide`), in its reason and its ``*_to_decide`` fields; a
  fairness gap whose interval holds 0 also says how many would show it below its limit if the
  groups' rates were equal (``*_to_decide_if_equal``): the observed gap of a fair model is
  biased upwards and projects a breach that more rows do not bring.
* Default fairness thresholds apply to every report in ``fairness``; thresholds for a
  named feature require that feature's report.  Default thresholds with no report at all
  fail: a gate must not pass silently because fairness was never computed.  A multiclass
  report turns ``<gap>[*]`` into one check per class of the model (``tpr_gap[cat]``, ...).
* A reported sensitive feature that no threshold covers gets a ``warn`` check
  ``fairness:<feature>:no_fairness_check`` (verdict ``fail``, status "not checked"): its
  gaps are in the report, and the summary says that nothing judged them.
* ``passed`` is True when no check's effect is ``block``; checks whose effect is
  ``warn`` are listed as warnings.

Limits
------
The gate trusts the intervals it is given.  A fairness gap is a spread of group rates
(>= 0); its interval (:mod:`modelgate.fairness.gap_intervals`: Newcombe's pairwise score
intervals at the upper end, a test inversion at the lower, 0 unless equal group rates are
rejected) reaches 0 when there is no real gap, so a fair model
reads ``breach`` at most in a few per cent of samples (``bench/RESULTS.md``, "Fairness gap
intervals at the boundary").  The percentile bootstrap used before did not: on 200 seeded
samples of n = 228 with no real gap its equalized-odds interval lay wholly above 0.03 in 56
(``bench/bench_gate_verdicts.py``); a small sample now reads ``inconclusive`` instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from modelgate.fairness.equal_rates import scale_to_clear_if_equal
from modelgate.fairness.metrics import FairnessEstimate, FairnessReport
from modelgate.fairness.multiclass import MulticlassFairnessReport

from .fairness_thresholds import task_of_report, thresholds_for
from .gate_check import NO_FAIRNESS_CHECK, GateCheck, Verdict
from .gate_check import bounds_text as _bounds_text
from .metrics import MetricDelta, MetricEstimate
from .policy import (
    DEFAULT_MIN_GROUP_COUNT,
    Basis,
    ChangeThreshold,
    FairnessThreshold,
    Policy,
    Severity,
    ValueThreshold,
)
from .sample_size import rows_to_decide

if TYPE_CHECKING:
    from .segments import SegmentReport

__all__ = ["NO_FAIRNESS_CHECK", "GateCheck", "GateDecision", "decide"]

# Which label counts a fairness gap's rates divide by (positives, negatives): the group
# minimums apply to those; the other gaps divide by rows or predicted positives.
_COUNTS_NEEDED = {"tpr_gap": (True, False), "fpr_gap": (False, True),
                  "equalized_odds_difference": (True, True), "tpr_fpr_gap_sum": (True, True)}


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's decision: ``passed`` and every check, blocking ones first in ``summary``."""

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


@dataclass(frozen=True, slots=True)
class _Judging:
    """How one threshold is judged, the policy's defaults applied."""

    basis: Basis
    on_inconclusive: Severity
    min_positives: int
    min_negatives: int

    @property
    def interval(self) -> bool:
        return self.basis == "interval"


def decide(
    candidate: Mapping[str, MetricEstimate],
    champion: Mapping[str, MetricEstimate] | None,
    fairness: Mapping[str, Any],
    policy: Policy,
    *,
    deltas: Mapping[str, MetricDelta] | None = None,
    segments: SegmentReport | None = None,
) -> GateDecision:
    """Apply ``policy`` to a candidate's results.

    Parameters
    ----------
    candidate : Mapping[str, MetricEstimate]
        Candidate metrics by name, e.g. ``evaluate(...).by_name()``.
    champion : Mapping[str, MetricEstimate] or None
        The current champion's metrics on the same data; None when there is no champion.
    fairness : Mapping[str, FairnessReport]
        Fairness reports of the candidate, by sensitive feature name (binary, multiclass
        or regression reports: anything with ``by_name()``).
    policy : Policy
        From :func:`~.policy.load_policy`.
    deltas : Mapping[str, MetricDelta], optional
        Paired deltas from ``compare(...).by_name()``; used by change checks.
    segments : SegmentReport, optional
        From :func:`~.segments.evaluate_segments`; judged by the policy's ``segments:``
        thresholds (:mod:`.segment_gate`), whose checks come last.

    Returns
    -------
    GateDecision

    Examples
    --------
    >>> from modelgate.evaluation.policy import load_policy
    >>> policy = load_policy('''
    ... basis: interval
    ... metrics: {roc_auc: {value: {lower: 0.7}, change: {absolute: -0.01}}, f1: {value: {lower: 0.6}}}
    ... ''')
    >>> auc = MetricEstimate("roc_auc", 0.65, 0.62, 0.68, 5000)
    >>> f1 = MetricEstimate("f1", 0.62, 0.55, 0.69, 228)
    >>> decision = decide({"roc_auc": auc, "f1": f1}, None, {}, policy)
    >>> decision.passed
    False
    >>> print(decision.summary)  # doctest: +NORMALIZE_WHITESPACE
    Promotion gate FAILED: 2 blocking failure(s), 0 warning(s), 0 passed, 1 skipped.
    BLOCK   value:roc_auc: blocked: breached — roc_auc = 0.6500, interval [0.6200, 0.6800]
            lies entirely below the lower bound 0.7000 (n=5000).
    BLOCK   value:f1: blocked: inconclusive at n = 228 — f1 = 0.6200, interval [0.5500, 0.6900]
            straddles the lower bound 0.6000 (n=228). About 2,565 more rows (12.2x the 228)
            would make the interval clear the limit at the observed effect.
    SKIPPED change:roc_auc:absolute: no champion model, so change thresholds are not applied.
    """
    checks = [_value_check(t, candidate.get(t.metric), _judging(t, policy)) for t in policy.values]
    for t in policy.changes:
        checks.extend(_change_checks(t, candidate, champion, deltas, _judging(t, policy)))
    checks.extend(_fairness_checks(fairness, policy))
    checks = [_projected(c) if c.verdict == "inconclusive" and c.kind != "fairness" else c
              for c in checks]
    if policy.segments is not None:
        from .segment_gate import segment_checks  # it builds GateChecks: imported here

        checks.extend(segment_checks(policy.segments, segments,
                                     on_inconclusive=policy.on_inconclusive or "block"))
    blocking = tuple(c for c in checks if c.effect == "block")
    warnings = tuple(c for c in checks if c.effect == "warn")
    return GateDecision(not blocking, tuple(checks), blocking, warnings,
                        _summary(checks, blocking, warnings))


def _judging(threshold: ValueThreshold | ChangeThreshold | FairnessThreshold,
             policy: Policy) -> _Judging:
    basis = threshold.basis or policy.basis or "point_estimate"
    on_inconclusive = threshold.on_inconclusive or policy.on_inconclusive or "block"
    return _Judging(basis, on_inconclusive,
                    _or_default(policy.min_positives_per_group),
                    _or_default(policy.min_negatives_per_group))


def _or_default(count: int | None) -> int:
    return DEFAULT_MIN_GROUP_COUNT if count is None else count


def _verdict(point: float, lo: float, hi: float, lower: float | None, upper: float | None,
             interval: bool) -> Verdict:
    """``pass``/``breach``/``inconclusive`` of ``[lo, hi]`` (or the point) against inclusive
    limits: past a limit entirely is a breach, inside entirely a pass."""
    if not interval:
        lo = hi = point
    if (lower is not None and hi < lower) or (upper is not None and lo > upper):
        return "breach"
    if (lower is None or lo >= lower) and (upper is None or hi <= upper):
        return "pass"
    return "inconclusive"


def _relation(verdict: Verdict, point: float, lo: float, hi: float, lower: float | None,
              upper: float | None, interval: bool, fmt: str = ".4f", noun: str = "bound") -> str:
    """How the judged number (the point, or ``[lo, hi]``) stands to the limits, in words;
    ``noun="limit"`` names a limit by its operator (``the limit <= +0.02``)."""
    if verdict == "pass":
        return f"{'lies within' if interval else 'meets'} {_bounds_text(lower, upper, fmt)}"
    if not interval:
        lo = hi = point
    past_lower = lower is not None and (hi < lower if verdict == "breach" else lo < lower)
    side, limit = ("lower", lower) if past_lower else ("upper", upper)
    assert limit is not None
    named = (f"the limit {'>=' if past_lower else '<='} {limit:{fmt}}" if noun == "limit"
             else f"the {side} bound {limit:{fmt}}")
    if verdict == "inconclusive":
        return f"straddles {named}"
    if noun == "limit" and not interval:
        return f"{'is below' if past_lower else 'exceeds'} {named}"
    word = "below" if past_lower else "above"
    return f"{'lies entirely ' if interval else 'is '}{word} {named}"



def _evidence(name: str, point: float, lo: float, hi: float, interval: bool,
              fmt: str = ".4f") -> str:
    """``name = point`` and, on the interval basis, the interval that was judged."""
    text = f"{name} {point:{fmt}}" if fmt.startswith("+") else f"{name} = {point:{fmt}}"
    return f"{text}, interval [{lo:{fmt}}, {hi:{fmt}}]" if interval else text


def _value_check(t: ValueThreshold, est: MetricEstimate | None, how: _Judging) -> GateCheck:
    def row(verdict: Verdict, reason: str) -> GateCheck:
        return GateCheck(f"value:{t.metric}", "value", t.metric, None, t.lower, t.upper,
                         *_numbers(est), how.basis, verdict, t.severity, reason,
                         how.on_inconclusive)

    problem = _unusable(t.metric, est, how.interval)
    if problem:
        return row("fail", problem)
    assert est is not None
    verdict = _verdict(est.value, est.ci_lower, est.ci_upper, t.lower, t.upper, how.interval)
    context = (f"(n={est.n})" if how.interval else
               f"(CI [{est.ci_lower:.4f}, {est.ci_upper:.4f}], n={est.n})")
    numbers = (est.value, est.ci_lower, est.ci_upper)
    return row(verdict, f"{_evidence(t.metric, *numbers, how.interval)} "
                        f"{_relation(verdict, *numbers, t.lower, t.upper, how.interval)} {context}.")


def _change_checks(
    t: ChangeThreshold,
    candidate: Mapping[str, MetricEstimate],
    champion: Mapping[str, MetricEstimate] | None,
    deltas: Mapping[str, MetricDelta] | None,
    how: _Judging,
) -> list[GateCheck]:
    checks = []
    for mode, margin in (("absolute", t.absolute), ("relative", t.relative)):
        if margin is None:
            continue
        if champion is None:
            reason = "no champion model, so change thresholds are not applied."
            checks.append(_change_gatecheck(t, mode, margin, how, "skipped", reason))
        else:
            delta = deltas.get(t.metric) if deltas is not None else None
            checks.append(_change_check(t, mode, margin, candidate, champion, delta, how))
    return checks


def _change_check(t: ChangeThreshold, mode: str, margin: float,
                  candidate: Mapping[str, MetricEstimate], champion: Mapping[str, MetricEstimate],
                  delta: MetricDelta | None, how: _Judging) -> GateCheck:
    new, old = candidate.get(t.metric), champion.get(t.metric)
    problem = _unusable(t.metric, new, False) or _unusable(t.metric, old, False, who="champion")
    if delta is None and (problem or how.interval):
        problem = problem or ("the interval basis needs the paired interval of the change, and "
                              "none was supplied (pass deltas=compare(...).by_name()).")
        return _change_gatecheck(t, mode, margin, how, "fail", problem)
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
        return _change_gatecheck(t, mode, margin, how, "fail",
                                 f"{t.metric} {mode} change cannot be computed: {why}.")
    nums = (d / scale, lo / scale, hi / scale, n)
    if how.interval and not (math.isfinite(lo) and math.isfinite(hi)):
        return _change_gatecheck(t, mode, margin, how, "fail",
                                 f"{t.metric}: the change has no confidence interval to judge.",
                                 nums)
    # Judged in the sign of ``observed`` (candidate - champion), the number shown beside the
    # reason, so a worse log loss reads as a positive change everywhere.
    lower, upper = (margin, None) if t.direction == "higher_is_better" else (None, -margin)
    verdict = _verdict(nums[0], nums[1], nums[2], lower, upper, how.interval)
    better = "higher" if t.direction == "higher_is_better" else "lower"
    reason = (f"{_evidence(f'{t.metric} {mode} change', nums[0], nums[1], nums[2], how.interval, '+.4f')} "
              f"{_relation(verdict, *nums[:3], lower, upper, how.interval, '+.4f', 'limit')} "
              f"({better} is better; candidate {cand:.4f}, champion {champ:.4f}, n={n}).")
    return _change_gatecheck(t, mode, margin, how, verdict, reason, nums)


def _change_gatecheck(t: ChangeThreshold, mode: str, margin: float, how: _Judging,
                      verdict: Verdict, reason: str,
                      nums: tuple[float | None, float | None, float | None, int | None] = (
                          None, None, None, None)) -> GateCheck:
    # In the sign of ``observed`` (candidate - champion), so the two read the same way.
    lower, upper = (margin, None) if t.direction == "higher_is_better" else (None, -margin)
    return GateCheck(f"change:{t.metric}:{mode}", "change", t.metric, None, lower, upper, *nums,
                     how.basis, verdict, t.severity, reason, how.on_inconclusive)


def _fairness_checks(fairness: Mapping[str, Any], policy: Policy) -> list[GateCheck]:
    checks = []
    if not fairness:
        for t in policy.fairness_default:
            checks.append(_fairness_row(t, "*", None, _judging(t, policy), "fail",
                                        "no fairness report was supplied (no sensitive feature "
                                        "named: the model manifest's sensitive_features is "
                                        "empty), but the policy sets fairness thresholds for "
                                        "every sensitive feature: name the sensitive columns "
                                        "in the manifest, or make these thresholds "
                                        "severity: warn in the model's policy."))
    features = list(fairness) + [f for f, _ in policy.fairness_features if f not in fairness]
    for feature in features:
        report = fairness.get(feature)
        # once a feature: a multiclass report's mapping has a gap per class and threshold
        by_name = report.by_name() if report is not None else {}
        thresholds = thresholds_for(policy, feature, report)
        if report is not None and not thresholds:
            checks.append(_uncovered(feature, report, policy))
        for t in thresholds:
            how = _judging(t, policy)
            if report is None:
                checks.append(_fairness_row(t, feature, None, how, "fail",
                                            f"fairness report for sensitive feature {feature!r} "
                                            "missing."))
                continue
            est = by_name.get(t.metric)
            check = _fairness_check(t, feature, est, _group_minima(report, t.metric, est), how)
            if check.verdict == "inconclusive":
                check = _projected(check, _scale_if_equal(report, check))
            checks.append(check)
    return checks


def _scale_if_equal(report: Any, check: GateCheck) -> float | None:
    """A binary classifier's gap whose interval holds 0 and straddles its limit: the factor on
    the counts that would show it below the limit if the groups' rates were equal (simulated
    on the report's counts, :mod:`modelgate.fairness.equal_rates`); None otherwise."""
    if not (isinstance(report, FairnessReport) and check.upper is not None
            and check.ci_lower is not None and check.ci_upper is not None
            and check.ci_lower <= 0.0 < check.upper < check.ci_upper):
        return None
    small = np.array([g.small_group for g in report.table.groups], dtype=bool)
    included = np.ones_like(small) if report.include_small_groups else ~small
    return scale_to_clear_if_equal(report.table.counts(), included, check.metric, check.upper,
                                   confidence_level=report.confidence_level,
                                   zero=report.undefined_rates == "zero")


def _uncovered(feature: str, report: Any, policy: Policy) -> GateCheck:
    """A warning that a reported sensitive feature's gaps were judged by no threshold."""
    reason = (f"no fairness check covers sensitive feature {feature!r} (task "
              f"{task_of_report(report)}): its gaps "
              "are computed and reported, but the policy sets no limit on any of them (set "
              f"fairness.default or fairness.features.{feature} in the model's policy).")
    return GateCheck(f"fairness:{feature}:{NO_FAIRNESS_CHECK}", "fairness", NO_FAIRNESS_CHECK,
                     feature, None, None, None, None, None, None,
                     policy.basis or "point_estimate", "fail", "warn", reason)


def _group_minima(report: Any, metric: str, est: FairnessEstimate | None
                  ) -> tuple[int | None, int | None]:
    """The fewest label positives and negatives of the groups taking part in a classifier's
    gap (a multiclass gap ``<gap>[<class>]``: in that class's one-vs-rest table)."""
    if est is None or not isinstance(est, FairnessEstimate):
        return None, None
    if isinstance(report, MulticlassFairnessReport):
        label = metric.partition("[")[2][:-1]
        tables = [c.report.table for c in report.classes if c.label == label]
        if not tables:
            return None, None
        table = tables[0]
    elif isinstance(report, FairnessReport):
        table = report.table
    else:
        return None, None
    excluded = {group for group, _ in est.excluded_groups}
    kept = [g for g in table.groups if g.group not in excluded]
    if not kept:
        return None, None
    return min(g.tp + g.fn for g in kept), min(g.fp + g.tn for g in kept)


def _fairness_check(t: FairnessThreshold, feature: str, est: FairnessEstimate | None,
                    minima: tuple[int | None, int | None], how: _Judging) -> GateCheck:
    problem = _unusable(t.metric, est, how.interval)
    if problem:
        # a gap left with fewer than two groups is most often one whose other groups were
        # set aside (too small, rate undefined): say which, or "two groups" reads as false
        left_out = (f" Left out: {_excluded_groups_text(est)}."
                    if est is not None and est.excluded_groups else "")
        return _fairness_row(t, feature, est, how, "fail", f"[{feature}] {problem}{left_out}",
                             minima)
    assert est is not None
    verdict = _verdict(est.value, est.ci_lower, est.ci_upper, None, t.upper, how.interval)
    relation = _relation(verdict, est.value, est.ci_lower, est.ci_upper, None, t.upper,
                         how.interval)
    needs = _COUNTS_NEEDED.get(t.metric.partition("[")[0], (False, False)) if how.interval else (
        False, False)
    required = (how.min_positives if needs[0] and minima[0] is not None else None,
                how.min_negatives if needs[1] and minima[1] is not None else None)
    short = [f"{have} {what}, fewer than the minimum {need}"
             for have, need, what in zip(minima, required, ("positives", "negatives"), strict=True)
             if need is not None and have is not None and have < need]
    if short:
        verdict = "inconclusive"
        relation += f"; too few cases to judge: a group has {' and '.join(short)}"
    counts = (f"; fewest per group: {minima[0]} positives, {minima[1]} negatives"
              if minima[0] is not None else "")
    groups = (f"; highest group {est.highest_group!r}, lowest {est.lowest_group!r}"
              if est.highest_group is not None else "")
    excluded = f"; excluded: {_excluded_groups_text(est)}" if est.excluded_groups else ""
    interval = "" if how.interval else f"CI [{est.ci_lower:.4f}, {est.ci_upper:.4f}], "
    reason = (f"[{feature}] {_evidence(t.metric, est.value, est.ci_lower, est.ci_upper, how.interval)}"
              f" {relation} ({interval}n={est.n}{counts}{groups}{excluded}).")
    return _fairness_row(t, feature, est, how, verdict, reason, minima, required)


EXCLUDED_GROUPS_SHOWN = 10  # a sensitive column of many tiny groups would flood the line


def _excluded_groups_text(est: FairnessEstimate) -> str:
    """The groups a gap left out, each with why; the first few when there are many."""
    shown = [f"{g!r} ({why})" for g, why in est.excluded_groups[:EXCLUDED_GROUPS_SHOWN]]
    more = len(est.excluded_groups) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def _fairness_row(t: FairnessThreshold, feature: str, est: FairnessEstimate | None,
                  how: _Judging, verdict: Verdict, reason: str,
                  minima: tuple[int | None, int | None] = (None, None),
                  required: tuple[int | None, int | None] = (None, None)) -> GateCheck:
    return GateCheck(f"fairness:{feature}:{t.metric}", "fairness", t.metric,
                     None if feature == "*" else feature, None, t.upper, *_numbers(est),
                     how.basis, verdict, t.severity, reason, how.on_inconclusive, *minima,
                     *required)


def _projected(check: GateCheck, scale_if_equal: float | None = None) -> GateCheck:
    """An inconclusive check with about how many more rows would decide it (a fairness gap's
    ``scale_if_equal`` from :func:`_scale_if_equal`)."""
    nums = (check.observed, check.ci_lower, check.ci_upper)
    if check.n is None or check.n <= 0 or any(x is None or not math.isfinite(x) for x in nums):
        return check
    point, lo, hi = (float(x) for x in nums)  # type: ignore[arg-type]
    more = rows_to_decide(point, lo, hi, check.n, lower=check.lower, upper=check.upper,
                          group_counts=(check.min_group_positives, check.min_group_negatives),
                          required_counts=(check.required_positives, check.required_negatives),
                          fairness_gap=check.kind == "fairness", scale_if_equal=scale_if_equal)
    return replace(check, rows_to_decide=more.rows, group_positives_to_decide=more.group_positives,
                   group_negatives_to_decide=more.group_negatives,
                   rows_to_decide_if_equal=more.rows_if_equal,
                   group_positives_to_decide_if_equal=more.group_positives_if_equal,
                   group_negatives_to_decide_if_equal=more.group_negatives_if_equal,
                   reason=f"{check.reason} {more.reason[0].upper()}{more.reason[1:]}.")


def _unusable(metric: str, est: MetricEstimate | FairnessEstimate | None, interval: bool,
              who: str = "candidate") -> str | None:
    if est is None:
        return f"metric {metric} missing from the {who}'s results."
    if not math.isfinite(est.value):
        return f"metric {metric} of the {who} is undefined ({est.undefined_reason or 'NaN'})."
    if interval and not (math.isfinite(est.ci_lower) and math.isfinite(est.ci_upper)):
        # a regression metric has none on one row (r2 on two) or with every error alike
        # (regression.py), any metric none without resamples
        return (f"metric {metric} has no confidence interval to judge at n = {est.n} (too few "
                "rows, every row's error alike, or n_bootstrap = 0).")
    return None


def _numbers(est: MetricEstimate | FairnessEstimate | None
             ) -> tuple[float | None, float | None, float | None, int | None]:
    if est is None:
        return None, None, None, None
    return est.value, est.ci_lower, est.ci_upper, est.n


def _summary(checks: list[GateCheck], blocking: tuple[GateCheck, ...],
             warnings: tuple[GateCheck, ...]) -> str:
    passed = sum(c.verdict == "pass" for c in checks)
    skipped = [c for c in checks if c.verdict == "skipped"]
    head = (f"Promotion gate {'PASSED' if not blocking else 'FAILED'}: {len(blocking)} blocking "
            f"failure(s), {len(warnings)} warning(s), {passed} passed, {len(skipped)} skipped.")
    lines = [head]
    lines += [f"BLOCK   {c.check_id}: blocked: {c.status} — {c.reason}" for c in blocking]
    lines += [f"WARN    {c.check_id}: warning: {c.status} — {c.reason}" for c in warnings]
    lines += [f"SKIPPED {c.check_id}: {c.reason}" for c in skipped]
    return "\n".join(lines)
