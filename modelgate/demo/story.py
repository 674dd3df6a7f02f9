"""What ``modelgate demo`` tells a release manager at the end: what passed and was promoted,
what was blocked or failed and why, which drift runs are worst, and where to look.

Plain values in, lines out (no database, no object store), so the wording is tested without
running the demo.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from modelgate.logsafe import escape_for_log


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    """One evaluation the demo ran: ``status`` passed | blocked | failed | none (no run row)."""

    label: str  # e.g. "v1", "v2 on a held-out file without 'educcat'"
    run_id: int | None
    status: str
    stage: str  # the version's stage after the run
    reasons: tuple[str, ...]  # failed blocking checks, or the failure reason


@dataclass(frozen=True, slots=True)
class DriftOutcome:
    """One drift run the demo ran; feature names as people read them."""

    interval: dt.date
    run_id: int
    status: str  # ok | drift | no_data | failed
    breached: tuple[str, ...]
    worst_feature: str | None
    worst_ratio: float | None  # the worst feature's statistic as a multiple of its threshold
    change_points: int
    simulated: bool  # labels flipped on purpose


def rank_drift(outcomes: Sequence[DriftOutcome]) -> list[DriftOutcome]:
    """Worst first: more features over their threshold, then a larger worst statistic (as a
    multiple of its threshold), then more ADWIN change points; ties by interval.

    Examples
    --------
    >>> a = DriftOutcome(dt.date(2018, 1, 1), 1, "drift", ("age",), "age", 1.5, 0, False)
    >>> b = DriftOutcome(dt.date(2018, 1, 2), 2, "drift", ("age", "educcat"), "educcat", 1.2, 0, False)
    >>> c = DriftOutcome(dt.date(2018, 1, 3), 3, "drift", ("age",), "age", 3.0, 1, False)
    >>> [o.run_id for o in rank_drift([a, b, c])]
    [2, 3, 1]
    """
    return sorted(outcomes, key=lambda o: (-len(o.breached), -(o.worst_ratio or 0.0),
                                           -o.change_points, o.interval))


def _evaluation_lines(model: str, evaluations: Sequence[EvaluationOutcome]) -> list[str]:
    lines = []
    for e in evaluations:
        run = f"run {e.run_id}" if e.run_id is not None else "no run recorded"
        if e.status == "passed":
            head = ("PASSED and PROMOTED to production" if e.stage == "production"
                    else f"PASSED (stage {e.stage})")
        elif e.status == "blocked":
            head = "BLOCKED by the gate, not promoted"
        else:
            head = f"{e.status.upper()}, not promoted"
        lines.append(f"  {head}: {escape_for_log(model)} {escape_for_log(e.label)} ({run})")
        lines += [f"      because {escape_for_log(r)}" for r in e.reasons]
    return lines


def _drift_line(o: DriftOutcome) -> str:
    if o.status != "drift":
        text = f"{o.status.upper()}"
    else:
        names = ", ".join(escape_for_log(n) for n in o.breached) or "-"
        text = f"DRIFT in {len(o.breached)} feature(s): {names}"
        if o.worst_feature is not None and o.worst_ratio is not None:
            text += f"; worst {escape_for_log(o.worst_feature)} at {o.worst_ratio:.1f}x its threshold"
    text += f"; {o.change_points} ADWIN change point(s)"
    return (f"      {o.interval}  run {o.run_id:<4} {text}"
            + ("  [labels flipped on purpose]" if o.simulated else ""))


def story(model: str, evaluations: Sequence[EvaluationOutcome], drifts: Sequence[DriftOutcome],
          *, where: Sequence[str]) -> list[str]:
    """The closing summary of the demo, one string per line.

    Examples
    --------
    >>> ok = EvaluationOutcome("v1", 1, "passed", "production", ())
    >>> no = EvaluationOutcome("v2", 2, "blocked", "candidate", ("fairness: gap 0.2 > 0.1",))
    >>> print("\\n".join(story("m", [ok, no], [], where=["reports: file:///r/index.html"])))
    What happened
      PASSED and PROMOTED to production: m v1 (run 1)
      BLOCKED by the gate, not promoted: m v2 (run 2)
          because fairness: gap 0.2 > 0.1
      Drift: no drift run (nothing in production to monitor, or skipped)
    Where to look
      reports: file:///r/index.html
    """
    lines = ["What happened", *_evaluation_lines(model, evaluations)]
    if drifts:
        drifted = sum(o.status == "drift" for o in drifts)
        lines.append(f"  Drift: {drifted} of {len(drifts)} interval(s) drifted; worst first "
                     "(features over their threshold, then the worst statistic / threshold):")
        lines += [_drift_line(o) for o in rank_drift(drifts)]
    else:
        lines.append("  Drift: no drift run (nothing in production to monitor, or skipped)")
    return [*lines, "Where to look", *(f"  {w}" for w in where)]
