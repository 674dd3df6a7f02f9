"""Every decision stays on record (issue #37), fast tier: the decision path driven through the
pipeline's first step (``prepare``) and the store, no scoring.

* A blocked attempt, then the model's own policy file loosened and the same run started again:
  promotion is refused without ``--allow-looser-policy`` (naming the looser check and the flag),
  and with it both decided attempts stay on record, in the analyst views, ``model show`` and the
  index page; the first attempt's decision and gate checks are unchanged.
* A fault in the index page write after a decision is stored leaves the decision standing, is
  recorded beside it, and is retried by the next run of the model and by ``modelgate gc``.

Expected values are written by hand (the policy files below, their sha256 by ``hashlib`` over the
files' bytes), never read back from the code under test.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from modelgate.evaluation.gate import GateCheck, GateDecision
from modelgate.evaluation.policy import default_policy_path
from support.model_zoo import build
from support.sql_rows import sql_rows

from modelgate import cli
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines import index_page
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.evaluation import attempts, prepare_step, report_step, run_refs
from modelgate.pipelines.evaluation.policy_provenance import ALLOW_HINT, LooserPolicyRefused
from modelgate.store import runs
from modelgate.store.db import transaction
from modelgate.store.objects import ObjectStoreError

EO = "fairness.default.equalized_odds_difference"
STRICT = "fairness: {default: {equalized_odds_difference: {upper: 0.03, severity: block}}}\n"
LOOSE = "fairness: {default: {equalized_odds_difference: {upper: 0.5, severity: block}}}\n"


@pytest.fixture()
def tiny(settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    zoo = build("sklearn-no-zipmap")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    zoo.frame.to_parquet(data)
    policies = tmp_path / "policies"
    policies.mkdir()
    model_file = policies / f"{zoo.draft['name']}.yaml"
    model_file.write_text(STRICT)
    monkeypatch.setenv("MODELGATE_POLICY_DIR", str(policies))
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, archive)
    return {"ctx": ctx, "row": row, "model_file": model_file,
            "run": {"model_name": row.model_name, "version": row.version, "dataset_uri": str(data)}}


def _decide(ctx: Context, ref: run_refs.RunRef, *, passed: bool) -> str:
    """What the ``store`` step stores for an attempt: its report, decision and checks (one
    equalized odds check, 0.2 observed), then what follows the decision; the report key."""
    verdict, effect_text = ("pass", "PASSED") if passed else ("breach", "BLOCKED by 1 check")
    check = GateCheck(f"fairness:sex:{EO}", "fairness", "equalized_odds_difference", "sex", None,
                      0.5 if passed else 0.03, 0.2, 0.1, 0.3, 100, "interval", verdict,  # type: ignore[arg-type]
                      "block", f"observed 0.2, limit {'0.5' if passed else '0.03'}")
    decision = GateDecision(passed, (check,), (), (), effect_text)
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = run_refs.candidate_row(ctx, run)
    key = report_step.report_key(row, run)
    ctx.store.put_bytes(key, f"<html>attempt {run.attempt}</html>".encode(), content_type="text/html")
    rows = runs.EvaluationRows(gate_checks=[check.to_record()], gate={
        **decision.to_record(), "policy_sha256": "p" * 64, "had_champion": False})
    runs.write_evaluation_results(ctx.db_url, ref.evaluation_run_id, rows,
                                  status="passed" if passed else "blocked", report_key=key,
                                  report_uri=ctx.store.uri(key))
    attempts.after_decision(ctx, ref.evaluation_run_id, run.attempt, model_name=row.model_name,
                            version=row.version, passed=passed, checks_breached=0 if passed else 1)
    return key


def _gate_record(url: str, run_id: int, attempt: int) -> list[tuple[Any, ...]]:
    return (sql_rows(url, "SELECT passed, summary, decided_at FROM gate_decision "
                       "WHERE evaluation_run_id = %s AND attempt = %s", run_id, attempt)
            + sql_rows(url, "SELECT check_id, verdict, threshold_text, observed, reason FROM gate_check "
                         "WHERE evaluation_run_id = %s AND attempt = %s ORDER BY check_id",
                    run_id, attempt))


def test_a_loosened_model_policy_needs_the_flag_and_every_attempt_stays_on_record(
        tiny: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ctx, run, url = tiny["ctx"], tiny["run"], tiny["ctx"].db_url
    first = prepare_step.prepare(ctx, run_key="k", **run)
    blocked_report = _decide(ctx, first, passed=False)
    before = _gate_record(url, first.evaluation_run_id, 1)
    assert [r[:2] for r in before] == [(False, "BLOCKED by 1 check"),
                                       (f"fairness:sex:{EO}", "breach")]

    tiny["model_file"].write_text(LOOSE)  # the tester's step: loosen the model's own file
    with pytest.raises(LooserPolicyRefused) as caught:
        prepare_step.prepare(ctx, run_key="k", promote=True, **run)
    assert caught.value.checks == [f"{EO}: upper 0.03 -> 0.5 (looser)"]
    message = str(caught.value)
    assert ALLOW_HINT in message and f"run {first.evaluation_run_id} attempt 1" in message

    allowed = prepare_step.prepare(ctx, run_key="k", promote=True, allow_looser_policy=True, **run)
    assert allowed.evaluation_run_id == first.evaluation_run_id  # the same run, a new attempt
    passed_report = _decide(ctx, allowed, passed=True)
    assert passed_report != blocked_report

    # the first attempt's decision and checks are as they were
    assert _gate_record(url, first.evaluation_run_id, 1) == before
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="never changed"):
        sql_rows(url, "UPDATE gate_decision SET passed = true WHERE attempt = 1")
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="never changed"):
        sql_rows(url, "UPDATE evaluation_attempt SET status = 'passed' WHERE attempt = 1")

    # the history in the analyst views, each attempt with its own policy hash and changes
    default = default_policy_path("binary_classification").read_bytes()
    framed = [b"default\n%d\n" % len(default) + default]  # each source: role, length, bytes
    strict_sha = hashlib.sha256(b"".join(framed) + b"model_file\n%d\n" % len(STRICT.encode())
                                + STRICT.encode()).hexdigest()
    loose_sha = hashlib.sha256(b"".join(framed) + b"model_file\n%d\n" % len(LOOSE.encode())
                               + LOOSE.encode()).hexdigest()
    history = sql_rows(url, """SELECT attempt, status, passed, policy_source, policy_sha256,
                                   policy_looser_than_previous, looser_policy_allowed,
                                   previous_attempt, policy_changes, report_uri
                            FROM analytics.evaluation_attempts ORDER BY attempt""")
    loosened = [{"place": EO, "key": "upper", "reference": 0.03, "effective": 0.5,
                 "effect": "looser", "blocking": True}]
    assert [h[:9] for h in history] == [
        (1, "blocked", False, "model_file", strict_sha, False, False, None, []),
        (2, "failed", None, "model_file", loose_sha, True, False, 1, loosened),
        (3, "passed", True, "model_file", loose_sha, True, True, 1, loosened)]
    assert (history[0][9], history[2][9]) == (ctx.store.uri(blocked_report),
                                               ctx.store.uri(passed_report))
    assert sql_rows(url, "SELECT attempt, status, pending_step_failures FROM analytics.evaluation_runs") \
        == [(3, "passed", 0)]
    assert sql_rows(url, "SELECT attempt, verdict, is_latest_attempt FROM analytics.gate_checks "
                      "ORDER BY attempt") == [(1, "breach", False), (3, "pass", True)]
    assert sql_rows(url, "SELECT attempt, passed FROM analytics.latest_gate_decision") == [(3, True)]

    # model show: every attempt with its verdict, policy and report link
    assert cli.main(["model", "show", run["model_name"]]) == 0
    shown = capsys.readouterr().out
    assert "attempt 1: blocked  policy model_file" in shown and strict_sha[:12] in shown
    assert "attempt 2: failed   policy model_file" in shown
    assert "attempt 3: passed   policy model_file" in shown and "(LOOSER, allowed)" in shown
    assert cli.main(["model", "show", run["model_name"], "--format", "json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["runs"]
    assert [(a["attempt"], a["status"], a["policy_looser"], a["report_link"] is not None)
            for a in listed["attempts"]] == [(1, "blocked", False, True), (2, "failed", True, False),
                                             (3, "passed", True, True)]

    # the index page links both decided attempts' reports
    page = ctx.store.get_bytes(index_page.index_key(run["model_name"])).decode()
    folder = f"reports/{run['model_name']}/"
    assert blocked_report.removeprefix(folder) in page and passed_report.removeprefix(folder) in page


def test_a_previous_allowed_looser_attempt_is_never_the_reference(tiny: dict[str, Any]) -> None:
    """Loosened once with the flag (without promoting), a later run may not promote under the
    same loose policy without the flag: the reference stays the strict attempt's policy."""
    ctx, run = tiny["ctx"], tiny["run"]
    _decide(ctx, prepare_step.prepare(ctx, run_key="a", **run), passed=False)
    tiny["model_file"].write_text(LOOSE)
    _decide(ctx, prepare_step.prepare(ctx, run_key="b", allow_looser_policy=True, **run), passed=True)
    with pytest.raises(LooserPolicyRefused, match="attempt 1"):
        prepare_step.prepare(ctx, run_key="c", promote=True, **run)


class _IndexPageDown:
    """An object store whose writes of index pages fail (the outage of the tester's report)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def put_bytes(self, key: str, data: bytes, *, content_type: str) -> str:
        if key.endswith("/index.html"):
            raise ObjectStoreError(f"object store unreachable while writing {key!r}")
        return str(self._store.put_bytes(key, data, content_type=content_type))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_an_index_page_fault_after_the_decision_is_recorded_beside_it_and_retried(
        tiny: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ctx, run, url = tiny["ctx"], tiny["run"], tiny["ctx"].db_url
    down = dataclasses.replace(ctx, store=_IndexPageDown(ctx.store))
    ref = prepare_step.prepare(down, run_key="k", **run)
    report = _decide(down, ref, passed=False)
    index = index_page.index_key(run["model_name"])
    assert not ctx.store.exists(index)

    # a later failure of the run (its process killed, a step after the decision) changes nothing
    run_refs.fail(down, ref, RuntimeError("killed after store"))
    assert sql_rows(url, "SELECT status, failure_reason FROM evaluation_run") == [("blocked", None)]
    assert sql_rows(url, "SELECT status FROM evaluation_attempt") == [("blocked",)]
    failures = sql_rows(url, """SELECT attempt, step, reason, retried_by
                             FROM analytics.evaluation_step_failures ORDER BY failed_at, step""")
    assert [f[:2] for f in failures] == [(1, "index_page"), (1, "after_decision")]
    assert "object store unreachable" in failures[0][2] and failures[1][2] == (
        "RuntimeError: killed after store")
    assert sql_rows(url, "SELECT pending_step_failures FROM analytics.evaluation_runs") == [(1,)]

    # the next stored run of the model retries the page
    other = prepare_step.prepare(ctx, run_key="other", **run)
    _decide(ctx, other, passed=False)
    assert sql_rows(url, "SELECT retried_by FROM evaluation_step_failure WHERE step = 'index_page'") \
        == [(f"evaluation run {other.evaluation_run_id}",)]
    assert report.removeprefix(f"reports/{run['model_name']}/") in ctx.store.get_bytes(index).decode()


def test_gc_retries_an_index_page_that_failed_after_a_decision(
        tiny: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ctx, run, url = tiny["ctx"], tiny["run"], tiny["ctx"].db_url
    down = dataclasses.replace(ctx, store=_IndexPageDown(ctx.store))
    _decide(down, prepare_step.prepare(down, run_key="k", **run), passed=True)
    assert sql_rows(url, "SELECT status FROM evaluation_run") == [("passed",)]
    assert attempts.retry_pending(down).left == 1  # still down: stays pending
    assert cli.main(["gc", "--format", "json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert (done["step_failures_retried"], done["step_failures_left"]) == (1, 0)
    assert sql_rows(url, "SELECT step, retried_by FROM evaluation_step_failure") == [("index_page", "gc")]
    assert ctx.store.exists(index_page.index_key(run["model_name"]))
    assert sql_rows(url, "SELECT status FROM evaluation_run") == [("passed",)]


@pytest.mark.e2e  # two whole pipeline runs through the CLI: seconds, kept out of the fast tier
def test_the_testers_report_blocked_then_loosened_model_file_then_promoted(
        tiny: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #37 as reported: ``evaluate --promote`` blocked, the model's own policy file
    loosened, the same command refused (exit 2, naming the check and the flag), then allowed:
    two attempts of one run on record, the blocked one unchanged."""
    ctx, run, url = tiny["ctx"], tiny["run"], tiny["ctx"].db_url
    tiny["model_file"].write_text(  # an EO limit of 0 blocks any gap (breach or inconclusive)
        "fairness: {default: {equalized_odds_difference: {upper: 0.0, severity: block}}}\n")
    archive = str(next((tmp_path / "out").glob("*.tar.gz")))
    command = ["evaluate", "--model", archive, "--data", run["dataset_uri"], "--promote",
               "--format", "json"]
    assert cli.main(command) == 3
    first = json.loads(capsys.readouterr().out)
    assert first["status"] == "blocked"
    before = _gate_record(url, first["evaluation_run_id"], 1)

    tiny["model_file"].write_text("basis: point_estimate\n"
                                  "metrics: {roc_auc: {value: {lower: 0.0}}}\n"
                                  "fairness: {default: {equalized_odds_difference: {upper: 1.0}}}\n")
    assert cli.main(command) == 2
    refused = capsys.readouterr().err
    assert f"{EO}: upper 0 -> 1 (looser)" in refused and "--allow-looser-policy" in refused
    assert cli.main([*command, "--allow-looser-policy"]) == 0
    allowed = json.loads(capsys.readouterr().out)
    assert allowed["status"] == "passed" and allowed["promoted"].startswith("promoted")

    assert _gate_record(url, first["evaluation_run_id"], 1) == before
    assert sql_rows(url, "SELECT evaluation_run_id, attempt, status FROM analytics.evaluation_attempts "
                      "ORDER BY evaluation_run_id, attempt") == [
        (first["evaluation_run_id"], 1, "blocked"), (first["evaluation_run_id"], 2, "failed"),
        (allowed["evaluation_run_id"], 1, "passed")]
    assert allowed["policy"]["looser_than_previous"] is True
    assert allowed["policy"]["previous_attempt"] == {
        "evaluation_run_id": first["evaluation_run_id"], "attempt": 1}
    assert cli.main(["model", "show", run["model_name"]]) == 0
    shown = capsys.readouterr().out
    assert "attempt 1: blocked" in shown and "(LOOSER, allowed)" in shown
    page = ctx.store.get_bytes(index_page.index_key(run["model_name"])).decode()
    assert page.count("evaluation report</a>") == 2


def test_a_previous_policy_the_loader_cannot_read_counts_as_looser(tiny: dict[str, Any]) -> None:
    """Stored by another version of the policy format, it cannot be ordered: promoting needs
    the explicit allowance, never silently passes."""
    ctx, run, url = tiny["ctx"], tiny["run"], tiny["ctx"].db_url
    _decide(ctx, prepare_step.prepare(ctx, run_key="a", **run), passed=False)
    with transaction(url) as cur:  # by hand, past the trigger that keeps ended attempts
        cur.execute("ALTER TABLE evaluation_attempt DISABLE TRIGGER evaluation_attempt_kept_trigger")
        cur.execute("UPDATE evaluation_attempt SET policy_text = 'no_such_key: 1'")
        cur.execute("ALTER TABLE evaluation_attempt ENABLE TRIGGER evaluation_attempt_kept_trigger")
    with pytest.raises(LooserPolicyRefused, match="policy: text unreadable"):
        prepare_step.prepare(ctx, run_key="b", promote=True, **run)
