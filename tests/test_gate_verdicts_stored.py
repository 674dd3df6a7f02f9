"""Gate verdicts through the whole evaluation (scoring, fairness, gate, store, JSON, text):
a breach and an inconclusive check read differently everywhere a person or an analyst looks.

Expected counts come from the zoo's frame with pandas, not from modelgate's tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from model_zoo import build

from modelgate.artifact import package
from modelgate.config import Settings
from modelgate.pipelines.cli_runs import run_evaluation_locally
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
           "min_group_negatives", "required_positives", "required_negatives")


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

    assert "BLOCK   value:roc_auc: blocked: breached — roc_auc = " in outcome.text
    assert (f"BLOCK   fairness:group:tpr_gap: blocked: inconclusive at n = {n} — [group] tpr_gap"
            in outcome.text)
    assert f"a group has {positives} positives, fewer than the minimum 1000" in tpr["reason"]

    stored = _stored(str(settings_env.database_url), outcome.payload["evaluation_run_id"])
    assert set(stored) == set(checks)
    for check_id, row in stored.items():
        assert row == {"is_blocking_failure": checks[check_id]["effect"] == "block",
                       **{k: checks[check_id][k] for k in COLUMNS}}, check_id
