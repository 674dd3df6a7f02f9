"""``modelgate monitor``: which production models the drift DAG watches, and with what data."""

from __future__ import annotations

import argparse
import json
from typing import Any

from modelgate.cli.args import as_usage_error, bounded_int, interval_start, json_object, reclaim_logging
from modelgate.logsafe import escape_for_log as shown


def _context() -> Any:
    from modelgate.pipelines.context import Context

    return Context.open()


def _lines(text: str) -> str:
    """``text`` with each line made safe to print, its line breaks kept (a breach a line)."""
    return "\n".join(shown(line) for line in text.splitlines())


def cmd_monitor_set(args: argparse.Namespace) -> int:
    from modelgate.pipelines.drift.monitor import check_monitor_args, set_monitor

    ctx = _context()
    options = {"live": args.live, "labels": args.labels, "reference": args.reference,
               "sample_rows": args.sample_rows, "thresholds": args.thresholds}
    with as_usage_error():  # the same check set_monitor makes, before any work
        check_monitor_args(ctx, args.name, **options)
    config, created = set_monitor(ctx, args.name, **options)
    print(f"{'monitoring' if created else 'updated monitoring of'} {shown(config.model_name)}: "
          f"live {shown(config.live_uri)}, labels {shown(config.labels_uri)}, "
          f"reference {shown(config.reference_uri)}, {config.sample_rows} sampled rows per interval")
    _print_estimator(ctx, config.model_name)
    return 0


def _print_estimator(ctx: Any, model_name: str) -> None:
    """Say when the production version has no performance estimator, and why (issue #39.4)."""
    from modelgate.store import estimation, models

    production = models.get_production(ctx.db_url, model_name)
    stored = None if production is None else estimation.get_reference(ctx.db_url,
                                                                       production.model_version_id)
    if stored is not None and stored.skipped_reason:
        print(f"  {shown(model_name)} v{shown(production.version) if production else '-'}: no "
              f"performance estimate: {shown(stored.skipped_reason)}")


def _last_run(last: Any) -> str:
    """``drift: educcat 8.9x`` — the latest run's status and its worst feature as a multiple
    of its threshold (:func:`modelgate.drift.threshold_multiple.worst_first`, the drift
    report's and the demo summary's "worst"); ``-`` before any run."""
    if last is None:
        return "-"
    if last.worst_feature is None or last.worst_ratio is None:
        return shown(last.status)
    from modelgate.pipelines.drift.names import shown_feature

    return f"{shown(last.status)}: {shown(shown_feature(last.worst_feature))[:18]} {last.worst_ratio:.1f}x"


def cmd_monitor_list(args: argparse.Namespace) -> int:
    from modelgate.store import models, monitors, summaries

    ctx = _context()
    configs = monitors.list_all(ctx.db_url)
    if args.format == "json":
        print(json.dumps([c.to_record() for c in configs], indent=2, sort_keys=True))
        return 0
    print(f"{'model':<24} {'production':<11} {'rows':>6}  {'last run (worst feature)':<34} live | labels")
    for c in configs:
        production = models.get_production(ctx.db_url, c.model_name)
        version = f"v{production.version}" if production else "-"
        last = (summaries.latest_drift_interval(ctx.db_url, production.model_version_id)
                if production else None)
        print(f"{shown(c.model_name)[:24]:<24} {shown(version):<11} {c.sample_rows:>6}  "
              f"{_last_run(last):<34} {shown(c.live_uri)} | {shown(c.labels_uri)}")
        _print_estimator(ctx, c.model_name)
    if not configs:
        print("(no model is monitored; `modelgate monitor set NAME --live URI --labels URI`)")
    return 0


def cmd_monitor_unset(args: argparse.Namespace) -> int:
    from modelgate.store import monitors

    if not monitors.delete(_context().db_url, args.name):
        raise LookupError(f"model {args.name!r} is not monitored (see `modelgate monitor list`)")
    print(f"stopped monitoring {shown(args.name)} (its drift history is kept)")
    return 0


def cmd_monitor_retry(args: argparse.Namespace) -> int:
    from modelgate.pipelines.drift.feature_steps import DriftBreached
    from modelgate.pipelines.drift.runner import retry_interval

    reclaim_logging()  # the run imports Airflow: its log stays on stderr
    ctx = _context()
    try:
        verdict = retry_interval(ctx, args.name, args.interval)
    except DriftBreached as exc:
        print(_lines(str(exc)))
        return 3
    _print_verdict(ctx, args, verdict)
    return 0


def cmd_monitor_run(args: argparse.Namespace) -> int:
    import os

    from modelgate.pipelines.drift.feature_steps import DriftBreached
    from modelgate.pipelines.drift.runner import retry_interval

    schedule = os.environ.get("MODELGATE_DRIFT_SCHEDULE", "@daily")  # the drift DAG's
    reclaim_logging()  # the run imports Airflow: its log stays on stderr
    ctx = _context()
    try:
        verdict = retry_interval(ctx, args.name, args.interval, first_run_schedule=schedule)
    except DriftBreached as exc:
        print(_lines(str(exc)))
        return 3
    _print_verdict(ctx, args, verdict)
    return 0


def _print_verdict(ctx: Any, args: argparse.Namespace, verdict: str) -> None:
    """The attempt's verdict, and the interval's when it kept an earlier one made on data."""
    from modelgate.store import drift_attempts

    print(f"{shown(args.name)} over the interval starting {args.interval.isoformat()}: {verdict}")
    kept = drift_attempts.kept_in_interval(ctx.db_url, args.name, args.interval)
    if kept is not None:
        attempt, status, current, current_verdict = kept
        print(f"  attempt {attempt} ended {status}: the interval keeps attempt {current}'s verdict "
              f"{current_verdict}, made on data (analytics.drift_attempts lists every attempt)")


def add_monitor_command(sub: Any) -> None:
    p = sub.add_parser("monitor", help="configure drift monitoring of production models")
    msub = p.add_subparsers(dest="monitor_command", required=True)
    s = msub.add_parser("set", help="monitor a model (builds the reference sketch now)")
    s.add_argument("name", help="model name (every version promoted to production is watched)")
    s.add_argument("--live", required=True, help="live partitions dt=YYYY-MM-DD: directory or s3://")
    s.add_argument("--labels", required=True, help="label partitions, joined by the manifest's id_column")
    s.add_argument("--reference", help="reference parquet (default: the production version's "
                                       "latest evaluation dataset)")
    s.add_argument("--sample-rows", type=bounded_int(1), default=5000,
                   help="live rows sampled per interval (the upper bound is checked with the rest)")
    s.add_argument("--thresholds", type=json_object, default={},
                   help='drift thresholds as JSON, e.g. {"relative": 1.8}')
    s.set_defaults(handler=cmd_monitor_set)
    lst = msub.add_parser("list", help="the monitored models")
    lst.add_argument("--format", choices=("text", "json"), default="text")
    lst.set_defaults(handler=cmd_monitor_list)
    u = msub.add_parser("unset", help="stop monitoring a model")
    u.add_argument("name")
    u.set_defaults(handler=cmd_monitor_unset)
    r = msub.add_parser("retry", help="reprocess one interval (e.g. a quarantined labels partition)")
    r.add_argument("name")
    r.add_argument("--interval", required=True, type=interval_start,
                   help="start of the data interval (ISO 8601)")
    r.set_defaults(handler=cmd_monitor_retry)
    run = msub.add_parser("run", help="run one interval now, read before or not (a back-fill by hand)")
    run.add_argument("name")
    run.add_argument("--interval", required=True, type=interval_start,
                     help="start of the data interval (ISO 8601) of MODELGATE_DRIFT_SCHEDULE "
                          "(default @daily, UTC)")
    run.set_defaults(handler=cmd_monitor_run)
