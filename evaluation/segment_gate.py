"""Segment thresholds in the gate: no slice worse than a limit, or than its rest by more than a margin.

:func:`segment_checks` is pure: a :class:`~.segment_policy.SegmentPolicy` and a
:class:`~.segments.SegmentReport` in, one :class:`~.gate.GateCheck` per threshold out
(``segment:<metric>:limit`` and ``segment:<metric>:margin``), each naming the segment that
decided it; :func:`segment_verdicts` gives the verdict of every (segment, threshold)
behind them (stored per segment).

Rules
-----
* Every judged segment (at least ``min_rows`` rows, and its rest too) with the metric
  defined is one test per threshold: *limit*, null "the segment's value is at least as
  good as ``limit``"; *margin*, null "the segment is at most ``margin`` worse than the
  rest".  Each p-value is one-sided, from the interval the report shows
  (:func:`~.segments.worse_p_value`).
* All the tests of the policy's segment thresholds (every metric, limit and margin,
  every segment) are one **family**; their p-values are adjusted together by the
  policy's ``correction`` (Benjamini-Hochberg by default, Benjamini-Yekutieli or Holm,
  :mod:`.multiple_testing`), so more slices do not mean more false alarms.  The family
  is stated in every reason.
* A test is a ``breach`` when its adjusted p-value (q-value) is at most ``level``
  (0.05 by default): at most that share of the breaches are false in expectation (BH,
  BY), or at most that chance of any false breach (Holm).  It is a ``pass`` when the
  interval (at the report's confidence level) lies wholly on the allowed side of the
  limit or margin, else ``inconclusive``.
* A threshold's check is ``breach`` when any segment breaches it (the reason names the
  one with the smallest q-value and counts the others), else ``inconclusive`` when any
  segment is, else ``pass``.  No segment judged at all is ``inconclusive`` (a gate must
  not pass slices it never judged); segments below ``min_rows`` are counted in the
  reason, not judged.  Without a segment report each threshold ``fail``\\ s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from modelgate.records import finite_or_none

from .gate_check import GateCheck, Verdict
from .multiple_testing import CORRECTIONS, adjusted_p_values
from .policy_fields import Severity
from .segment_policy import SegmentPolicy, SegmentThreshold, segment_higher_is_better
from .segments import SegmentMetric, SegmentReport, SegmentResult, worse_p_value

__all__ = ["SegmentVerdict", "segment_checks", "segment_verdicts"]

Kind = Literal["limit", "margin"]


@dataclass(frozen=True, slots=True)
class SegmentVerdict:
    """One segment judged against one segment threshold.

    ``observed`` is the segment's value (``limit``) or its difference from the rest
    (``margin``), with its interval; ``lower`` / ``upper`` the allowed side in the same
    units (``value >= limit``, ``difference >= -margin`` for a higher-is-better metric).
    """

    check_id: str
    metric: str
    kind: Kind
    columns: tuple[str, ...]
    values: tuple[str, ...]
    n: int
    observed: float
    ci_lower: float
    ci_upper: float
    lower: float | None
    upper: float | None
    p_value: float
    q_value: float
    verdict: Verdict

    @property
    def segment(self) -> str:
        """``column=value`` (``a=x & b=y`` for a pair)."""
        return " & ".join(f"{c}={v}" for c, v in zip(self.columns, self.values, strict=True))

    def to_record(self) -> dict[str, Any]:
        """The verdict as a ``segment_gate_check`` row (the caller adds the run and attempt)."""
        return {"check_id": self.check_id, "segment": self.segment,
                "segment_columns": list(self.columns), "segment_values": list(self.values),
                "metric_name": self.metric, "kind": self.kind, "n": self.n,
                **{key: finite_or_none(getattr(self, key))
                   for key in ("observed", "ci_lower", "ci_upper", "lower", "upper", "p_value",
                               "q_value")},
                "verdict": self.verdict}


def segment_verdicts(policy: SegmentPolicy, report: SegmentReport) -> tuple[SegmentVerdict, ...]:
    """The verdict of every judged segment under every threshold of ``policy``.

    Parameters
    ----------
    policy : SegmentPolicy
        The policy's ``segments:`` section.
    report : SegmentReport
        From :func:`~.segments.evaluate_segments`.

    Returns
    -------
    tuple of SegmentVerdict
        Threshold by threshold (limit before margin), segment by segment as reported.
    """
    tests: list[tuple[SegmentThreshold, Kind, SegmentResult, SegmentMetric, float]] = []
    for t in policy.thresholds:
        for kind in ("limit", "margin"):
            bound = t.limit if kind == "limit" else t.margin
            if bound is None:
                continue
            for seg in report.segments:
                if not seg.judged:
                    continue
                # a class absent from the model's classes: no segment reports it
                m = next((x for x in seg.metrics if x.name == t.metric), None)
                if m is None or m.undefined_reason is not None or not math.isfinite(m.difference_ci_lower):
                    continue
                tests.append((t, kind, seg, m, bound))
    p = np.array([_p_value(kind, m, bound, report.confidence_level)
                  for _, kind, _, m, bound in tests], dtype=np.float64)
    q = adjusted_p_values(p, policy.correction) if p.size else p
    out = []
    for (t, kind, seg, m, bound), p_i, q_i in zip(tests, p.tolist(), q.tolist(), strict=True):
        if kind == "limit":
            observed, lo, hi = m.value, m.ci_lower, m.ci_upper
            lower, upper = (bound, None) if m.higher_is_better else (None, bound)
        else:
            observed, lo, hi = m.difference, m.difference_ci_lower, m.difference_ci_upper
            lower, upper = (-bound, None) if m.higher_is_better else (None, bound)
        inside = (lower is None or lo >= lower) and (upper is None or hi <= upper)
        verdict: Verdict = ("breach" if q_i <= policy.level else "pass" if inside
                            else "inconclusive")
        out.append(SegmentVerdict(f"segment:{t.metric}:{kind}", t.metric, kind, seg.columns,
                                  seg.values, seg.n, observed, lo, hi, lower, upper, p_i, q_i,
                                  verdict))
    return tuple(out)


def segment_checks(policy: SegmentPolicy | None, report: SegmentReport | None, *,
                   on_inconclusive: str = "block") -> tuple[GateCheck, ...]:
    """One gate check per segment threshold (``limit`` and ``margin`` each), from the report.

    Parameters
    ----------
    policy : SegmentPolicy or None
        The policy's ``segments:`` section (None: no checks).
    report : SegmentReport or None
        The segments evaluated; None fails every threshold (evaluate with segments).
    on_inconclusive : {"block", "warn"}, default "block"
        The policy's default, for thresholds that name none.

    Returns
    -------
    tuple of GateCheck
    """
    if policy is None:
        return ()
    verdicts = segment_verdicts(policy, report) if report is not None else ()
    family = _family(policy, len(verdicts))
    checks = []
    for t in policy.thresholds:
        for kind in ("limit", "margin"):
            bound = t.limit if kind == "limit" else t.margin
            if bound is None:
                continue
            mine = [v for v in verdicts if v.metric == t.metric and v.kind == kind]
            checks.append(_check(t, kind, bound, mine, report, family,
                                 t.on_inconclusive or on_inconclusive))
    return tuple(checks)


def _p_value(kind: Kind, m: SegmentMetric, bound: float, confidence_level: float) -> float:
    if kind == "margin":
        return worse_p_value(m.difference, (m.difference_ci_lower, m.difference_ci_upper),
                             m.higher_is_better, confidence_level, margin=bound)
    # the value against a fixed limit: the same test on value - limit with no margin
    return worse_p_value(m.value - bound, (m.ci_lower - bound, m.ci_upper - bound),
                         m.higher_is_better, confidence_level)


def _family(policy: SegmentPolicy, size: int) -> str:
    return (f"family of {size} one-sided tests (segment x threshold), "
            f"{CORRECTIONS[policy.correction]} at {policy.level:g}")


def _check(t: SegmentThreshold, kind: Kind, bound: float, verdicts: list[SegmentVerdict],
           report: SegmentReport | None, family: str, on_inconclusive: str) -> GateCheck:
    higher = segment_higher_is_better(t.metric)
    if kind == "limit":
        lower, upper = (bound, None) if higher else (None, bound)
        what = f"{t.metric} {'>=' if higher else '<='} {bound:g} in every segment"
    else:
        lower, upper = (-bound, None) if higher else (None, bound)
        what = f"no segment's {t.metric} worse than the rest's by more than {bound:g}"
    severity: Severity = "warn" if t.severity == "warn" else "block"
    judging: Severity = "warn" if on_inconclusive == "warn" else "block"

    def row(verdict: Verdict, reason: str, v: SegmentVerdict | None = None) -> GateCheck:
        return GateCheck(f"segment:{t.metric}:{kind}", "segment", t.metric, None, lower, upper,
                         None if v is None else v.observed, None if v is None else v.ci_lower,
                         None if v is None else v.ci_upper, None if v is None else v.n,
                         "interval", verdict, severity, reason, judging)

    if report is None:
        return row("fail", f"{what}: no segments were evaluated (give the segment columns: "
                           "evaluate --segments, or segments.columns in the policy).")
    skipped = [seg for seg in report.segments if not seg.judged]
    small = (f"; {len(skipped)} segment(s) below {report.min_rows:,} rows not judged"
             if skipped else "")
    if not verdicts:
        return row("inconclusive", f"{what}: no segment could be judged (each needs "
                                   f"{report.min_rows:,} rows, and its rest too, and the metric "
                                   f"defined){small}; {family}.")
    by = {name: [v for v in verdicts if v.verdict == name]
          for name in ("breach", "inconclusive", "pass")}
    verdict: Verdict = next(name for name in ("breach", "inconclusive", "pass") if by[name])
    key = (lambda v: (v.q_value, v.p_value)) if verdict == "breach" else (lambda v: v.p_value)
    worst = min(by[verdict], key=key)
    told = {"breach": "breaches", "inconclusive": "is undecided", "pass": "passes"}[verdict]
    others = len(by[verdict]) - 1
    count = f" and {others} other segment(s) {'breach' if verdict == 'breach' else 'too'}" if others else ""
    units = "difference from the rest" if kind == "margin" else "value"
    reason = (f"segment {worst.segment} {told}{count}: {t.metric} {units} "
              f"{worst.observed:+.4f}, interval [{worst.ci_lower:+.4f}, {worst.ci_upper:+.4f}] "
              f"(n={worst.n:,}), p = {worst.p_value:.3g}, q = {worst.q_value:.3g}; {what}; "
              f"{len(verdicts)} segment(s) judged{small}; {family}.")
    return row(verdict, reason, worst)
