"""Policy provenance end to end (issue #20): ``modelgate evaluate`` on a tiny scikit-learn model
stores each run's policy, its source and its differences from the model's own policy; a looser
ad-hoc policy with ``--promote`` is refused (exit 2) without ``--allow-looser-policy`` and
recorded with it; the view column and the report header show it; stored evidence does not change.

The model's own policy here is the task default with the model's policy file over it, so the
expected difference is written by hand: equalized odds ``upper`` 0.2 (the file) -> 0.5 (ad hoc).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import psycopg2
import pytest
from modelgate.evaluation.policy import default_policy_path
from support.model_zoo import build
from support.sql_rows import sql_rows

from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.store import models
from modelgate.store.objects import open_object_store

EO = "fairness.default.equalized_odds_difference"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelgate.cli", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.fixture()
def tiny(settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    zoo = build("sklearn-no-zipmap")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    zoo.frame.to_parquet(data)
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / f"{zoo.draft['name']}.yaml").write_text(
        "fairness: {default: {equalized_odds_difference: {upper: 0.2, severity: block}}}\n")
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(policies))
    looser = tmp_path / "looser.yaml"
    looser.write_text("fairness: {default: {equalized_odds_difference: {upper: 0.5}}}\n"
                      "metrics: {brier: {value: {upper: 0.2, severity: warn}}}\n")
    return {"archive": archive, "data": data, "policies": policies, "looser": looser}


def _framed_sha256(*sources: tuple[str, bytes]) -> str:
    """The policy hash as documented: each present source as its role, its length in bytes
    and its bytes, one line each for the first two."""
    return hashlib.sha256(b"".join(f"{role}\n{len(body)}\n".encode() + body
                                   for role, body in sources)).hexdigest()


@pytest.mark.e2e
def test_a_looser_ad_hoc_policy_is_refused_for_promotion_and_recorded_when_allowed(
        settings_env: Settings, tiny: dict[str, Path]) -> None:
    url = str(settings_env.database_url)
    common = ("evaluate", "--model", str(tiny["archive"]), "--data", str(tiny["data"]),
              "--format", "json")

    model_file = tiny["policies"] / "zoo-binary_classification.yaml"
    default = default_policy_path("binary_classification").read_bytes()
    own = _cli(*common)
    assert own.returncode in (0, 3), own.stderr[-2000:]
    own_id = json.loads(own.stdout)["evaluation_run_id"]
    assert json.loads(own.stdout)["policy"] == {
        "source": "model_file", "differences": [], "looser_than_model": False,
        "looser_policy_allowed": False, "source_path": str(model_file.resolve()),
        "sha256": _framed_sha256(("default", default), ("model_file", model_file.read_bytes())),
        "previous_attempt": None, "looser_than_previous": False, "changes_from_previous": []}

    refused = _cli(*common, "--policy", str(tiny["looser"]), "--promote")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "usage error" in refused.stderr and "--allow-looser-policy" in refused.stderr
    assert f"{EO}: upper 0.2 -> 0.5 (looser)" in refused.stderr
    assert "brier" not in refused.stderr  # a stricter warning is a difference, not a looser check
    ((name,),) = sql_rows(url, "SELECT DISTINCT model_name FROM model_version")
    assert models.get(url, name, "1").stage == "candidate"

    allowed = _cli(*common, "--policy", str(tiny["looser"]), "--promote", "--allow-looser-policy")
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    payload = json.loads(allowed.stdout)
    assert payload["promoted"].startswith(f"promoted {name} v1")
    differences = [
        {"place": "metrics.brier.value", "key": "upper", "reference": 0.25, "effective": 0.2,
         "effect": "stricter", "blocking": False},
        {"place": EO, "key": "upper", "reference": 0.2, "effective": 0.5, "effect": "looser",
         "blocking": True}]
    assert payload["policy"] == {
        "source": "ad_hoc", "source_path": str(tiny["looser"].resolve()),
        "looser_than_model": True, "looser_policy_allowed": True, "differences": differences,
        "sha256": _framed_sha256(("default", default), ("model_file", model_file.read_bytes()),
                                 ("ad_hoc", tiny["looser"].read_bytes())),
        # the first run judged by the model's own policy is the version's previous decided attempt
        "previous_attempt": {"evaluation_run_id": own_id, "attempt": 1},
        "looser_than_previous": True, "changes_from_previous": differences}

    # the view: one row per run, the refused one kept as it was (its run key differs)
    view = sql_rows(url, """SELECT status, policy_source, policy_looser_than_model, looser_policy_allowed,
                                policy_diff, policy_text, failure_reason
                         FROM analytics.evaluation_runs ORDER BY evaluation_run_id""")
    assert [r[:4] for r in view] == [
        (view[0][0], "model_file", False, False), ("failed", "ad_hoc", True, False),
        ("passed", "ad_hoc", True, True)]
    assert view[1][4] == view[2][4] == payload["policy"]["differences"]
    assert "equalized_odds_difference: {upper: 0.5, severity: block}" in view[2][5]
    assert view[1][6].startswith("LooserPolicyRefused: ") and EO in view[1][6]

    ((report_key,),) = sql_rows(url, "SELECT report_key FROM evaluation_run WHERE status = 'passed' "
                                  "AND policy_source = 'ad_hoc'")
    html = open_object_store(settings_env).get_bytes(report_key).decode()
    assert 'id="policy-looser"' in html and "LOOSER POLICY" in html
    assert f"{EO}: upper 0.2 -&gt; 0.5 (looser)" in html and "explicitly allowed" in html

    # what a finished run recorded about its policy cannot be changed afterwards
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="keeps the policy"):
        sql_rows(url, "UPDATE evaluation_run SET looser_policy_allowed = true WHERE status = 'failed'")


def test_the_first_step_records_the_policy_and_refuses_a_looser_promotion(
        settings_env: Settings, tiny: dict[str, Path]) -> None:
    """``prepare`` alone (no scoring): the refusal names the looser check and leaves the row
    failed with its policy; allowed, or without promotion, the run goes on and says looser;
    the promote step refuses too; a re-run of a key records its own policy afresh."""
    from modelgate.pipelines.context import Context, register_archive
    from modelgate.pipelines.evaluation import prepare_step, promote_step
    from modelgate.pipelines.evaluation.policy_provenance import LooserPolicyRefused

    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, tiny["archive"])
    run = {"model_name": row.model_name, "version": row.version, "dataset_uri": str(tiny["data"])}
    looser = str(tiny["looser"])
    with pytest.raises(LooserPolicyRefused) as caught:
        prepare_step.prepare(ctx, run_key="refused", policy_path=looser, promote=True, **run)
    assert caught.value.checks == [f"{EO}: upper 0.2 -> 0.5 (looser)"]
    prepare_step.prepare(ctx, run_key="allowed", policy_path=looser, promote=True,
                     allow_looser_policy=True, **run)
    shown = prepare_step.prepare(ctx, run_key="shown", policy_path=looser, **run)
    view = """SELECT split_part(run_key, '__', 1), status, policy_source, policy_looser_than_model,
                     looser_policy_allowed
              FROM analytics.evaluation_runs ORDER BY evaluation_run_id"""
    assert sql_rows(ctx.db_url, view) == [("refused", "failed", "ad_hoc", True, False),
                                       ("allowed", "running", "ad_hoc", True, True),
                                       ("shown", "running", "ad_hoc", True, False)]

    sql_rows(ctx.db_url, "UPDATE evaluation_run SET status = 'passed' WHERE evaluation_run_id = %s",
          shown.evaluation_run_id)  # as if it had run through store; its policy is untouched
    with pytest.raises(LooserPolicyRefused):
        promote_step.promote(ctx, shown)
    assert models.get(ctx.db_url, row.model_name, row.version).stage == "candidate"

    prepare_step.prepare(ctx, run_key="shown", **run)  # re-run of the key: the model's own policy now
    assert sql_rows(ctx.db_url, view)[2] == ("shown", "running", "model_file", False, False)
