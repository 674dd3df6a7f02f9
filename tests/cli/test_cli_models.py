"""``modelgate model list | show | retire`` and ``modelgate report link`` (issue #23), on the real
PostgreSQL and the moto S3 server; the commands run in-process through ``modelgate.cli.main``.

Expected values are the rows the test itself wrote (names, stages, reasons) and the bytes it
stored: a presigned link is checked by fetching it over HTTP and comparing the bytes.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from support.model_zoo import build

from modelgate.cli import main
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.store import models, runs
from modelgate.store.db import transaction


@pytest.fixture()
def registry(settings_env: Settings, tmp_path: Path) -> dict[str, Any]:
    """A tiny binary model registered as v1 (promoted to production) and v2 (candidate), with
    one failed evaluation of v2 and one passed evaluation of v1 whose report is stored."""
    from modelgate.pipelines.context import Context, register_archive

    zoo = build("sklearn-no-zipmap")
    ctx = Context.open(settings_env)
    rows = {}
    for version in ("1", "2"):
        archive = package(*zoo.write(tmp_path / f"src{version}", version=version),
                          tmp_path / f"out{version}")
        rows[version], _ = register_archive(ctx, archive)
    models.promote(ctx.db_url, rows["1"].model_version_id, expected_champion_id=None)
    passed = runs.start_evaluation_run(ctx.db_url, run_key="k1", model_version_id=rows["1"].model_version_id,
                                       champion_version_id=None, dataset_uri="d.parquet",
                                       archive_sha256=rows["1"].archive_sha256)
    report = b"<html>report of run 1</html>"
    ctx.store.put_bytes("reports/zoo/1/evaluation-k1.html", report, content_type="text/html")
    with transaction(ctx.db_url) as cur:
        cur.execute("UPDATE evaluation_run SET status = 'passed', finished_at = now(), report_key = %s "
                    "WHERE evaluation_run_id = %s", ("reports/zoo/1/evaluation-k1.html", passed))
    failed = runs.start_evaluation_run(ctx.db_url, run_key="k2", model_version_id=rows["2"].model_version_id,
                                       champion_version_id=rows["1"].model_version_id,
                                       dataset_uri="d.parquet", archive_sha256=rows["2"].archive_sha256)
    runs.fail_evaluation_run(ctx.db_url, failed, "missing column 'x3'")
    return {"ctx": ctx, "name": rows["1"].model_name, "passed": passed, "failed": failed,
            "report": report}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _stage(url: str, name: str, version: str) -> tuple[Any, ...]:
    with transaction(url) as cur:
        cur.execute("SELECT stage, retired_by, retired_reason, retired_at FROM analytics.model_versions "
                    "WHERE model_name = %s AND version = %s", (name, version))
        return tuple(cur.fetchone())


def test_list_and_show_say_stage_runs_decision_and_links(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    name = registry["name"]
    code, out, _ = _run(capsys, "model", "list", "--format", "json")
    assert code == 0
    listed = {(v["model_name"], v["version"]): v for v in json.loads(out)}
    assert listed[(name, "1")]["stage"] == "production"
    assert listed[(name, "1")]["latest_evaluation_status"] == "passed"
    assert listed[(name, "2")]["stage"] == "candidate"
    assert listed[(name, "2")]["latest_evaluation_status"] == "failed"
    assert listed[(name, "2")]["evaluation_runs"] == 1

    code, out, _ = _run(capsys, "model", "list")
    assert code == 0 and f"{name:<24} 1        production" in out

    code, out, _ = _run(capsys, "model", "show", name, "--format", "json")
    assert code == 0
    shown = json.loads(out)
    assert [v["version"] for v in shown["versions"]] == ["1", "2"]
    by_id = {r["run_id"]: r for r in shown["runs"]}
    assert by_id[registry["failed"]]["detail"] == "missing column 'x3'"
    assert by_id[registry["failed"]]["report_link"] is None
    link = by_id[registry["passed"]]["report_link"]
    assert "X-Amz-Signature=" in link and "X-Amz-Expires=600" in link
    with urllib.request.urlopen(link, timeout=30) as response:
        assert response.read() == registry["report"]

    code, out, _ = _run(capsys, "model", "show", name, "2")
    assert code == 0
    assert f"{name} v2: candidate" in out and "latest decision: failed" in out
    assert "missing column 'x3'" in out and f"{name} v1" not in out

    code, _, err = _run(capsys, "model", "show", "no-such-model")
    assert code == 1 and "'no-such-model' is not registered" in err
    code, _, err = _run(capsys, "model", "show", name, "--runs", "0")
    assert code == 2 and "argument --runs: must be an integer from 1 to" in err and "'0'" in err


def test_report_link_presigns_a_fresh_link(registry: dict[str, Any],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "report", "link", str(registry["passed"]))
    assert code == 0
    with urllib.request.urlopen(out.strip(), timeout=30) as response:
        assert response.read() == registry["report"]
    code, _, err = _run(capsys, "report", "link", str(registry["failed"]))
    assert code == 1 and f"evaluation run {registry['failed']} has no report" in err
    code, _, err = _run(capsys, "report", "link", "999", "--kind", "drift")
    assert code == 1 and "there is no drift run 999" in err
    code, _, _ = _run(capsys, "report", "link", "not-a-number")
    assert code == 2


def test_report_link_with_the_local_store_is_a_file_link(
        settings_env: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from modelgate.pipelines.context import Context, register_archive

    monkeypatch.delenv("MODELGATE_S3_ENDPOINT")  # the local-directory store under MODELGATE_HOME
    ctx = Context.open()
    zoo = build("sklearn-no-zipmap")
    row, _ = register_archive(ctx, package(*zoo.write(tmp_path / "src"), tmp_path / "out"))
    run_id = runs.start_evaluation_run(ctx.db_url, run_key="local", model_version_id=row.model_version_id,
                                       champion_version_id=None, dataset_uri="d.parquet",
                                       archive_sha256=row.archive_sha256)
    ctx.store.put_bytes("reports/zoo/1/evaluation-local.html", b"local", content_type="text/html")
    with transaction(ctx.db_url) as cur:
        cur.execute("UPDATE evaluation_run SET report_key = 'reports/zoo/1/evaluation-local.html' "
                    "WHERE evaluation_run_id = %s", (run_id,))
    code, out, _ = _run(capsys, "report", "link", str(run_id))
    link = out.strip()
    assert code == 0 and link == (settings_env.home / "objects" / "reports/zoo/1/evaluation-local.html"
                                  ).resolve().as_uri()
    with urllib.request.urlopen(link) as response:
        assert response.read() == b"local"
    Path(urllib.request.url2pathname(link.removeprefix("file://"))).unlink()
    code, _, err = _run(capsys, "report", "link", str(run_id))
    assert code == 1 and "is missing from the object store" in err


def test_retire_records_who_when_why_once_and_never_production(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ctx, name = registry["ctx"], registry["name"]
    code, out, _ = _run(capsys, "model", "retire", name, "2", "--reason", "wrong manifest",
                        "--by", "alice")
    assert code == 0 and out.startswith(f"retired: {name} v2 at ") and "by alice: wrong manifest" in out
    stage, by, reason, first_at = _stage(ctx.db_url, name, "2")
    assert (stage, by, reason) == ("retired", "alice", "wrong manifest") and first_at is not None

    code, out, _ = _run(capsys, "model", "retire", name, "2", "--reason", "another reason", "--by", "bob")
    assert code == 0 and out.startswith("already retired:") and "by alice: wrong manifest" in out
    assert _stage(ctx.db_url, name, "2") == ("retired", "alice", "wrong manifest", first_at)

    code, _, err = _run(capsys, "model", "retire", name, "1", "--reason", "oops")
    assert code == 2 and "'production'; only a candidate can be retired" in err
    assert _stage(ctx.db_url, name, "1")[0] == "production"
    code, _, err = _run(capsys, "model", "retire", name, "2", "--reason", "  ")
    assert code == 2 and "--reason and --by must not be empty" in err
    code, _, err = _run(capsys, "model", "retire", name, "9", "--reason", "x")
    assert code == 1 and f"{name!r} version '9' is not registered" in err
    code, _, _ = _run(capsys, "model", "retire", name)  # VERSION missing: argparse's usage error
    assert code == 2

    # a retired version is never promoted, and the database keeps the record as written
    with pytest.raises(models.RegistryError, match="only a candidate can be promoted"):
        models.promote(ctx.db_url, models.get(ctx.db_url, name, "2").model_version_id,
                       expected_champion_id=models.get(ctx.db_url, name, "1").model_version_id)
    with pytest.raises(psycopg2.errors.IntegrityConstraintViolation, match="is retired"), \
            transaction(ctx.db_url) as cur:
        cur.execute("UPDATE model_version SET stage = 'candidate', retired_at = NULL, "
                    "retired_by = NULL, retired_reason = NULL WHERE version = '2'")
    with pytest.raises(psycopg2.errors.CheckViolation, match="model_version_retired_check"), \
            transaction(ctx.db_url) as cur:
        cur.execute("UPDATE model_version SET stage = 'retired' WHERE version = '1'")

    code, out, _ = _run(capsys, "model", "show", name, "2")
    assert "v2: retired" in out and "by alice: wrong manifest" in out


def test_text_output_escapes_control_characters(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "model", "retire", registry["name"], "2", "--by", "eve",
                        "--reason", "bad\x1b[2J\nFAKE line")
    assert code == 0 and "\x1b" not in out and "bad\\x1b[2J\\nFAKE line" in out
    code, out, _ = _run(capsys, "model", "show", registry["name"], "2")
    assert "\x1b" not in out and "bad\\x1b[2J\\nFAKE line" in out


def test_a_configured_database_is_not_announced(settings_env: Settings,
                                                caplog: pytest.LogCaptureFixture) -> None:
    from modelgate.store.db import resolve_database_url

    with caplog.at_level(logging.INFO, logger="modelgate.store"):
        assert resolve_database_url(settings_env) == settings_env.database_url
    assert "results database" not in caplog.text


@pytest.mark.e2e
def test_readme_registry_block_runs_as_written(settings_env: Settings, demo_builds: dict[str, Any],
                                               tmp_path: Path) -> None:
    """The README's registry block, in a folder laid out like the repository after `make demo`
    (v1 evaluated and promoted, so its run is evaluation run 1, and v2 registered)."""
    import os
    import re
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]  # the README and every docs/ page
    readme = "\n".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    block = next(b for b in re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
                 if b.startswith("modelgate model list\n"))
    for version, built in demo_builds.items():
        shutil.copytree(built.archive_path.parents[1], tmp_path / ".modelgate" / "demo" / f"v{version}")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for setup in (["evaluate", "--model", str(demo_builds["1"].archive_path), "--data",
                   str(demo_builds["1"].heldout_path), "--promote"],
                  ["model", "register", str(demo_builds["2"].archive_path)]):
        done = subprocess.run([sys.executable, "-m", "modelgate.cli", *setup], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert re.search(r"^gss-high-income +1 +production +no +1 +passed ", out, flags=re.M), out
    assert "gss-high-income v2: candidate" in out and "latest decision: never evaluated" in out
    link = next(line for line in out.splitlines() if "X-Amz-Signature=" in line)
    with urllib.request.urlopen(link, timeout=30) as response:
        assert b"gss-high-income" in response.read()
    assert "retired: gss-high-income v2 at " in out
    listed = {v["version"]: v for v in json.loads((tmp_path / "models.json").read_text())}
    assert listed["2"]["stage"] == "retired" and listed["2"]["retired_reason"].startswith("blocked on")
    assert "feature(s) breached" in out  # drift with the manifest's features
    assert "comparing age," in result.stderr and "(features of gss-high-income v1)" in result.stderr


@pytest.mark.e2e
def test_a_command_says_which_database_and_warns_before_creating_one(tmp_path: Path) -> None:
    """No MODELGATE_DATABASE_URL: the first command in a new MODELGATE_HOME warns that it
    creates a new embedded database and names it; later ones only say which one they use."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    # Not under pytest's basetemp (mode 0700): pgserver runs PostgreSQL as its own user.
    home = Path(tempfile.mkdtemp(prefix="modelgate-warn-"))
    # nothing configured: no MODELGATE_* and no Airflow connection or task context (other
    # tests of the session put those in the environment)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MODELGATE_", "AIRFLOW_CONN_", "AIRFLOW_CTX_"))}
    env["MODELGATE_HOME"] = str(home)
    pgdata = (home / "pgdata").resolve()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "modelgate.cli", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
    try:
        first = cli("model", "list")
        assert first.returncode == 0, first.stderr[-2000:]
        assert f"creating a NEW, empty embedded results database in {pgdata}" in first.stderr
        assert f"results database: embedded PostgreSQL in {pgdata}" in first.stderr
        assert "no model registered yet" in first.stdout
        second = cli("model", "list")
        assert second.returncode == 0 and "creating a NEW" not in second.stderr
        assert f"results database: embedded PostgreSQL in {pgdata}" in second.stderr
        assert "pgserver" not in first.stderr + second.stderr  # its initdb output stays hidden
    finally:
        cli("db", "stop")
        shutil.rmtree(home, ignore_errors=True)


def test_drift_runs_show_their_features_worst_first_and_the_score_by_name(
        registry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """A drift run's breached features in ``model show`` and the demo's summary: the worst
    statistic as a multiple of its threshold (by hand: 0.30 / 0.10 = 3.0 beats 0.05 / 0.02 = 2.5)."""
    import datetime as dt

    from modelgate.store import drift_runs
    from modelgate.store.summaries import drift_interval

    ctx, name = registry["ctx"], registry["name"]
    v1 = models.get(ctx.db_url, name, "1")
    start = dt.datetime(2018, 1, 1, tzinfo=dt.UTC)
    run_id = drift_runs.start_drift_run(ctx.db_url, model_version_id=v1.model_version_id,
                                        interval_start=start, interval_end=start + dt.timedelta(days=1))
    # a feature that happens to be called "model score" beside the model's own score (#23)
    rows = [("__score__", "prediction", 1, "wasserstein_normalised", 0.30, 0.10, "drift"),
            ("colour", "categorical", 2, "js_divergence", 0.05, 0.02, "drift"),
            ("model score", "numeric", 3, "wasserstein_normalised", 0.20, 0.10, "drift"),
            ("x1", "numeric", 4, "wasserstein_normalised", 0.01, 0.10, "ok")]
    with transaction(ctx.db_url) as cur:
        for feature, kind, rank, stat, value, threshold, verdict in rows:
            cur.execute("""INSERT INTO feature_drift (drift_run_id, feature, kind, drift_rank, statistic_name,
                               statistic_value, threshold, verdict, n_reference, n_current, n_missing_current)
                           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 100, 100, 0)""",
                        (run_id, feature, kind, rank, stat, value, threshold, verdict))
        cur.execute("UPDATE drift_run SET status = 'drift', n_features_breached = 3 WHERE drift_run_id = %s",
                    (run_id,))
    summary = drift_interval(ctx.db_url, v1.model_version_id, start)
    assert summary is not None and summary.breached_features == ["__score__", "colour", "model score"]
    assert summary.worst_feature == "__score__" and summary.worst_ratio == pytest.approx(3.0)

    code, out, _ = _run(capsys, "model", "show", name, "1")
    assert code == 0 and "__score__" not in out
    assert "DRIFT model score: wasserstein_normalised = 0.3000 > threshold 0.1000" in out
    assert "DRIFT colour: js_divergence = 0.0500 > threshold 0.0200" in out
    # the user's feature is quoted, so an unquoted "model score" is only ever the model's output
    assert "DRIFT 'model score': wasserstein_normalised = 0.2000 > threshold 0.1000" in out
    code, out, _ = _run(capsys, "model", "show", name, "1", "--format", "json")
    (drift,) = [r for r in json.loads(out)["runs"] if r["kind"] == "drift"]
    assert code == 0 and "__score__" not in out
    assert drift["breaches"][0] == "model score: wasserstein_normalised = 0.3000 > threshold 0.1000"
    assert drift["breaches"][2].startswith("'model score': ")
    # the analyst view: the output is "model score" too, told apart from the feature by drift_of
    with psycopg2.connect(ctx.db_url) as conn, conn.cursor() as cur:
        cur.execute("SET ROLE modelgate_analyst")
        cur.execute("""SELECT feature, kind, drift_of FROM analytics.feature_drift_by_interval
                       WHERE drift_run_id = %s ORDER BY drift_rank""", (run_id,))
        assert cur.fetchall() == [("model score", "prediction", "model_output"),
                                  ("colour", "categorical", "feature"),
                                  ("model score", "numeric", "feature"), ("x1", "numeric", "feature")]
