"""Gate verdicts through the whole evaluation (scoring, fairness, gate, store, JSON, text):
a breach and an inconclusive check read differently everywhere a person or an analyst looks.

Expected counts come from the zoo's frame with pandas, not from modelgate's tables.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from modelgate.evaluation.gate import GateCheck, GateDecision, decide
from modelgate.evaluation.policy import load_policy
from modelgate.fairness.disaggregate import table_from_counts
from modelgate.fairness.metrics import fairness_report_from_table
from support.model_zoo import build
from support.tiny_graphs import manifest_of

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.store import models, runs
from modelgate.store.db import transaction

# roc_auc: the logistic model's AUC is about 0.9, far below 0.99 (a breach on any interval);
# tpr_gap: every gap lies in [0, 1], so only the group minimum can make it inconclusive.
POLICY = """
metrics:
  roc_auc: {value: {lower: 0.99}}
fairness:
  min_positives_per_group: 1000
  default:
    tpr_gap: {upper: 1.0}
    demographic_parity_difference: {upper: 1.0, on_inconclusive: warn}
"""
COLUMNS = ("verdict", "effect", "basis", "ci_lower", "ci_upper", "n", "min_group_positives",
           "min_group_negatives", "required_positives", "required_negatives", "rows_to_decide",
           "group_positives_to_decide", "group_negatives_to_decide", "rows_to_decide_if_equal",
           "group_positives_to_decide_if_equal", "group_negatives_to_decide_if_equal")


def _stored(url: str, run_id: int) -> dict[str, dict[str, Any]]:
    with transaction(url) as cur:
        cur.execute(f"SELECT check_id, is_blocking_failure, {', '.join(COLUMNS)} "
                    "FROM analytics.gate_checks WHERE evaluation_run_id = %s", (run_id,))
        return {row[0]: dict(zip(("is_blocking_failure", *COLUMNS), row[1:], strict=True))
                for row in cur.fetchall()}


def test_breach_and_inconclusive_are_stored_and_shown_apart(settings_env: Settings,
                                                            tmp_path: Path) -> None:
    zoo = build("sklearn-no-zipmap")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    zoo.frame.to_parquet(data)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)

    outcome = run_evaluation_locally(archive, data, policy)

    n = len(zoo.frame)
    by_group = zoo.frame.groupby("group")["y_binary"]
    positives = int(by_group.apply(lambda s: (s == "good").sum()).min())
    negatives = int(by_group.apply(lambda s: (s == "bad").sum()).min())
    checks = {c["check_id"]: c for c in outcome.payload["gate"]["checks"]}
    auc, tpr, dpd = (checks["value:roc_auc"], checks["fairness:group:tpr_gap"],
                     checks["fairness:group:demographic_parity_difference"])
    assert outcome.payload["status"] == "blocked"
    assert (auc["verdict"], auc["effect"], auc["basis"]) == ("breach", "block", "interval")
    assert auc["ci_upper"] < 0.99
    assert (tpr["verdict"], tpr["effect"], tpr["n"]) == ("inconclusive", "block", n)
    assert (tpr["min_group_positives"], tpr["min_group_negatives"]) == (positives, negatives)
    assert (tpr["required_positives"], tpr["required_negatives"]) == (1000, None)
    assert (dpd["verdict"], dpd["effect"], dpd["required_positives"]) == ("pass", "none", None)
    # the projection (by formula): every count scaled by 1000 / positives, the group minimum
    assert tpr["group_positives_to_decide"] == 1000 - positives
    assert tpr["rows_to_decide"] == math.ceil(n * 1000 / positives) - n
    assert tpr["group_negatives_to_decide"] == math.ceil(negatives * 1000 / positives) - negatives
    assert (auc["rows_to_decide"], dpd["rows_to_decide"]) == (None, None)
    assert f"About {tpr['rows_to_decide']:,} more rows" in outcome.text

    assert "BLOCK   value:roc_auc: blocked: breached — roc_auc = " in outcome.text
    assert (f"BLOCK   fairness:group:tpr_gap: blocked: inconclusive at n = {n} — [group] tpr_gap"
            in outcome.text)
    assert f"a group has {positives} positives, fewer than the minimum 1000" in tpr["reason"]

    stored = _stored(str(settings_env.database_url), outcome.payload["evaluation_run_id"])
    assert set(stored) == set(checks)
    for check_id, row in stored.items():
        assert row == {"is_blocking_failure": checks[check_id]["effect"] == "block",
                       **{k: checks[check_id][k] for k in COLUMNS}}, check_id


def test_stored_effect_is_the_gates_for_every_verdict(clean_db: str) -> None:
    """``gate_check.effect`` is generated in SQL (migration 0013); it agrees with
    ``GateCheck.effect`` on every verdict, severity and ``on_inconclusive``."""
    row, _ = models.register(clean_db, model_name="m", version="1", sha256="1" * 64,
                             archive_sha256="2" * 64, archive_key="k", archive_uri="s3://b/k",
                             manifest=manifest_of())
    run_id = runs.start_evaluation_run(clean_db, run_key="effects",
                                       model_version_id=row.model_version_id,
                                       champion_version_id=None, dataset_uri="d",
                                       archive_sha256="2" * 64)
    checks = tuple(
        GateCheck(f"value:m{i}", "value", f"m{i}", None, 0.5, None, 0.6, 0.4, 0.8, 10, "interval",
                  verdict, severity, "r", on_inconclusive)  # type: ignore[arg-type]
        for i, (verdict, severity, on_inconclusive) in enumerate(
            (v, s, o) for v in ("pass", "breach", "inconclusive", "fail", "skipped")
            for s in ("block", "warn") for o in ("block", "warn")))
    rows = runs.EvaluationRows(gate_checks=[c.to_record() for c in checks], gate={
        **GateDecision(False, checks, (), (), "s").to_record(), "policy_sha256": "p",
        "had_champion": False})
    runs.write_evaluation_results(clean_db, run_id, rows, status="blocked", report_key=None,
                                  report_uri=None)
    with transaction(clean_db) as cur:
        cur.execute("SELECT check_id, effect, is_blocking_failure FROM analytics.gate_checks "
                    "WHERE evaluation_run_id = %s", (run_id,))
        stored = {check_id: (effect, blocking) for check_id, effect, blocking in cur.fetchall()}
    assert stored == {c.check_id: (c.effect, c.effect == "block") for c in checks}
    assert {c.effect for c in checks} == {"block", "warn", "none"}


def test_the_equal_rates_projection_is_stored(clean_db: str) -> None:
    """A fair three-group gap of 200 rows, inconclusive with its interval holding 0: the rows
    that would show it below the limit if the rates were equal reach ``analytics.gate_checks``."""
    counts = [[44, 4, 7, 11], [43, 5, 6, 12], [45, 3, 8, 10]]
    report = fairness_report_from_table(table_from_counts(("a", "b", "c"), counts),
                                        sensitive_feature="g")
    policy = load_policy("basis: interval\nfairness: {default: "
                         "{equalized_odds_difference: {upper: 0.03}}}")
    (check,) = decide({}, None, {"g": report}, policy).checks
    assert (check.verdict, check.ci_lower) == ("inconclusive", 0.0)
    assert check.rows_to_decide_if_equal is not None and check.rows_to_decide_if_equal > 0
    row, _ = models.register(clean_db, model_name="m", version="1", sha256="1" * 64,
                             archive_sha256="2" * 64, archive_key="k", archive_uri="s3://b/k",
                             manifest=manifest_of())
    run_id = runs.start_evaluation_run(clean_db, run_key="if-equal",
                                       model_version_id=row.model_version_id,
                                       champion_version_id=None, dataset_uri="d",
                                       archive_sha256="2" * 64)
    rows = runs.EvaluationRows(gate_checks=[check.to_record()], gate={
        **GateDecision(False, (check,), (check,), (), "s").to_record(), "policy_sha256": "p",
        "had_champion": False})
    runs.write_evaluation_results(clean_db, run_id, rows, status="blocked", report_key=None,
                                  report_uri=None)
    names = ("rows_to_decide_if_equal", "group_positives_to_decide_if_equal",
             "group_negatives_to_decide_if_equal")
    with transaction(clean_db) as cur:
        cur.execute(f"SELECT {', '.join(names)} FROM analytics.gate_checks "
                    "WHERE evaluation_run_id = %s", (run_id,))
        assert cur.fetchall() == [tuple(check.to_record()[k] for k in names)]
