"""Analysis commands of the CLI: ``evaluate``, ``explain``, ``fairness`` and ``drift``.

JSON output (``--format json``) is documented in the README; numbers that are undefined
(for example AUC on a one-class label) are ``null`` with a reason beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from modelgate.cli.args import DATA_HELP, UsageError, bounded_int, data_source
from modelgate.cli.json_records import fairness_json
from modelgate.logsafe import escape_for_log as shown

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BLOCKED = 0, 1, 2, 3
#: Most bootstrap resamples ``fairness --bootstrap`` takes: each is a table per group, drawn
#: at once, so memory grows with it (the pipeline uses 1,000).
MAX_BOOTSTRAP = 100_000


def _emit(payload: dict[str, Any], fmt: str, text: str) -> None:
    if fmt == "json":
        json.dump(payload, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text.rstrip() + "\n")


# --- evaluate ----------------------------------------------------------------------------

def cmd_evaluate(args: argparse.Namespace) -> int:
    from modelgate.cli.runs import run_evaluation_locally
    from modelgate.pipelines.evaluation.policy_provenance import LooserPolicyRefused

    if args.policy:
        _check_policy_argument(args.policy)
    try:
        outcome = run_evaluation_locally(Path(args.model), args.data,
                                         args.policy and Path(args.policy), promote=args.promote,
                                         allow_looser_policy=args.allow_looser_policy,
                                         segments=args.segments, segment_pairs=args.segment_pairs)
    except LooserPolicyRefused as exc:  # a usage error; the run row says failed, with this reason
        # printed here, not raised as modelgate.cli.UsageError (kept from when
        # `python -m modelgate.cli` ran that module as __main__, where a second import's
        # class would not have been caught)
        print(f"modelgate: usage error: policy {exc.source_path} is looser than {exc.against} "
              f"on blocking checks: {'; '.join(exc.checks)}; add --allow-looser-policy to "
              "promote under it (recorded with the run)", file=sys.stderr)
        return EXIT_USAGE
    _emit(outcome.payload, args.format, outcome.text)
    return EXIT_OK if outcome.payload["gate"]["passed"] else EXIT_BLOCKED


def segment_columns(text: str) -> tuple[str, ...]:
    """``--segments a,b``: the column names, each once, none empty.

    >>> segment_columns("region, device")
    ('region', 'device')
    """
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",")))
    if not names or any(not n for n in names):
        raise argparse.ArgumentTypeError(f"expected column names separated by commas; got {text!r}")
    return names


def _check_policy_argument(path: str) -> None:
    """A ``--policy`` file that is missing or malformed is a usage error (exit 2) naming it,
    raised before any work."""
    from modelgate.evaluation import load_policy

    try:
        load_policy(Path(path))
    except (OSError, ValueError) as exc:  # PolicyError and a file that is not UTF-8 are ValueErrors
        raise UsageError(f"--policy {path!r}: {exc}") from exc


# --- explain -----------------------------------------------------------------------------

def cmd_explain(args: argparse.Namespace) -> int:
    import numpy as np

    from modelgate.cli.data import read_table
    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session, settings_from_os_environ

    loaded = verify(args.model)
    scorer = open_session(loaded, settings_from_os_environ())
    features = list(scorer.feature_names)
    frame, id_column = _read_with_ids(args.data, features, scorer.manifest.id_column, read_table)
    if len(frame) == 0:
        raise ValueError(f"data {args.data!r} has no rows")
    rng = np.random.default_rng(args.seed)
    background = frame.iloc[np.sort(rng.choice(len(frame), min(args.background, len(frame)),
                                               replace=False))]
    rows = frame.iloc[: args.rows]
    if len(frame) < args.background:
        # a value is the row's difference from the background: one that holds the explained
        # rows themselves says little (one row: every value 0), and nothing else says so
        print(f"modelgate explain: the background is all {len(frame)} row(s) of --data (asked "
              f"for {args.background}), the explained rows among them (one row: every value "
              "0); pass more rows for a background", file=sys.stderr)
    exp, explained, note = _explain_for_task(scorer, loaded.onnx_bytes, rows, background, features, args)
    payload = {
        "features": list(exp.features), "algorithm": exp.algorithm, "algorithm_note": note,
        "output": exp.output, "output_space": exp.output,  # "output" kept for older readers
        "base_values": exp.base_values.tolist(), "values": exp.values.tolist(),
        "model_output": exp.model_output.tolist(), "standard_errors": exp.standard_errors.tolist(),
        "budget": {"evaluations_per_row": exp.budget.evaluations_per_row,
                   "n_permutations": exp.budget.n_permutations,
                   "background_size": exp.budget.background_size},
    }
    if explained is not None:  # multiclass: the class whose probability each row explains
        payload["explained_class"] = explained
    # rows named by the manifest's id_column when the data has it, else by 0-based position
    payload["id_column"] = id_column
    payload["row_ids"] = None if id_column is None else rows[id_column].tolist()
    names = ([f"row {i}" for i in range(len(rows))] if id_column is None
             else [f"{id_column} {v}" for v in payload["row_ids"]])
    lines = [f"{exp.algorithm} SHAP of {len(rows)} row(s) ({exp.output}), base value "
             f"{exp.base_values[0]:.4f}" + (f"; {note}" if note else "")]
    for i in range(len(rows)):
        top = sorted(zip(exp.features, exp.values[i], exp.standard_errors[i], strict=True),
                     key=lambda t: -abs(t[1]))[:5]
        what = "" if explained is None else f" (class {shown(str(explained[i]))})"
        lines.append(f"{shown(names[i])}{what}: output {exp.model_output[i]:.4f}; " + ", ".join(
            f"{shown(f)} {v:+.4f}" + ("" if exp.algorithm != "permutation" else f" +/- {se:.4f}")
            for f, v, se in top))
    _emit(payload, args.format, "\n".join(lines))
    return EXIT_OK


def _read_with_ids(data: str, features: list[str], id_column: str | None,
                   read_table: Any) -> tuple[Any, str | None]:
    """The features and, when the data has it, the manifest's ``id_column`` (None otherwise)."""
    import pyarrow as pa

    if id_column and id_column not in features:
        try:
            return read_table(data, [*features, id_column]).to_pandas(), id_column
        except pa.ArrowInvalid:  # no such column: read the features alone, their errors as usual
            pass
    return read_table(data, features).to_pandas(), (id_column if id_column in features else None)


def _explain_for_task(scorer: Any, onnx_bytes: bytes, rows: Any, background: Any, features: list[str],
                      args: argparse.Namespace) -> tuple[Any, list[Any] | None, str]:
    """Binary: the positive class's probability; multiclass: each row's predicted class (or
    ``--class``); regression: the predicted value. A tree-ensemble graph is explained
    exactly from its trees (in margin space); the note says which space, or why not."""
    from modelgate.pipelines.shap_trees import explain_with_trees, tree_route
    from modelgate.reports import explain, explain_class

    options = {"seed": args.seed, "max_rows": max(args.rows, 1), "background_size": args.background}
    task, manifest = scorer.manifest.task, scorer.manifest
    if args.class_label is not None and task != "multiclass_classification":
        raise UsageError(f"--class is for multiclass models; {manifest.name!r} is {task}")
    classes = list(manifest.output.classes or ())
    index = None
    if args.class_label is not None:
        names = [str(c) for c in classes]
        if args.class_label not in names:
            raise UsageError(f"--class {args.class_label!r} is not one of the model's classes {names}")
        index = names.index(args.class_label)
    route = tree_route(onnx_bytes, scorer, _route_frame(rows, background, features))
    if route.trees is not None:
        exp, picked = explain_with_trees(route, scorer, rows, background, class_index=index, **options)
        source = "trees" if exp.algorithm == "tree_interventional" else "linear model"
        note = (f"exact values of the {source} margin ({exp.output}), not the probability"
                if exp.output in ("logit", "margin") else f"exact values read from the {source}")
        return exp, None if picked is None else [classes[int(k)] for k in picked], note
    if task == "regression":
        return explain(scorer.predict_value, rows, background, features=features, output="value",
                       **options), None, route.reason
    if task == "binary_classification":
        return (explain(scorer.predict_proba, rows, background, features=features, **options), None,
                route.reason)
    exp, explained = explain_class(scorer.predict_class_proba, rows, background, features=features,
                                   class_index=index, **options)
    return exp, [classes[int(k)] for k in explained], route.reason


def _route_frame(rows: Any, background: Any, features: list[str]) -> Any:
    """The rows and background the tree route is checked on."""
    import pandas as pd

    return pd.concat([rows[features], background[features]], ignore_index=True)


# --- fairness ----------------------------------------------------------------------------

def _binary_column(frame: Any, column: str, positive: str) -> Any:
    import numpy as np

    if column not in frame.columns:
        raise ValueError(f"column {column!r} is not in the data (columns: {list(frame.columns)})")
    values = frame[column]
    if values.isna().any():
        raise ValueError(f"column {column!r} has {int(values.isna().sum())} missing value(s)")
    return (values.astype(str).to_numpy() == positive).astype(np.int8)


def cmd_fairness(args: argparse.Namespace) -> int:
    from modelgate.cli.data import read_table
    from modelgate.fairness.metrics import fairness_report

    sensitive = [s for s in args.sensitive.split(",") if s]
    if not sensitive:
        raise UsageError("--sensitive needs at least one column name")
    frame = read_table(args.data).to_pandas()
    y = _binary_column(frame, args.label, args.positive)
    pred = _binary_column(frame, args.prediction, args.positive)
    if args.score is not None and args.score not in frame.columns:
        raise ValueError(f"score column {args.score!r} is not in the data")
    score = None if args.score is None else frame[args.score].to_numpy(dtype=float)
    reports = {}
    for feature in sensitive:
        if feature not in frame.columns:
            raise ValueError(f"sensitive column {feature!r} is not in the data")
        reports[feature] = fairness_report(
            y, pred, frame[feature].to_numpy(dtype=object), sensitive_feature=feature,
            min_group_size=args.min_group_size, n_bootstrap=args.bootstrap, seed=args.seed,
            score=score)
    payload = fairness_json(reports)
    _emit(payload, args.format, "\n".join(_fairness_lines(reports)))
    return EXIT_OK


def _fairness_lines(reports: dict[str, Any]) -> list[str]:
    """The text form: per feature its gaps (with what drives each), then its groups with the
    rows behind their rates."""
    from modelgate.pipelines.evaluation.fairness_records import driving_text

    lines = []
    for feature, rep in reports.items():
        groups = [g.to_record() for g in rep.table.groups]
        lines.append(f"{shown(feature)}:")
        for e in rep.estimates:
            why = driving_text(e.to_record(), groups)
            ci = (f" [{e.ci_lower:.4f}, {e.ci_upper:.4f}]"
                  if math.isfinite(e.ci_lower) and math.isfinite(e.ci_upper) else "")
            lines.append(f"  {e.name} {e.value:.4f}{ci}{f' ({why})' if why else ''}")
        for g in rep.table.groups:
            flag = " (small group)" if g.small_group else ""
            auc = "" if math.isnan(g.roc_auc) else f" auc={g.roc_auc:.4f}"
            lines.append(f"  {shown(str(g.group))}: n={g.n} positives={g.positives} negatives={g.negatives} "
                         f"selection={g.selection_rate:.4f} tpr={g.tpr:.4f} fpr={g.fpr:.4f} "
                         f"accuracy={g.accuracy:.4f}{auc}{flag}")
    return lines


def add_commands(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="run the evaluation pipeline outside Airflow")
    p.add_argument("--model", required=True, help="model archive (.tar.gz)")
    p.add_argument("--data", required=True, type=data_source,
                   help=f"held-out data with label and sensitive columns: {DATA_HELP}")
    p.add_argument("--policy", help="policy YAML merged over the default policy")
    p.add_argument("--promote", action="store_true", help="promote the model if the gate passes")
    p.add_argument("--allow-looser-policy", action="store_true",
                   help="with --promote: promote even when the policy is looser than the model's "
                        "own or than the version's previous decided attempt's on a blocking check "
                        "(recorded with the run)")
    p.add_argument("--segments", type=segment_columns, default=(), metavar="COL[,COL...]",
                   help="evaluate every metric per value of these columns (beside the policy's "
                        "segments.columns), each compared with the rest of the data, false "
                        "discoveries controlled; the weakest slices of them and their pairs searched")
    p.add_argument("--segment-pairs", action="store_true",
                   help="with --segments: every pair of the segment columns is a segment too")
    p.add_argument("--format", choices=("json", "text"), default="text")
    p.set_defaults(handler=cmd_evaluate)

    p = sub.add_parser("explain", help="SHAP values of the first N rows of a parquet file")
    p.add_argument("--model", required=True, type=Path)
    p.add_argument("--data", required=True, type=data_source, help=DATA_HELP)
    p.add_argument("--rows", type=bounded_int(1), default=5)
    p.add_argument("--background", type=bounded_int(1), default=100, help="background sample size")
    p.add_argument("--seed", type=bounded_int(0), default=0)
    p.add_argument("--class", dest="class_label",
                   help="multiclass models: explain this class (default: each row's predicted class)")
    p.add_argument("--format", choices=("json", "text"), default="json")
    p.set_defaults(handler=cmd_explain)

    p = sub.add_parser("fairness", help="fairness table and gaps of already-scored data")
    p.add_argument("--data", required=True, type=data_source, help=DATA_HELP)
    p.add_argument("--label", required=True)
    p.add_argument("--prediction", required=True)
    p.add_argument("--sensitive", required=True, help="comma-separated column names")
    p.add_argument("--positive", default="1", help="value of label/prediction meaning positive")
    p.add_argument("--score", help="column of scores in [0, 1]: adds each group's ROC AUC")
    p.add_argument("--min-group-size", type=bounded_int(1), default=30)
    p.add_argument("--bootstrap", type=bounded_int(0, MAX_BOOTSTRAP), default=1000)
    p.add_argument("--seed", type=bounded_int(0), default=0)
    p.add_argument("--format", choices=("json", "text"), default="json")
    p.set_defaults(handler=cmd_fairness)

    from modelgate.cli.drift import add_drift_command

    add_drift_command(sub)
