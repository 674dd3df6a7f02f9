"""``modelgate gc``: delete the ``runs/`` intermediates of runs that ended long enough ago."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Any


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"--older-than-days must be a number >= 0, got {text!r}")
    return value


def cmd_gc(args: argparse.Namespace) -> int:
    from modelgate.pipelines.context import Context
    from modelgate.pipelines.retention import collect_runs

    done = collect_runs(Context.open(), retention=dt.timedelta(days=args.older_than_days),
                        dry_run=args.dry_run)
    if args.format == "json":
        json.dump(done.to_record(), sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(f"{'would delete' if done.dry_run else 'deleted'} {done.deleted} runs/ object(s) of "
              f"{done.runs} evaluation run(s) and drift interval(s) that ended over "
              f"{args.older_than_days:g} day(s) ago; kept {done.kept_referenced} a stored row points to")
    return 0


def add_gc_command(sub: Any) -> None:
    p = sub.add_parser("gc", help="delete runs/ intermediates of evaluation and drift runs that ended "
                                  "over --older-than-days ago (never what a stored row points to)")
    p.add_argument("--older-than-days", type=_days, default=7.0,
                   help="retention in days after a run ended (default 7; 0: every ended run)")
    p.add_argument("--dry-run", action="store_true", help="count, delete nothing")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_gc)
