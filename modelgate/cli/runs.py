"""``modelgate evaluate``: register the archive, run the evaluation runner in-process, summarise."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelgate.cli.json_records import deltas_json, fairness_json, gate_json, metrics_json
from modelgate.logsafe import escape_for_log
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation import (
    explain_step,
    gate_step,
    metrics_step,
    partitions,
    run_refs,
    segments_step,
)
from modelgate.pipelines.evaluation.policy_loading import segments_param_source
from modelgate.pipelines.evaluation.policy_provenance import policy_json, policy_line
from modelgate.pipelines.evaluation.runner import run_evaluation
from modelgate.store import runs


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    payload: dict[str, Any]
    text: str


def run_evaluation_locally(model: Path, data: str | Path, policy: Path | None, *,
                           promote: bool = False, allow_looser_policy: bool = False,
                           segments: Sequence[str] = (),
                           segment_pairs: bool = False) -> EvaluationOutcome:
    """Register (if needed) and evaluate ``model`` on ``data``; deterministic run key.

    ``data`` is a parquet file, a directory of them or an ``s3://bucket/prefix`` in the
    configured bucket (partitions scored one after the other in this process, then merged,
    as the DAG's mapped tasks do).

    The same archive, data and policy give the same run key
    (``cli__<data sha>__<policy sha>__<name>__v<version>__<archive sha>__vs-<champion>``, the
    policy part ending ``-looser-allowed`` with ``allow_looser_policy``), so running the command
    twice adds an attempt to the same run instead of a run: the first attempt's decision, gate
    checks and report are kept beside it, and its policy (every source, by sha256) is recorded
    with each attempt, so a changed model policy file shows there; the same ONNX
    under another name or version is another run, and a run allowed a looser policy never
    replaces one refused it. A run compared with another champion is another run too, and the
    run that promoted a version is never replaced (it is kept, see
    :func:`~modelgate.pipelines.evaluation.run_keys.evaluation_run_key`). Ctrl-C and SIGTERM (raised by
    the CLI as :class:`~modelgate.pipelines.liveness.Terminated`) record the run as failed.
    """
    uri = str(data)
    if not uri.startswith("s3://"):
        local = Path(uri[7:] if uri.startswith("file://") else uri)
        if not local.exists():
            raise FileNotFoundError(f"data file or directory {str(local)!r} does not exist")
        uri = str(local.resolve())
    ctx = Context.open()
    row, _ = register_archive(ctx, model)
    policy_sha = hashlib.sha256(policy.read_bytes()).hexdigest()[:8] if policy else "default"
    with ctx.attempt_scratch("data", "fingerprint") as work:  # s3:// partitions, one at a time
        fingerprint = partitions.dataset_sha256(ctx.store, uri, work)
    allowed = "-looser-allowed" if allow_looser_policy else ""
    run_key = f"cli__{fingerprint[:12]}__{policy_sha}{allowed}"
    run_key += segments_key_part(segments, segment_pairs)
    done = run_evaluation(ctx, model_name=row.model_name, version=row.version,
                          dataset_uri=uri, run_key=run_key,
                          policy_path=str(policy) if policy else None, promote=promote,
                          allow_looser_policy=allow_looser_policy, segments=segments,
                          segment_pairs=segment_pairs)
    assert done.status is not None and done.report_link is not None  # ran through "store"
    return _outcome(ctx, done.ref, done.status, done.report_link, done.promoted)


def segments_key_part(segments: Sequence[str], pairs: bool) -> str:
    """The run key's part for ``--segments`` (and ``--segment-pairs``): another set of columns
    is another run, the same set in another order or with repeats the same run.

    >>> segments_key_part(["b", "a"], False) == segments_key_part(["a", "b", "a"], False)
    True
    >>> segments_key_part([], False)
    ''
    """
    if not segments and not pairs:
        return ""
    return f"__seg-{hashlib.sha256(segments_param_source(segments, pairs)).hexdigest()[:8]}"


def _outcome(ctx: Context, ref: run_refs.RunRef, status: str, link: str,
             promoted: str | None) -> EvaluationOutcome:

    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    metrics: metrics_step.MetricsResult = run_refs.get_pickle(ctx, f"{ref.prefix()}/metrics.pkl")
    decided: gate_step.DecisionResult = run_refs.get_pickle(ctx, f"{ref.prefix()}/decision.pkl")
    fairness = run_refs.get_pickle(ctx, f"{ref.prefix()}/fairness.pkl")
    d = decided.decision
    policy = runs.get_policy(ctx.db_url, run.evaluation_run_id)
    payload: dict[str, Any] = {
        "evaluation_run_id": run.evaluation_run_id, "run_key": run.run_key, "task": metrics.task,
        "status": status,
        "provider": run.provider, "rows_scored": run.rows_scored,
        "scoring_rows_per_s": run.scoring_rows_per_s, "report": link, "promoted": promoted,
        "auc_error_bound": metrics.auc_error_bound,
        "metrics": metrics_json(m.to_record() for m in metrics.candidate.metrics),
        "champion_deltas": None if metrics.comparison is None else deltas_json(
            x.to_record() for x in metrics.comparison.deltas),
        "fairness": fairness_json(fairness),
        "gate": gate_json(d.to_record(), (c.to_record() for c in d.checks)),
        "policy": policy_json(policy),
        "shap": _shap_json(ctx, ref),
        "segments": segments_step.segments_json(segments_step.load_segments(ctx, ref)),
    }
    text = (f"evaluation run {run.evaluation_run_id}: {status.upper()} "
            f"({run.rows_scored} rows on {run.provider}, {run.scoring_rows_per_s or 0:,.0f} rows/s)\n"
            f"{_terminal_lines(d.summary)}\n{_metrics_text(metrics)}\n"
            f"{escape_for_log(policy_line(policy))}\nreport: {link}"
            + (f"\n{promoted}" if promoted else ""))
    return EvaluationOutcome(payload, text)


def _shap_json(ctx: Context, ref: run_refs.RunRef) -> dict[str, Any] | None:
    """The run's SHAP section: algorithm, the space its values explain (``output_space``, and
    ``output`` with the same value), rows explained and the global importance, most
    important first; None when the run has no explain result."""
    key = f"{ref.prefix()}/explain.pkl"
    if not ctx.store.exists(key):
        return None
    shap: explain_step.ExplainResult = run_refs.get_pickle(ctx, key)
    space = getattr(shap, "output", "") or None  # None on a result pickled before it was kept
    ses = shap.importance_se or (None,) * len(shap.importance)
    return {"algorithm": shap.algorithm, "algorithm_note": getattr(shap, "algorithm_note", ""),
            "output": space, "output_space": space, "rows_explained": shap.rows_explained,
            "background_rows": shap.background_rows,
            "importance": [{"feature": f, "mean_abs_shap": v, "mean_abs_shap_se": se}
                           for (f, v), se in zip(shap.importance, ses, strict=True)]}


def _terminal_lines(text: str) -> str:
    """``text``'s lines with control characters escaped: check ids, reasons and policy paths
    hold names from manifests, data and the command line."""
    return "\n".join(escape_for_log(line) for line in text.split("\n"))


def _metrics_text(metrics: metrics_step.MetricsResult) -> str:
    """Every metric's value and interval, passing or not (the summary lists only problems)."""
    deltas = {} if metrics.comparison is None else {x.name: x for x in metrics.comparison.deltas}
    level = metrics.candidate.confidence_level
    lines = [f"metrics (candidate [{level:.0%} CI]; champion and candidate - champion when there is one):"]
    for m in metrics.candidate.metrics:
        if m.undefined_reason:
            value = f"undefined ({m.undefined_reason})"
        elif math.isnan(m.ci_lower) or math.isnan(m.ci_upper):
            value = f"{m.value:.4f} (no interval at n = {m.n})"
        else:
            value = f"{m.value:.4f} [{m.ci_lower:.4f}, {m.ci_upper:.4f}]"
        x = deltas.get(m.name)
        vs = "" if x is None else f"; champion {x.champion:.4f}, delta {x.delta:+.4f}"
        lines.append(f"  {m.name:<18} {value}{vs}")
    return "\n".join(lines)
