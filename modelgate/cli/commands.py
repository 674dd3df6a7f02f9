"""The ``modelgate`` command line.

Exit codes: 0 success (or gate passed), 3 blocked by the promotion gate or drift breach,
2 usage error, 1 any other error, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). Errors
are one line on stderr; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from modelgate.cli.args import DATA_HELP, UsageError, bounded_int, data_source, refuse_nul

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BLOCKED = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM, as shells report

log = logging.getLogger("modelgate.cli")


def _print_json(payload: Any) -> None:
    json.dump(payload, sys.stdout, indent=2, sort_keys=True, default=str)
    sys.stdout.write("\n")


def _context() -> Any:
    from modelgate.pipelines.context import Context

    return Context.open()


# --- db -------------------------------------------------------------------------------

def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from modelgate.config import Settings
    from modelgate.store.db import redact_url, resolve_database_url, upgrade

    settings = Settings.from_env()
    url = resolve_database_url(settings)
    applied = upgrade(url, lock_timeout_s=settings.migration_lock_timeout_s)
    names = [f"{m.version:04d}_{m.name}" for m in applied]
    print(f"database {redact_url(url)}: applied {len(applied)} migration(s) {names}".rstrip())
    return EXIT_OK


def cmd_db_stop(args: argparse.Namespace) -> int:
    from modelgate.config import Settings
    from modelgate.store.db import stop_embedded

    home = Settings.from_env().home
    stopped = stop_embedded(home)
    print(f"embedded PostgreSQL under {home}: {'stopped' if stopped else 'not running'}")
    return EXIT_OK


# --- model ----------------------------------------------------------------------------

def cmd_model_package(args: argparse.Namespace) -> int:
    from modelgate.onnx.artifact import package

    path = package(args.onnx, args.manifest, args.out)
    print(path)
    return EXIT_OK


def cmd_model_verify(args: argparse.Namespace) -> int:
    from modelgate.logsafe import escape_for_log
    from modelgate.onnx.artifact import verify

    model = verify(args.archive)
    m = model.manifest
    print(f"OK {escape_for_log(m.name)} v{m.version} model.onnx sha256 {m.sha256} "
          f"({m.task}, {len(m.features)} features, opset {m.opset or 'none (ai.onnx.ml only)'})")
    return EXIT_OK


def cmd_model_register(args: argparse.Namespace) -> int:
    from modelgate.logsafe import escape_for_log
    from modelgate.pipelines.context import register_archive

    ctx = _context()
    row, created = register_archive(ctx, Path(args.archive))
    state = "registered" if created else "already registered"
    print(f"{state}: {escape_for_log(row.model_name)} v{row.version} as {row.stage} "
          f"(id {row.model_version_id}) at {escape_for_log(row.archive_uri)}")
    return EXIT_OK


# --- score ----------------------------------------------------------------------------

def cmd_score(args: argparse.Namespace) -> int:
    from modelgate.cli.data import score_data
    from modelgate.logsafe import escape_for_log
    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session, settings_from_os_environ

    keep = [c for c in (args.keep or "").split(",") if c]
    clash = [c for c in keep if c in ("score", "prediction") or c.startswith("proba_")]
    if clash:
        raise UsageError(f"--keep {clash}: these names are the output's own columns")
    scorer = open_session(verify(args.model), settings_from_os_environ())
    result = score_data(scorer, args.data, args.out, batch_rows=args.batch_rows,
                        id_column=scorer.manifest.id_column, keep_columns=keep)
    rate = result.rows / result.seconds if result.seconds else 0.0
    print(f"scored {result.rows} rows in {result.seconds:.2f} s ({rate:,.0f} rows/s) "
          f"on {result.provider} -> {escape_for_log(str(args.out))}")
    return EXIT_OK


# --- demo -----------------------------------------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    from modelgate.demo import run_demo

    return run_demo(Path(args.out) if args.out else None)


# --- parser ---------------------------------------------------------------------------

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modelgate", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks on errors and ONNX Runtime's warnings")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    sub = parser.add_subparsers(dest="command", required=True)

    db = sub.add_parser("db", help="results database").add_subparsers(dest="db_command", required=True)
    db.add_parser("upgrade", help="apply pending SQL migrations (idempotent)").set_defaults(
        handler=cmd_db_upgrade)
    db.add_parser("stop", help="stop the embedded PostgreSQL under MODELGATE_HOME").set_defaults(
        handler=cmd_db_stop)

    model = sub.add_parser("model", help="model artifacts").add_subparsers(
        dest="model_command", required=True)
    p = model.add_parser("package", help="build model-<sha8>-v<version>.tar.gz from ONNX + manifest")
    p.add_argument("--onnx", required=True, type=Path)
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(handler=cmd_model_package)
    p = model.add_parser("verify", help="check an archive's hash and manifest against its graph")
    p.add_argument("archive", type=Path)
    p.set_defaults(handler=cmd_model_verify)
    p = model.add_parser("register", help="store an archive and record it as a candidate")
    p.add_argument("archive", type=Path)
    p.set_defaults(handler=cmd_model_register)
    import modelgate.cli.models as cli_models

    cli_models.add_model_commands(model)
    cli_models.add_report_command(sub)

    p = sub.add_parser("score", help="score a parquet file with a model archive")
    p.add_argument("--model", required=True, type=Path)
    p.add_argument("--data", required=True, type=data_source, help=DATA_HELP)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--batch-rows", type=bounded_int(1, 2**31 - 1), default=None,
                   help="rows per batch (default 65536 on the CPU, 262144 on CUDA)")
    p.add_argument("--keep", help="comma-separated input columns copied to the output")
    p.set_defaults(handler=cmd_score)

    p = sub.add_parser("demo", help="build the GSS demo model and data, run the DAGs, show results")
    p.add_argument("--out", help="directory for demo files (default MODELGATE_HOME/demo)")
    p.set_defaults(handler=cmd_demo)

    import modelgate.cli.analysis as cli_analysis

    cli_analysis.add_commands(sub)
    import modelgate.cli.monitor as cli_monitor

    cli_monitor.add_monitor_command(sub)
    import modelgate.cli.gc as cli_gc

    cli_gc.add_gc_command(sub)
    return parser


class ProgressBarHandler(logging.StreamHandler):
    """On a terminal, records carrying ``extra={"progress": (done, total, unit)}`` redraw one
    progress bar line in place; every other record is printed as a plain line."""

    width = 30

    def emit(self, record: logging.LogRecord) -> None:
        progress = getattr(record, "progress", None)
        if progress is None:
            super().emit(record)
            return
        done, total, unit = progress
        filled = int(self.width * done / max(total, 1))
        bar = "#" * filled + "." * (self.width - filled)
        end = "\n" if done >= total else ""
        self.stream.write(f"\r[{bar}] {done:,}/{total:,} {unit} {record.getMessage()[-40:]}{end}")
        self.flush()


def _setup_logging(quiet: bool) -> None:
    from modelgate import logsafe

    logsafe.install()
    handler: logging.Handler = (ProgressBarHandler(sys.stderr) if sys.stderr.isatty()
                                else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, handlers=[handler])
    for noisy in ("urllib3", "matplotlib", "numba", "shap", "botocore", "pgserver"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    from modelgate.numpy_dispatch import prefer_avx2_sort

    prefer_avx2_sort()  # before numpy loads: its AVX-512 sort is slow on AMD Zen 4
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    _setup_logging(args.quiet)
    if args.debug:  # read by modelgate.onnx.scoring.settings_from_os_environ; an explicit value wins
        os.environ.setdefault("MODELGATE_ORT_LOG_LEVEL", "warning")
    from modelgate.pipelines.liveness import Terminated, sigterm_raises

    handler: Handler = args.handler
    try:
        refuse_nul(args)
        with sigterm_raises():
            return handler(args)
    except KeyboardInterrupt:
        print("modelgate: interrupted; any run in progress was recorded as failed", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("modelgate: terminated (SIGTERM); any run in progress was recorded as failed",
              file=sys.stderr)
        return EXIT_TERMINATED
    except UsageError as exc:
        print(f"modelgate: usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # one clear line for people; --debug for the traceback
        if args.debug:
            raise
        from modelgate.logsafe import one_line, redact_secrets

        print(f"modelgate: error: {one_line(redact_secrets(f'{type(exc).__name__}: {exc}'))}",
              file=sys.stderr)
        return EXIT_ERROR

