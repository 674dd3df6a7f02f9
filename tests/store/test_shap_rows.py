"""Stored SHAP rows carry the estimator's standard errors (migration 0016), on the real
PostgreSQL server; the analyst view shows them beside the algorithm."""

from __future__ import annotations

import psycopg2
import pytest
from support.tiny_graphs import manifest_of

from modelgate.store import models, runs
from modelgate.store.db import transaction


def _run(url: str) -> int:
    row, _ = models.register(url, model_name="shap-rows", version="1", sha256="3" * 64,
                             archive_sha256="4" * 64, archive_key="k", archive_uri="s3://b/k",
                             manifest=manifest_of())
    return runs.start_evaluation_run(url, run_key="shap-rows", model_version_id=row.model_version_id,
                                     champion_version_id=None, dataset_uri="d",
                                     archive_sha256="4" * 64)


def _budget(algorithm: str, max_se: float | None) -> dict[str, object]:
    return {"algorithm": algorithm, "rows_explained": 60, "background_rows": 100,
            "evaluations_per_row": 566, "max_additivity_error": 1e-16, "max_standard_error": max_se}


def test_standard_errors_are_stored_and_shown_with_the_algorithm(clean_db: str) -> None:
    run_id = _run(clean_db)
    rows = runs.EvaluationRows(
        shap_importance=[{"feature": "age", "importance_rank": 1, "mean_abs_shap": 0.3,
                          "mean_abs_shap_se": 0.004},
                         {"feature": "educ", "importance_rank": 2, "mean_abs_shap": 0.1}],
        shap_budget=_budget("permutation", 0.02))
    runs.write_evaluation_results(clean_db, run_id, rows, status="passed", report_key=None,
                                  report_uri=None)
    with transaction(clean_db) as cur:
        cur.execute("""SELECT feature, mean_abs_shap, mean_abs_shap_se, shap_algorithm
                       FROM analytics.feature_importance WHERE evaluation_run_id = %s
                       ORDER BY importance_rank""", (run_id,))
        shown = cur.fetchall()
        cur.execute("SELECT max_standard_error FROM shap_budget WHERE evaluation_run_id = %s",
                    (run_id,))
        budget = cur.fetchone()
    # a record without a standard error (an older pickle) stores NULL, not 0
    assert shown == [("age", 0.3, 0.004, "permutation"), ("educ", 0.1, None, "permutation")]
    assert budget == (0.02,)


def test_a_negative_standard_error_is_refused(clean_db: str) -> None:
    run_id = _run(clean_db)
    rows = runs.EvaluationRows(
        shap_importance=[{"feature": "age", "importance_rank": 1, "mean_abs_shap": 0.3,
                          "mean_abs_shap_se": -0.1}],
        shap_budget=_budget("exact", 0.0))
    with pytest.raises(psycopg2.errors.CheckViolation, match="shap_importance_mean_abs_shap_se_check"):
        runs.write_evaluation_results(clean_db, run_id, rows, status="passed", report_key=None,
                                      report_uri=None)


def test_the_output_space_is_stored_and_checked(clean_db: str) -> None:
    """Migration 0033: tree values are in margin space; the space is kept with the budget
    (NULL from an older record), and only the four spaces are allowed."""
    run_id = _run(clean_db)
    for space, stored in (("logit", "logit"), (None, None)):
        budget = {**_budget("tree_interventional", 0.0), **({"output_space": space} if space else {})}
        runs.write_evaluation_results(clean_db, run_id, runs.EvaluationRows(shap_budget=budget),
                                      status="passed", report_key=None, report_uri=None)
        with transaction(clean_db) as cur:
            cur.execute("SELECT algorithm, output_space FROM shap_budget WHERE evaluation_run_id = %s",
                        (run_id,))
            assert cur.fetchone() == ("tree_interventional", stored)
    bad = runs.EvaluationRows(shap_budget={**_budget("exact", 0.0), "output_space": "odds"})
    with pytest.raises(psycopg2.errors.CheckViolation, match="shap_budget_output_space_check"):
        runs.write_evaluation_results(clean_db, run_id, bad, status="passed", report_key=None,
                                      report_uri=None)


def test_feature_importance_shows_the_output_space(clean_db: str) -> None:
    """Migration 0037: analytics.feature_importance appends output_space (the space of
    mean_abs_shap), after every column it had (0016's shap_algorithm last before it)."""
    run_id = _run(clean_db)
    rows = runs.EvaluationRows(
        shap_importance=[{"feature": "age", "importance_rank": 1, "mean_abs_shap": 0.3,
                          "mean_abs_shap_se": 0.0}],
        shap_budget={**_budget("tree_interventional", 0.0), "output_space": "logit"})
    runs.write_evaluation_results(clean_db, run_id, rows, status="passed", report_key=None,
                                  report_uri=None)
    with transaction(clean_db) as cur:
        cur.execute("""SELECT feature, shap_algorithm, output_space FROM analytics.feature_importance
                       WHERE evaluation_run_id = %s""", (run_id,))
        assert cur.fetchall() == [("age", "tree_interventional", "logit")]
        cur.execute("""SELECT column_name FROM information_schema.columns
                       WHERE table_schema = 'analytics' AND table_name = 'feature_importance'
                       ORDER BY ordinal_position""")
        assert [r[0] for r in cur.fetchall()] == [
            "model_name", "version", "evaluation_run_id", "run_key", "finished_at", "feature",
            "importance_rank", "mean_abs_shap", "mean_abs_shap_se", "shap_algorithm", "output_space"]
