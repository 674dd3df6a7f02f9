"""``modelgate drift``: data drift between two parquet files, and ADWIN on an error stream.

Exit code 3 when any feature breaches its threshold, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from modelgate.cli.args import UsageError, bounded_int, open_interval
from modelgate.cli.json_records import change_points_json, feature_drift_json
from modelgate.logsafe import escape_for_log
from modelgate.logsafe import escape_for_log as shown

EXIT_OK, EXIT_DRIFT = 0, 3


def infer_feature_kinds(path: Path, exclude: set[str]) -> dict[str, Any]:
    """Numeric columns are numeric features, string/bool/dictionary columns categorical."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds: dict[str, Any] = {}
    for field in pq.read_schema(path):
        if field.name in exclude:
            continue
        t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            kinds[field.name] = "numeric"
        elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_boolean(t):
            kinds[field.name] = "categorical"
    return kinds


# An id is a name, not a measurement: its drift says only that new rows came.
_ID_COLUMN = re.compile(r"(?i)^(id|.*[_-]id|uuid)$")


def left_out_columns(reference: Path, current: Path, named: dict[str, str]) -> dict[str, str]:
    """Columns of ``reference`` that are not features, each with why: pandas index columns
    (``__index_level_0__`` and named indexes, from the file's pandas metadata), id columns
    (``id``, ``*_id``), the columns ``named`` gives (label and prediction) and columns missing
    from ``current`` (a label that arrives later)."""
    import pyarrow.parquet as pq

    ref_schema, cur_names = pq.read_schema(reference), set(pq.read_schema(current).names)
    index = {c for c in (ref_schema.pandas_metadata or {}).get("index_columns", [])
             if isinstance(c, str)}  # a RangeIndex is stored as a dict and has no column
    why: dict[str, str] = {}
    for name in ref_schema.names:
        if name in named:
            why[name] = named[name]
        elif name in index or name.startswith("__index_level_"):
            why[name] = "pandas index"
        elif _ID_COLUMN.match(name):
            why[name] = "id column"
        elif name not in cur_names:
            why[name] = "not in the current file"
    return why


def choose_features(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The features to compare and a line saying how they were chosen: the manifest's with
    ``--model``, else every numeric or string column that is not an index, id or label."""
    if args.model is not None:
        from modelgate.onnx.artifact import verify

        manifest = verify(args.model).manifest
        kinds: dict[str, Any] = {f.name: f.kind for f in manifest.features}
        how = f"features of {escape_for_log(manifest.name)} v{escape_for_log(manifest.version)}"
    else:
        named = {c: why for c, why in ((args.label, "--label"), (args.prediction, "--prediction")) if c}
        skipped = left_out_columns(args.reference, args.current, named)
        kinds = infer_feature_kinds(args.reference, set(skipped))
        how = "inferred; --model ARCHIVE or --features to choose"
        if skipped:
            how += "; left out: " + ", ".join(f"{escape_for_log(c)} ({why})" for c, why in skipped.items())
    if args.features:
        wanted = [f for f in args.features.split(",") if f]
        unknown = [f for f in wanted if f not in kinds]
        if unknown:
            source = "features of the model" if args.model else \
                f"numeric or string columns of {str(args.reference)!r}"
            raise UsageError(f"--features {unknown} are not {source}")
        return {f: kinds[f] for f in wanted}, "features given by --features"
    return kinds, how


def _adwin(path: Path, label: str, prediction: str, delta: float) -> list[dict[str, Any]]:
    import numpy as np
    import pyarrow.parquet as pq

    from modelgate.drift import AdwinDetector

    table = pq.read_table(path, columns=[label, prediction]).to_pandas()
    for column in (label, prediction):
        if table[column].isna().any():
            raise ValueError(f"column {column!r} has missing values; ADWIN needs every row labelled")
    errors = (table[label].to_numpy() != table[prediction].to_numpy()).astype(np.float64)
    return change_points_json(cp.to_record() for cp in AdwinDetector(delta=delta).update_many(errors))


def cmd_drift(args: argparse.Namespace) -> int:
    from modelgate.drift import summarise
    from modelgate.pipelines.drift.columns import build_references_from_parquet, drift_from_parquet

    if (args.label is None) != (args.prediction is None):
        raise UsageError("--label and --prediction go together (ADWIN needs both)")
    kinds, how = choose_features(args)
    if not args.quiet:  # on stderr, so the JSON on stdout stays one document
        print(f"modelgate drift: comparing {', '.join(escape_for_log(k) for k in kinds)} ({how})",
              file=sys.stderr)
    references = build_references_from_parquet(args.reference, kinds, bins=args.bins)
    summary = summarise(drift_from_parquet(args.current, references))
    if all(f.n_current + f.n_missing_current == 0 for f in summary.features):
        # as an empty reference is refused: "0 feature(s) breached" would read as no drift
        raise ValueError(f"current file {os.fspath(args.current)!r} has no rows: nothing to "
                         "compare with the reference")
    payload: dict[str, Any] = {
        "n_breached": summary.n_breached, "breached": list(summary.breached),
        "no_data": list(summary.no_data),
        "features": [feature_drift_json(f.to_record()) for f in summary.features],
        "adwin": None,
    }
    if args.label:
        payload["adwin"] = {"delta": args.delta,
                            "changes": _adwin(args.current, args.label, args.prediction, args.delta)}
    _add_estimates_and_quality(args, kinds, payload)
    if args.format == "json":
        json.dump(payload, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        _print_text(payload)
    return EXIT_DRIFT if summary.n_breached else EXIT_OK


def _add_estimates_and_quality(args: argparse.Namespace, kinds: dict[str, Any],
                                payload: dict[str, Any]) -> None:
    """Data quality and estimated performance (labelled reference) with ``--model``; quality
    alone with ``--quality``. Without either, nothing here runs: they read the files with pandas,
    which the plain drift run does without (see tests/cli/test_cli_drift.py)."""
    payload["quality"], payload["estimated_performance"] = None, None
    payload["estimate_skipped"] = "no --model"
    if args.model is None and not args.quality:
        return
    from modelgate.cli.drift_estimates import estimates_json, quality_json

    payload["quality"] = quality_json(args.reference, args.current, kinds)
    if args.model is not None:
        from modelgate.evaluation import LabelError
        from modelgate.onnx.scoring import ScoringError

        try:
            section, why = estimates_json(args.model, args.reference, args.current)
        except (ScoringError, LabelError) as exc:  # the drift result stands without estimates
            section, why = None, f"scoring or labels failed: {exc}"
        payload["estimated_performance"] = section
        payload["estimate_skipped"] = None if section is not None else why


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _print_text(payload: dict[str, Any]) -> None:
    print(f"{'feature':<24} {'kind':<12} {'W':>10} {'W/scale':>10} {'JS':>8} {'thresh':>8}  verdict")
    for f in payload["features"]:
        print(f"{shown(f['feature'])[:24]:<24} {f['kind']:<12} {_fmt(f['wasserstein']):>10} "
              f"{_fmt(f['wasserstein_normalised']):>10} {_fmt(f['js_divergence_base2']):>8} "
              f"{_fmt(f['threshold']):>8}  {f['verdict']}")
    print(f"{payload['n_breached']} feature(s) breached: {', '.join(map(shown, payload['breached'])) or '-'}")
    if payload["adwin"] is not None:
        changes = payload["adwin"]["changes"]
        print(f"ADWIN change positions: {[c['position'] for c in changes] or 'none'}")
    if payload["quality"] is not None:
        from modelgate.cli.drift_estimates import print_estimates_text, print_quality_text

        print_quality_text(payload["quality"], shown)
        print_estimates_text(payload["estimated_performance"], payload["estimate_skipped"])


def add_drift_command(sub: Any) -> None:
    p = sub.add_parser("drift", help="per-feature drift between a reference and a current parquet")
    p.add_argument("--reference", required=True, type=Path)
    p.add_argument("--current", required=True, type=Path)
    p.add_argument("--model", type=Path, help="model archive whose manifest names the features")
    p.add_argument("--features", help="comma-separated columns (default: the --model's features, "
                                      "else numeric/string columns but index, id and label)")
    p.add_argument("--label", help="label column of the current file (for ADWIN)")
    p.add_argument("--prediction", help="prediction column of the current file (for ADWIN)")
    p.add_argument("--delta", type=open_interval(0.0, 1.0), default=0.002,
                   help="ADWIN confidence (default 0.002)")
    p.add_argument("--bins", type=bounded_int(1), default=10,
                   help="reference-quantile bins for numeric JS")
    p.add_argument("--quality", action="store_true",
                   help="data-quality table without --model (--model always adds it)")
    p.add_argument("--format", choices=("json", "text"), default="text")
    p.set_defaults(handler=cmd_drift)
