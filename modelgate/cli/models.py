"""``modelgate model list | show | retire | rollback`` and ``modelgate report link``: the registry
and its reports without SQL.

Text output escapes control characters in every stored string (names, versions, reasons come
from users; see :mod:`modelgate.logsafe`), so a name cannot repaint the terminal. Usage errors
print one line and exit 2, like ``evaluate``'s (see :mod:`modelgate.cli.analysis` for why they
are not raised as ``modelgate.cli.UsageError``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import getpass
import json
import sys
from typing import Any

import modelgate.cli.attempts as cli_attempts
from modelgate.cli.args import bounded_int
from modelgate.logsafe import escape_for_log

EXIT_OK, EXIT_USAGE = 0, 2
#: Largest run id or count the database's bigint columns and LIMIT take.
MAX_ID = 2**63 - 1


def _context() -> Any:
    from modelgate.pipelines.context import Context

    return Context.open()


def _usage(message: str) -> int:
    print(f"modelgate: usage error: {escape_for_log(message)}", file=sys.stderr)
    return EXIT_USAGE


def _t(value: object) -> str:
    """A stored value as terminal-safe text; '-' for nothing."""
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return escape_for_log(str(value))


def _record(row: Any) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, dt.datetime) else v
            for k, v in dataclasses.asdict(row).items()}


def _print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def _latest(v: Any) -> str:
    if v.latest_evaluation_status is None:
        return "never evaluated"
    return str(v.latest_evaluation_status)


# --- model list -----------------------------------------------------------------------

def cmd_model_list(args: argparse.Namespace) -> int:
    from modelgate.store import models

    versions = models.list_versions(_context().db_url)
    if args.format == "json":
        _print_json([_record(v) for v in versions])
        return EXIT_OK
    if not versions:
        print("no model registered yet (modelgate model register ARCHIVE)")
        return EXIT_OK
    print(f"{'model':<24} {'version':<8} {'stage':<11} {'drifting':<8} {'evals':>5} "
          f"{'latest evaluation':<17} {'drift runs':>10}  registered")
    for v in versions:
        print(f"{_t(v.model_name):<24} {_t(v.version):<8} {v.stage:<11} "
              f"{'yes' if v.is_drifting else 'no':<8} {v.evaluation_runs:>5} {_latest(v):<17} "
              f"{v.drift_runs:>10}  {_t(v.registered_at)}")
    return EXIT_OK


# --- model show -----------------------------------------------------------------------

def cmd_model_show(args: argparse.Namespace) -> int:
    from modelgate.store import models, rollbacks

    ctx = _context()
    versions = models.list_versions(ctx.db_url, args.name, args.version)
    if not versions:
        what = f"model {args.name!r}" + (f" version {args.version!r}" if args.version else "")
        raise models.RegistryError(f"{what} is not registered (modelgate model list shows what is)")
    runs = models.runs_of(ctx.db_url, args.name, args.version, limit=args.runs)
    links = {(r.kind, r.run_id): _report_link(ctx, r.kind, r.run_id) for r in runs if r.has_report}
    rolled = rollbacks.history(ctx.db_url, args.name, args.version)
    tried = cli_attempts.attempts_by_run(ctx, [r.run_id for r in runs if r.kind == "evaluation"])
    if args.format == "json":
        _print_json({"versions": [_record(v) for v in versions],
                     "runs": [{**_record(r), "breaches": [_shown(r.kind, b) for b in r.breaches],
                               "report_link": links.get((r.kind, r.run_id)),
                               **({"attempts": cli_attempts.attempt_records(ctx, tried.get(r.run_id, []))}
                                  if r.kind == "evaluation" else {})} for r in runs],
                     "rollbacks": [_record(r) for r in rolled]})
        return EXIT_OK
    for v in versions:
        _print_version(v)
    if rolled:
        print("rollbacks (oldest first):")
    for rb in rolled:
        print(f"  {_t(rb.rolled_back_at)} v{_t(rb.from_version)} -> v{_t(rb.to_version)} by "
              f"{_t(rb.rolled_back_by)}: {_t(rb.reason)} (passed evaluation run {rb.evaluation_run_id})")
    print(f"runs (newest first, at most {args.runs} of each kind):" if runs else "no runs yet")
    for r in runs:
        when = f"interval {r.interval_start:%Y-%m-%d}" if r.interval_start else _t(r.started_at)
        print(f"  {r.kind:<10} {r.run_id:>6}  v{_t(r.version):<6} {r.status:<9} {when}")
        if r.detail:
            print(f"      {_t(r.detail)}")
        for line in r.breaches:
            print(f"      {'BLOCK' if r.kind == 'evaluation' else 'DRIFT'} {_t(_shown(r.kind, line))}")
        if (r.kind, r.run_id) in links:
            print(f"      report: {links[(r.kind, r.run_id)]}")
        for attempt in tried.get(r.run_id, []) if r.kind == "evaluation" else []:
            print("\n".join(f"      {line}" for line in cli_attempts.attempt_text(ctx, attempt)))
    return EXIT_OK


def _shown(kind: str, text: str) -> str:
    """A run's breach line as people read it: a drift line's feature as
    :func:`~modelgate.pipelines.drift.names.shown_feature` names it (the model's output score as
    "model score", a feature that could be mistaken for it quoted); evaluation lines as stored."""
    from modelgate.pipelines.drift.names import shown_feature

    if kind != "drift":
        return text
    head, sep, rest = text.partition(": ")
    return shown_feature(head) + sep + rest


def _print_version(v: Any) -> None:
    print(f"{_t(v.model_name)} v{_t(v.version)}: {v.stage}"
          + (" (drifting)" if v.is_drifting else "")
          + f"; registered {_t(v.registered_at)}, stage since {_t(v.stage_changed_at)}")
    print(f"  model.onnx sha256 {v.sha256}")
    if v.latest_evaluation_status is not None:
        print(f"  latest decision: {v.latest_evaluation_status}"
              + (f" ({_t(v.latest_gate_summary)})" if v.latest_gate_summary else ""))
    else:
        print("  latest decision: never evaluated")
    if v.stage == "retired":
        print(f"  retired {_t(v.retired_at)} by {_t(v.retired_by)}: {_t(v.retired_reason)}")
    print(f"  {v.evaluation_runs} evaluation run(s), {v.drift_runs} drift run(s)")


# --- model retire ---------------------------------------------------------------------

def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (some containers)
        return "unknown"


def cmd_model_retire(args: argparse.Namespace) -> int:
    from modelgate.store import models

    by = args.by if args.by is not None else _os_user()
    if not args.reason.strip() or not by.strip():
        return _usage("--reason and --by must not be empty: a retirement says who and why")
    ctx = _context()
    before = models.find(ctx.db_url, args.name, args.version)
    if before is None:
        raise models.RegistryError(f"model {args.name!r} version {args.version!r} is not registered")
    if before.stage not in ("candidate", "retired"):
        return _usage(f"model {args.name!r} version {args.version!r} is {before.stage!r}; only a "
                      "candidate can be retired"
                      + (" (promote another version first)" if before.stage == "production" else ""))
    record, changed = models.retire(ctx.db_url, args.name, args.version, by=by, reason=args.reason)
    state = "retired" if changed else "already retired"
    print(f"{state}: {_t(record.model_name)} v{_t(record.version)} at {_t(record.retired_at)} "
          f"by {_t(record.retired_by)}: {_t(record.retired_reason)}")
    return EXIT_OK


# --- model rollback -------------------------------------------------------------------

def cmd_model_rollback(args: argparse.Namespace) -> int:
    from modelgate.cli.rollback import RollbackRefused, roll_back

    by = args.by if args.by is not None else _os_user()
    if not args.reason.strip() or not by.strip():
        return _usage("--reason and --by must not be empty: a rollback says who and why")
    try:
        outcome = roll_back(_context(), args.name, args.to, by=by, reason=args.reason)
    except RollbackRefused as exc:
        return _usage(str(exc))
    rb = outcome.record
    print(f"rolled back: {_t(rb.model_name)} v{_t(rb.from_version)} -> v{_t(rb.to_version)} "
          f"(production; v{_t(rb.from_version)} archived) at {_t(rb.rolled_back_at)} by "
          f"{_t(rb.rolled_back_by)}: {_t(rb.reason)}; it passed evaluation run {rb.evaluation_run_id}"
          + ("; its drift reference sketch is in place" if outcome.sketched else ""))
    return EXIT_OK


# --- report link ----------------------------------------------------------------------

def _report_link(ctx: Any, kind: str, run_id: int) -> str | None:
    from modelgate.store import models

    key = models.report_key(ctx.db_url, kind, run_id)
    return None if key is None else str(ctx.store.link(key, expiry_s=ctx.settings.presign_expiry_s))


def cmd_report_link(args: argparse.Namespace) -> int:
    from modelgate.store import models

    ctx = _context()
    key = models.report_key(ctx.db_url, args.kind, args.run_id)
    if key is None:
        raise LookupError(f"{args.kind} run {args.run_id} has no report (it failed or is still "
                          "running; modelgate model show NAME lists its runs)")
    if not ctx.store.exists(key):  # a presigned link to nothing would only fail in the browser
        raise LookupError(f"the report of {args.kind} run {args.run_id} is missing from the object "
                          f"store ({ctx.store.uri(key)})")
    print(ctx.store.link(key, expiry_s=ctx.settings.presign_expiry_s))
    return EXIT_OK


# --- parser ---------------------------------------------------------------------------

def add_model_commands(model: Any) -> None:
    """``list``, ``show``, ``retire`` and ``rollback`` under ``modelgate model``."""
    p = model.add_parser("list", help="every registered version: stage, runs, latest evaluation")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_model_list)
    p = model.add_parser("show", help="a model's versions, latest decisions, runs and report links")
    p.add_argument("name")
    p.add_argument("version", nargs="?", default=None)
    p.add_argument("--runs", type=bounded_int(1, MAX_ID), default=20,
                   help="newest runs of each kind shown (20)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_model_show)
    p = model.add_parser("retire", help="retire a candidate that will never be promoted (kept, "
                                        "recorded with who, when and why)")
    p.add_argument("name")
    p.add_argument("version")
    p.add_argument("--reason", required=True, help="why it is retired (stored)")
    p.add_argument("--by", default=None, help="who retires it (default: the OS user)")
    p.set_defaults(handler=cmd_model_retire)
    p = model.add_parser("rollback", help="return production to an earlier (archived) version that "
                                          "passed its gate; recorded with who, when and why")
    p.add_argument("name")
    p.add_argument("--to", required=True, metavar="VERSION", help="the archived version to restore")
    p.add_argument("--reason", required=True, help="why production goes back (stored)")
    p.add_argument("--by", default=None, help="who rolls back (default: the OS user)")
    p.set_defaults(handler=cmd_model_rollback)


def add_report_command(sub: Any) -> None:
    """``modelgate report link RUN_ID``."""
    report = sub.add_parser("report", help="HTML reports").add_subparsers(
        dest="report_command", required=True)
    p = report.add_parser("link", help="print a fresh link to a run's report (presigned on S3, "
                                       "file:// with the local store)")
    p.add_argument("run_id", type=bounded_int(1, MAX_ID))
    p.add_argument("--kind", choices=("evaluation", "drift"), default="evaluation",
                   help="evaluation and drift runs are numbered apart (default evaluation)")
    p.set_defaults(handler=cmd_report_link)
