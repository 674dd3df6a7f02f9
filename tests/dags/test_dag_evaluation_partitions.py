"""A partitioned held-out set: one mapped score task per file, merged; same numbers as one process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

TABLES = {
    "evaluation_metric": "model_role, metric_name, value, ci_lower, ci_upper, n",
    "fairness_metric": "sensitive_feature, metric_name, value, ci_lower, ci_upper, driving_rate, "
                       "highest_group, lowest_group",
    "fairness_group": "sensitive_feature, group_label, n, tpr, fpr, ppv, selection_rate, positives, "
                      "negatives, accuracy, roc_auc, roc_auc_error_bound",
    "calibration_bin": "bin_index, n, mean_predicted, observed_rate",
}


def _results(url: str, run_id: int) -> dict[str, list[tuple[Any, ...]]]:
    return {table: fetch_all(url, f"SELECT {cols} FROM {table} WHERE evaluation_run_id = %s "
                                  f"ORDER BY 1, 2", (run_id,))
            for table, cols in TABLES.items()}


def _run_row(url: str, run_key: str) -> tuple[Any, ...]:
    rows = fetch_all(url, "SELECT evaluation_run_id, status, rows_scored, dataset_sha256, "
                          "champion_version_id FROM evaluation_run WHERE run_key = %s", (run_key,))
    assert len(rows) == 1
    return rows[0]


def _partitions(heldout: Path, root: Path) -> tuple[Path, list[Path]]:
    """Three files of unequal size, one in a sub-directory (hive style)."""
    frame = pd.read_parquet(heldout)
    cuts = [0, 37, 300, len(frame)]
    paths = [root / "part-0.parquet", root / "part-1.parquet", root / "day=2" / "part-2.parquet"]
    for path, lo, hi in zip(paths, cuts[:-1], cuts[1:], strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.iloc[lo:hi].to_parquet(path, index=False)
    return root, paths


@pytest.mark.e2e  # a DAG run
def test_mapped_partitions_give_the_numbers_of_one_process_and_of_one_file(
    settings_env: Settings, airflow_db: Path, demo_builds: dict[str, Any], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelgate.airflow_runner import run_dag

    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "0")
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(tmp_path))  # no per-model overrides
    ctx = Context.open(settings_env)
    champion, _ = register_archive(ctx, demo_builds["1"].archive_path)
    register_archive(ctx, demo_builds["2"].archive_path)
    models.promote(ctx.db_url, champion.model_version_id, expected_champion_id=None)
    # a blocking policy, so the candidate stays a candidate for every run below
    strict = tmp_path / "strict.yaml"
    strict.write_text("fairness:\n  default:\n    equalized_odds_difference: {upper: 0.0001}\n")
    local, paths = _partitions(demo_builds["2"].heldout_path, tmp_path / "heldout")
    for path in paths:  # the DAG reads the partitions from an s3:// prefix
        ctx.store.put_file(f"datasets/heldout/{path.relative_to(local).as_posix()}", path,
                           content_type="application/vnd.apache.parquet")

    mapped = run_dag("model_evaluation", conf={
        "model_name": "gss-high-income", "model_version": "2", "policy": str(strict),
        "dataset": f"s3://{ctx.store.bucket}/datasets/heldout/",  # type: ignore[attr-defined]
        "one_task_max_mb": 0,  # the mapped path, though the files are small
    })
    states = {(ti.task_id, ti.map_index): str(ti.state) for ti in mapped.get_task_instances()}
    assert sorted(i for t, i in states if t == "score") == [0, 1, 2]
    assert all(s == "success" for (t, _), s in states.items() if t == "score")
    assert states[("evaluate_in_one_task", -1)] == "skipped"
    (dag_run,) = fetch_all(ctx.db_url, "SELECT run_key FROM evaluation_run WHERE run_key LIKE "
                                       "'model_evaluation__%%'")
    dag_row = _run_row(ctx.db_url, dag_run[0])
    one_process = run_evaluation_locally(demo_builds["2"].archive_path, local, strict)
    one_row = _run_row(ctx.db_url, one_process.payload["run_key"])
    one_file = run_evaluation_locally(demo_builds["2"].archive_path, demo_builds["2"].heldout_path,
                                      strict)
    file_row = _run_row(ctx.db_url, one_file.payload["run_key"])

    n = demo_builds["2"].n_heldout
    assert dag_row[1:] == one_row[1:] == ("blocked", n, dag_row[3], champion.model_version_id)
    assert file_row[1:3] == ("blocked", n) and file_row[3] != dag_row[3]  # one file, another hash
    mapped_results, process_results = _results(ctx.db_url, dag_row[0]), _results(ctx.db_url, one_row[0])
    assert mapped_results == process_results  # identical, intervals included
    assert len(mapped_results["evaluation_metric"]) == 3 * 7  # candidate, champion, delta

    # one unpartitioned file: counts identical; float sums (log loss, Brier, calibration
    # means) equal up to the order of addition
    file_results = _results(ctx.db_url, file_row[0])
    assert file_results["fairness_metric"] == mapped_results["fairness_metric"]
    assert file_results["fairness_group"] == mapped_results["fairness_group"]
    assert all(row[-2] is not None for row in mapped_results["fairness_group"])  # each group's AUC
    for ours, theirs in zip(mapped_results["evaluation_metric"], file_results["evaluation_metric"],
                            strict=True):
        assert ours[:2] == theirs[:2] and ours[5] == theirs[5]
        assert ours[2:5] == pytest.approx(theirs[2:5], rel=1e-9, abs=1e-12), ours[:2]
