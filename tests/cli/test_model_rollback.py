"""``modelgate model rollback`` (issue #37 point 4) on the real PostgreSQL and the moto S3 server:
production back to an earlier version that passed its gate, its history, each refusal, a rollback
racing a promotion, and the evaluation of archived and retired versions for comparison.

Expected values are the rows the test wrote (versions, runs, who and why) and the database's own
clock read around the command; the commands run in-process through ``modelgate.cli.main``.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from support.model_zoo import build

from modelgate.cli import main
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.store import models, rollbacks, runs
from modelgate.store.db import fetch_all, transaction

ROOT = Path(__file__).resolve().parents[2]
#: the README and every docs/ page, as the README was before its sections moved to docs/
README = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def _passed_run(url: str, row: models.ModelVersionRow, key: str, champion_id: int | None,
                *, gate_passed: bool = True) -> int:
    run_id = runs.start_evaluation_run(url, run_key=key, model_version_id=row.model_version_id,
                                       champion_version_id=champion_id, dataset_uri="d.parquet",
                                       archive_sha256=row.archive_sha256)
    with transaction(url) as cur:
        cur.execute("UPDATE evaluation_run SET status = %s, finished_at = now() "
                    "WHERE evaluation_run_id = %s", ("passed" if gate_passed else "blocked", run_id))
        cur.execute("INSERT INTO gate_decision (evaluation_run_id, passed, summary, policy_sha256, "
                    "had_champion) VALUES (%s, %s, 'gate', %s, %s)",
                    (run_id, gate_passed, "0" * 64, champion_id is not None))
    return run_id


@pytest.fixture()
def registry(settings_env: Settings, tmp_path: Path) -> dict[str, Any]:
    """Model ``zoo`` (name as the README's): v1 promoted by hand without an evaluation (never
    passed a gate), then v2 (passed run) and v3 (passed run) promoted in turn, so v3 is in
    production and v1, v2 archived; v4 a candidate with a failed run; v5 retired."""
    from modelgate.pipelines.context import Context, register_archive

    zoo = build("sklearn-no-zipmap")
    ctx = Context.open(settings_env)
    url = ctx.db_url
    rows, archives = {}, {}
    for version in ("1", "2", "3", "4", "5"):
        archives[version] = package(*zoo.write(tmp_path / f"src{version}", version=version),
                                    tmp_path / f"out{version}")
        rows[version], _ = register_archive(ctx, archives[version])
    ids = {v: r.model_version_id for v, r in rows.items()}
    models.promote(url, ids["1"], expected_champion_id=None)
    passed = {"2": _passed_run(url, rows["2"], "k2", ids["1"])}
    models.promote(url, ids["2"], expected_champion_id=ids["1"], evaluation_run_id=passed["2"])
    passed["3"] = _passed_run(url, rows["3"], "k3", ids["2"])
    models.promote(url, ids["3"], expected_champion_id=ids["2"], evaluation_run_id=passed["3"])
    failed = runs.start_evaluation_run(url, run_key="k4", model_version_id=ids["4"],
                                       champion_version_id=ids["3"], dataset_uri="d.parquet",
                                       archive_sha256=rows["4"].archive_sha256)
    runs.fail_evaluation_run(url, failed, "missing column 'x3'")
    models.retire(url, rows["5"].model_name, "5", by="alice", reason="wrong manifest")
    return {"ctx": ctx, "url": url, "name": rows["1"].model_name, "rows": rows, "ids": ids,
            "passed": passed, "archives": archives, "zoo": zoo}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _stages(url: str, name: str) -> dict[str, str]:
    return dict(fetch_all(url, "SELECT version, stage FROM model_version WHERE model_name = %s",
                          (name,)))


def _history(url: str) -> list[tuple[Any, ...]]:
    return fetch_all(url, """SELECT model_name, from_version, to_version, evaluation_run_id,
                                    rolled_back_by, reason, rolled_back_at
                             FROM analytics.model_rollbacks ORDER BY model_rollback_id""")


def _now(url: str) -> Any:
    return fetch_all(url, "SELECT now()")[0][0]


def test_rollback_returns_production_and_records_who_when_why(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    url, name = registry["url"], registry["name"]
    assert _stages(url, name) == {"1": "archived", "2": "archived", "3": "production",
                                  "4": "candidate", "5": "retired"}
    before = _now(url)
    code, out, err = _run(capsys, "model", "rollback", name, "--to", "2", "--reason",
                          "v3 flags too few positives on live data", "--by", "alice")
    after = _now(url)
    assert code == 0, err
    assert out.startswith(f"rolled back: {name} v3 -> v2 (production; v3 archived) at ")
    assert "by alice: v3 flags too few positives on live data" in out
    assert f"it passed evaluation run {registry['passed']['2']}" in out
    assert _stages(url, name) == {"1": "archived", "2": "production", "3": "archived",
                                  "4": "candidate", "5": "retired"}
    ((model, src, dst, run_id, by, reason, at),) = _history(url)
    assert (model, src, dst, run_id, by, reason) == (
        name, "3", "2", registry["passed"]["2"], "alice", "v3 flags too few positives on live data")
    assert before <= at <= after  # the database's clock, in the rollback's transaction

    # back again to v3 (archived now, it passed its gate); --by defaults to the OS user
    code, out, _ = _run(capsys, "model", "rollback", name, "--to", "3", "--reason", "false alarm")
    assert code == 0 and "v2 -> v3" in out
    assert _stages(url, name)["3"] == "production" and _stages(url, name)["2"] == "archived"
    assert [h[1:3] for h in _history(url)] == [("3", "2"), ("2", "3")]

    code, out, _ = _run(capsys, "model", "show", name)
    assert code == 0 and "rollbacks (oldest first):" in out
    assert re.search(r"v3 -> v2 by alice: v3 flags too few positives on live data \(passed "
                     rf"evaluation run {registry['passed']['2']}\)", out), out
    code, out, _ = _run(capsys, "model", "show", name, "2", "--format", "json")
    shown = json.loads(out)["rollbacks"]
    assert [(r["from_version"], r["to_version"], r["reason"]) for r in shown] == [
        ("3", "2", "v3 flags too few positives on live data"), ("2", "3", "false alarm")]
    code, out, _ = _run(capsys, "model", "show", name, "4", "--format", "json")
    assert json.loads(out)["rollbacks"] == []  # v4 took no part in either


REFUSALS = [
    (["--to", "3", "--reason", "r"], 2, "v3 is already in production"),
    (["--to", "1", "--reason", "r"], 2, "v1 never passed its gate"),
    (["--to", "4", "--reason", "r"], 2, "v4 is 'candidate' and was never in production"),
    (["--to", "5", "--reason", "r"], 2, "v5 is retired: a retired version never serves"),
    (["--to", "2", "--reason", "  "], 2, "--reason and --by must not be empty"),
    (["--to", "2", "--reason", "r", "--by", ""], 2, "--reason and --by must not be empty"),
    (["--to", "9", "--reason", "r"], 1, "version '9' is not registered"),
    (["--reason", "r"], 2, "the following arguments are required: --to"),
]


@pytest.mark.parametrize(("args", "code", "message"), REFUSALS,
                         ids=["production", "never-passed", "candidate", "retired", "empty-reason",
                              "empty-by", "unknown-version", "no-to"])
def test_a_refused_rollback_says_why_and_changes_nothing(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str], args: list[str], code: int,
        message: str) -> None:
    url, name = registry["url"], registry["name"]
    before = _stages(url, name)
    got, out, err = _run(capsys, "model", "rollback", name, *args)
    assert (got, out) == (code, "") and message in err, err
    assert _stages(url, name) == before and _history(url) == []


def test_a_version_whose_only_decision_blocked_never_passed(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """A blocked run of an archived version is no pass: v1 gets one, and stays refused."""
    url, name = registry["url"], registry["name"]
    _passed_run(url, registry["rows"]["1"], "k1-blocked", registry["ids"]["3"], gate_passed=False)
    code, _, err = _run(capsys, "model", "rollback", name, "--to", "1", "--reason", "r")
    assert code == 2 and "v1 never passed its gate" in err


def test_a_model_with_nothing_in_production_has_nothing_to_roll_back(
        settings_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from modelgate.pipelines.context import Context, register_archive

    ctx = Context.open(settings_env)
    archive = package(*build("sklearn-no-zipmap").write(tmp_path / "src", name="lonely"),
                      tmp_path / "out")
    register_archive(ctx, archive)
    code, _, err = _run(capsys, "model", "rollback", "lonely", "--to", "1", "--reason", "r")
    assert code == 2 and "'lonely' has no version in production" in err


def test_the_sketch_is_made_sure_of_before_the_stages_change(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As at promotion: the target's drift reference comes first (a monitored model's sketch,
    kept from its first promotion or built now), while production is still unchanged."""
    from modelgate.cli import rollback

    url, name = registry["url"], registry["name"]
    seen = []

    def sketch(ctx: Any, row: models.ModelVersionRow) -> str:
        seen.append((row.version, _stages(url, name)[row.version]))
        return "drift/reference/key"

    monkeypatch.setattr(rollback, "reference_on_promotion", sketch)
    code, out, _ = _run(capsys, "model", "rollback", name, "--to", "2", "--reason", "r")
    assert code == 0 and out.rstrip().endswith("its drift reference sketch is in place")
    assert seen == [("2", "archived")]


def test_a_rollback_racing_a_promotion_leaves_one_production_version(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """v4 passes and is promoted against v3 after the rollback to v2 was checked but before its
    transaction (at the sketch step): the rollback, planned from v3, is refused; v4 stays."""
    from modelgate.cli import rollback

    url, name, rows, ids = registry["url"], registry["name"], registry["rows"], registry["ids"]

    def promote_meanwhile(ctx: Any, row: models.ModelVersionRow) -> None:
        run_id = _passed_run(url, rows["4"], "k4-passed", ids["3"])
        models.promote(url, ids["4"], expected_champion_id=ids["3"], evaluation_run_id=run_id)

    monkeypatch.setattr(rollback, "reference_on_promotion", promote_meanwhile)
    code, _, err = _run(capsys, "model", "rollback", name, "--to", "2", "--reason", "r")
    assert code == 1 and "production changed since the rollback was planned" in err
    stages = _stages(url, name)
    assert [v for v, s in stages.items() if s == "production"] == ["4"]
    assert stages["3"] == "archived" and stages["2"] == "archived" and _history(url) == []


def test_a_promotion_planned_before_a_rollback_is_refused(registry: dict[str, Any]) -> None:
    """The other order: v4 was evaluated against v3, then production went back to v2."""
    url, ids, rows = registry["url"], registry["ids"], registry["rows"]
    run_id = _passed_run(url, rows["4"], "k4-passed", ids["3"])
    rollbacks.roll_back(url, ids["2"], expected_champion_id=ids["3"],
                        evaluation_run_id=registry["passed"]["2"], by="bob", reason="r")
    with pytest.raises(models.RegistryError, match="production changed since this candidate"):
        models.promote(url, ids["4"], expected_champion_id=ids["3"], evaluation_run_id=run_id)
    assert fetch_all(url, "SELECT version FROM model_version WHERE stage = 'production'") == [("2",)]


def test_the_database_keeps_the_history_as_written_and_checks_the_run(
        registry: dict[str, Any]) -> None:
    url, ids, passed = registry["url"], registry["ids"], registry["passed"]
    with pytest.raises(models.RegistryError, match="only an archived"):  # v4 is a candidate
        rollbacks.roll_back(url, ids["4"], expected_champion_id=ids["3"],
                            evaluation_run_id=passed["3"], by="bob", reason="r")
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation,
                       match=f"is not a passed run .* of {registry['name']} v2"):
        rollbacks.roll_back(url, ids["2"], expected_champion_id=ids["3"],  # v3's run, not v2's
                            evaluation_run_id=passed["3"], by="bob", reason="r")
    assert _stages(url, registry["name"])["3"] == "production"  # the transaction rolled back
    record = rollbacks.roll_back(url, ids["2"], expected_champion_id=ids["3"],
                                 evaluation_run_id=passed["2"], by="bob", reason="r")
    assert rollbacks.history(url, registry["name"], "3") == [record]
    for sql in ("UPDATE model_rollback SET reason = 'other'", "DELETE FROM model_rollback"):
        with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="append-only"), \
                transaction(url) as cur:
            cur.execute(sql)
    # the run a rollback rests on is kept: a passed run of v1 that promoted nothing
    later = _passed_run(url, registry["rows"]["1"], "k1-passed", ids["2"])
    again = rollbacks.roll_back(url, ids["1"], expected_champion_id=ids["2"],
                                evaluation_run_id=later, by="bob", reason="r")
    # (its decided attempt's gate rows refuse the cascade first since migration 0029; the
    # rollback's foreign key holds the run without them)
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="record its decision"), \
            transaction(url) as cur:
        cur.execute("DELETE FROM evaluation_run WHERE evaluation_run_id = %s", (later,))
    with pytest.raises(psycopg2.errors.ForeignKeyViolation, match="model_rollback_evaluation_run_id_fkey"), \
            transaction(url) as cur:
        for trigger in ("gate_decision_written_once_trigger", "gate_check_written_once_trigger"):
            cur.execute(f"ALTER TABLE {trigger.split('_written')[0]} DISABLE TRIGGER {trigger}")
        cur.execute("ALTER TABLE evaluation_attempt DISABLE TRIGGER evaluation_attempt_kept_trigger")
        cur.execute("DELETE FROM evaluation_run WHERE evaluation_run_id = %s", (later,))
    assert rollbacks.history(url, registry["name"]) == [record, again]


# --- archived and retired versions are evaluated for comparison, never for promotion --------

@pytest.mark.parametrize("version", ["2", "5"], ids=["archived", "retired"])
def test_an_archived_or_retired_version_is_evaluated_only_without_promote(
        registry: dict[str, Any], version: str, tmp_path: Path) -> None:
    from modelgate.pipelines.evaluation import prepare_step

    ctx, url, name = registry["ctx"], registry["url"], registry["name"]
    data = tmp_path / "d.parquet"
    registry["zoo"].frame.to_parquet(data)  # prepare reads the footer: the model's columns, rows
    ref = prepare_step.prepare(ctx, model_name=name, version=version, dataset_uri=str(data),
                           run_key=f"compare-{version}")
    run = runs.get_evaluation_run(url, ref.evaluation_run_id)
    assert run.status == "running"  # opened, compared with the production version
    assert (run.model_version_id, run.champion_version_id) == (registry["ids"][version],
                                                               registry["ids"]["3"])
    stage = _stages(url, name)[version]
    with pytest.raises(models.RegistryError,
                       match=f"is '{stage}'; only a candidate can be evaluated for promotion"):
        prepare_step.prepare(ctx, model_name=name, version=version, dataset_uri=str(data),
                         run_key=f"promote-{version}", promote=True)
    assert fetch_all(url, "SELECT run_key, version FROM evaluation_refusal") == [
        (f"promote-{version}", version)]
    assert _stages(url, name)[version] == stage


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_a_retired_version_is_evaluated_end_to_end_for_comparison(
        registry: dict[str, Any], tmp_path: Path) -> None:
    from modelgate.cli.runs import run_evaluation_locally

    url, name = registry["url"], registry["name"]
    data = tmp_path / "heldout.parquet"
    registry["zoo"].frame.to_parquet(data)
    outcome = run_evaluation_locally(registry["archives"]["5"], data, None)
    assert outcome.payload["status"] in ("passed", "blocked")
    assert outcome.payload["promoted"] is None and outcome.payload["champion_deltas"] is not None
    run = runs.get_evaluation_run(url, outcome.payload["evaluation_run_id"])
    assert (run.model_version_id, run.champion_version_id) == (registry["ids"]["5"],
                                                               registry["ids"]["3"])
    with pytest.raises(models.RegistryError, match="only a candidate can be evaluated for promotion"):
        run_evaluation_locally(registry["archives"]["5"], data, None, promote=True)
    assert _stages(url, name)["5"] == "retired" and _stages(url, name)["3"] == "production"


# --- the README's way back runs as written --------------------------------------------------

def test_readme_rollback_block_runs_as_written(settings_env: Settings, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The README's block on a registry like the one it describes: gss-high-income v1 passed
    and was promoted, then v2 passed and was promoted."""
    from modelgate.pipelines.context import Context, register_archive

    block = next(b for b in re.findall(r"```sh\n(.*?)```", README, flags=re.S)
                 if "modelgate model rollback" in b and "--to VERSION" not in b)
    ctx = Context.open(settings_env)
    zoo, champion = build("sklearn-no-zipmap"), None
    for version in ("1", "2"):
        archive = package(*zoo.write(tmp_path / f"src{version}", name="gss-high-income",
                                     version=version), tmp_path / f"out{version}")
        row, _ = register_archive(ctx, archive)
        run_id = _passed_run(ctx.db_url, row, f"readme-{version}", champion)
        models.promote(ctx.db_url, row.model_version_id, expected_champion_id=champion,
                       evaluation_run_id=run_id)
        champion = row.model_version_id
    outputs = []
    for line in block.strip().splitlines():
        words = shlex.split(line, comments=True)
        assert words[0] == "modelgate", line
        code, out, err = _run(capsys, *words[1:])
        assert code == 0, (line, err)
        outputs.append(out)
    assert "gss-high-income v2: production" in outputs[0]
    assert any(o.startswith("rolled back: gss-high-income v2 -> v1") for o in outputs)
    assert _stages(ctx.db_url, "gss-high-income") == {"1": "production", "2": "archived"}
