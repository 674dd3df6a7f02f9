"""``modelgate gc``: delete the ``runs/`` intermediates of runs that ended long enough ago, and
retry the index page and gauge writes that failed after a stored decision."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Any

from modelgate.cli.args import bounded_number

#: Longest retention ``--older-than-days`` takes (100 years; a timedelta stops near 2.7 million).
MAX_DAYS = 36_500


def cmd_gc(args: argparse.Namespace) -> int:
    from modelgate.cli.retention import collect_runs
    from modelgate.pipelines.context import Context
    from modelgate.pipelines.evaluation.attempts import Retried, retry_pending

    ctx = Context.open()
    done = collect_runs(ctx, retention=dt.timedelta(days=args.older_than_days), dry_run=args.dry_run)
    retried = Retried(0, 0) if args.dry_run else retry_pending(ctx, by="gc")
    if args.format == "json":
        json.dump({**done.to_record(), "step_failures_retried": retried.retried,
                   "step_failures_left": retried.left}, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(f"{'would delete' if done.dry_run else 'deleted'} {done.deleted} runs/ object(s) of "
              f"{done.runs} evaluation run(s) and drift interval(s) that ended over "
              f"{args.older_than_days:g} day(s) ago; kept {done.kept_referenced} a stored row points to")
        if retried.retried or retried.left:
            print(f"retried {retried.retried} index page/gauge write(s) that failed after a stored "
                  f"decision; {retried.left} still failing")
    return 0


def add_gc_command(sub: Any) -> None:
    p = sub.add_parser("gc", help="delete runs/ intermediates of evaluation and drift runs that ended "
                                  "over --older-than-days ago (never what a stored row points to); "
                                  "retry index pages and gauges that failed after a decision")
    p.add_argument("--older-than-days", type=bounded_number(0, MAX_DAYS), default=7.0,
                   help="retention in days after a run ended (default 7; 0: every ended run; "
                        f"at most {MAX_DAYS:,})")
    p.add_argument("--dry-run", action="store_true", help="count, delete nothing")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_gc)
