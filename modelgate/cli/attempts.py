"""The attempts of evaluation runs as ``modelgate model show`` prints them.

Every attempt of a run is listed under it, oldest first, with its verdict, the policy it was
judged by (source, file and the sha256 over every source), whether that policy was looser
than the model's own or the previous decided attempt's, the steps that failed after its
decision, and a link to its own report.
"""

from __future__ import annotations

from typing import Any

from modelgate.logsafe import escape_for_log


def attempts_by_run(ctx: Any, run_ids: list[int]) -> dict[int, list[Any]]:
    """:class:`~modelgate.store.attempts.AttemptLine` of each evaluation run, by run id."""
    from modelgate.store import attempts

    return attempts.attempts_of(ctx.db_url, run_ids) if run_ids else {}


def _link(ctx: Any, key: str | None) -> str | None:
    return None if key is None else str(ctx.store.link(key, expiry_s=ctx.settings.presign_expiry_s))


def attempt_records(ctx: Any, lines: list[Any]) -> list[dict[str, Any]]:
    """The attempts of one run for ``--format json``, each with its report link."""
    return [{"attempt": a.attempt, "status": a.status, "started_at": a.started_at.isoformat(),
             "summary": a.summary, "policy_source": a.policy_source,
             "policy_source_path": a.policy_source_path, "policy_sha256": a.policy_sha256,
             "policy_looser": a.looser, "looser_policy_allowed": a.looser_allowed,
             "step_failures": a.step_failures, "report_link": _link(ctx, a.report_key)}
            for a in lines]


def attempt_text(ctx: Any, a: Any) -> list[str]:
    """An attempt's lines of text output (terminal-safe).

    >>> import datetime as dt
    >>> from modelgate.store.attempts import AttemptLine
    >>> line = AttemptLine(3, 2, "passed", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "PASSED",
    ...                    "model_file", "/p/churn.yaml", "ab" * 32, True, True, None, [])
    >>> attempt_text(None, line)
    ['attempt 2: passed   policy model_file /p/churn.yaml sha256 abababababab (LOOSER, allowed)']
    """
    policy = ("policy not recorded" if a.policy_source is None else
              f"policy {a.policy_source} {a.policy_source_path}"
              + (f" sha256 {a.policy_sha256[:12]}" if a.policy_sha256 else ""))
    if a.looser:
        policy += " (LOOSER, allowed)" if a.looser_allowed else " (LOOSER)"
    lines = [f"attempt {a.attempt}: {a.status:<8} {policy}"]
    lines += [f"  after the decision: {failure}" for failure in a.step_failures]
    link = _link(ctx, a.report_key)
    if link:
        lines.append(f"  report: {link}")
    return [escape_for_log(line) for line in lines]
