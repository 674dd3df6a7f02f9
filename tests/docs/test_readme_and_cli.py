"""The README's commands run as written, and the CLI's JSON agrees with independent libraries."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from modelgate.config import Settings

REPO = Path(__file__).resolve().parents[2]
#: the README and every docs/ page: a block moved from the README to docs/ still runs
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README = "\n".join(p.read_text() for p in DOC_FILES)


def _sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def test_readme_opens_with_the_two_commands_and_make_has_them() -> None:
    first = _sh_blocks()[0].splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make demo", "make test"]
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, flags=re.M) and re.search(r"^test:", makefile, flags=re.M)
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_no_block_was_lost_when_the_readme_moved_to_docs() -> None:
    """Before the move the README alone held 8 `sh`, 7 `python`, 1 `sql`, 1 `yaml` and 1 `json`
    blocks (18 labelled blocks, 20 in all); the README and docs/ together hold at least as many."""
    labelled = re.findall(r"^ *```(sh|python|sql|yaml|json)\n", README, flags=re.M)
    assert len(_sh_blocks()) >= 8 and labelled.count("python") >= 7
    assert len(labelled) >= 18 and len(re.findall(r"^ *```", README, flags=re.M)) >= 40


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "modelgate.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=os.environ.copy(), timeout=600)


@pytest.fixture()
def demo_workdir(tmp_path: Path, demo_builds: dict[str, Any]) -> Path:
    """A directory laid out like the repo after `make demo` (.modelgate/demo/v1, v2)."""
    for version, build in demo_builds.items():
        target = tmp_path / ".modelgate" / "demo" / f"v{version}"
        shutil.copytree(build.archive_path.parents[1], target)
    return tmp_path


@pytest.mark.e2e
def test_readme_walkthrough_runs_as_written(settings_env: Settings, demo_workdir: Path) -> None:
    block = next(b for b in _sh_blocks() if b.startswith("mkdir -p try"))
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=demo_workdir, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "OK gss-high-income v2" in out  # verify
    assert "scored 4257 rows" in out  # score
    assert "gate exit code 3 (3 = blocked)" in out and "BLOCK" in out  # evaluate
    assert re.search(r"^row_id \d+: output ", out, re.M)  # explain: rows named by the id column
    assert re.search(r"^gender:\n  equalized_odds_difference ", out, re.M)  # fairness
    assert "feature(s) breached" in out  # drift


@pytest.mark.e2e
def test_readme_monitoring_runs_as_written(settings_env: Settings, demo_workdir: Path,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Verbatim, from a checkout's root, in a fresh home with no AIRFLOW_* variable set."""
    from modelgate.store.db import fetch_all

    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "0")
    block = next(b for b in _sh_blocks() if "airflow dags test drift_monitoring" in b)
    (demo_workdir / "dags").symlink_to(REPO / "dags")  # the checkout's DAG folder
    home = tmp_path / "fresh-home"
    home.mkdir()
    bin_dir = Path(sys.executable).parent
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")},
           "HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=demo_workdir, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (home / "airflow").exists() and (demo_workdir / ".modelgate" / "airflow").is_dir()
    out = result.stdout
    assert "monitoring gss-high-income: live .modelgate/demo/v1/live" in out  # set
    assert re.search(r"^gss-high-income +v1 +2000 ", out, flags=re.M)  # list
    assert "stopped monitoring gss-high-income" in out  # unset
    # the DAG run read the day before its logical date; the retry replaced that run's rows
    runs = fetch_all(str(settings_env.database_url), """SELECT interval_start::date::text,
        interval_end::date::text, status, rows_sampled FROM drift_run""")
    assert len(runs) == 1 and runs[0][:2] == ("2018-01-01", "2018-01-02"), runs
    # 2018 against the 1974-1990 reference: age W1/std 0.37 over the 0.1 floor (scipy)
    assert runs[0][2] == "drift" and runs[0][3] > 0
    assert "retry exit code 3" in out


@pytest.mark.e2e
def test_cli_exit_codes_and_evaluate_json(settings_env: Settings, demo_builds: dict[str, Any]) -> None:
    passed = _cli("evaluate", "--model", str(demo_builds["1"].archive_path),
                  "--data", str(demo_builds["1"].heldout_path), "--format", "json", "--promote")
    assert passed.returncode == 0, passed.stderr[-2000:]
    payload = json.loads(passed.stdout)
    assert payload["status"] == "passed" and payload["gate"]["passed"] is True
    assert payload["promoted"].startswith("promoted gss-high-income v1")
    auc = payload["metrics"]["roc_auc"]
    assert auc["ci_lower"] <= auc["value"] <= auc["ci_upper"]
    blocked = _cli("evaluate", "--model", str(demo_builds["2"].archive_path),
                   "--data", str(demo_builds["2"].heldout_path), "--format", "json")
    assert blocked.returncode == 3, blocked.stderr[-2000:]
    payload = json.loads(blocked.stdout)
    assert payload["status"] == "blocked" and payload["champion_deltas"] is not None
    assert any(c["verdict"] == "breach" and c["effect"] == "block"
               and c["sensitive_feature"] == "gender" for c in payload["gate"]["checks"])
    assert "blocked: breached — [gender] equalized_odds_difference" in payload["gate"]["summary"]
    text = _cli("evaluate", "--model", str(demo_builds["2"].archive_path),
                "--data", str(demo_builds["2"].heldout_path), "--format", "text")
    assert text.returncode == 3, text.stderr[-2000:]
    for name, metric in payload["metrics"].items():  # passing metrics too, with their values
        if metric["value"] is not None:
            assert f"{name}" in text.stdout and f"{metric['value']:.4f}" in text.stdout, name
    usage = _cli("evaluate", "--model")
    assert usage.returncode == 2
    missing = _cli("evaluate", "--model", str(demo_builds["1"].archive_path), "--data", "/nope.parquet")
    assert missing.returncode == 1 and "/nope.parquet" in missing.stderr


def test_cli_fairness_matches_fairlearn(tmp_path: Path) -> None:
    from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

    rng = np.random.default_rng(7)
    n = 3000
    frame = pd.DataFrame({
        "y": rng.integers(0, 2, n), "y_hat": rng.integers(0, 2, n),
        "g": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
    })
    frame.to_parquet(tmp_path / "scored.parquet")
    out = _cli("fairness", "--data", str(tmp_path / "scored.parquet"), "--label", "y",
               "--prediction", "y_hat", "--sensitive", "g", "--format", "json", "--bootstrap", "50")
    assert out.returncode == 0, out.stderr
    gaps = json.loads(out.stdout)["g"]["gaps"]
    expected_eod = equalized_odds_difference(frame.y, frame.y_hat, sensitive_features=frame.g)
    expected_dpd = demographic_parity_difference(frame.y, frame.y_hat, sensitive_features=frame.g)
    assert gaps["equalized_odds_difference"]["value"] == pytest.approx(expected_eod, abs=1e-12)
    assert gaps["demographic_parity_difference"]["value"] == pytest.approx(expected_dpd, abs=1e-12)


@pytest.mark.e2e
def test_cli_drift_matches_scipy_and_explain_is_additive(
    tmp_path: Path, demo_builds: dict[str, Any],
) -> None:
    build = demo_builds["1"]
    current = build.live_dir / f"dt={build.live_dates[-1].isoformat()}" / "part-0.parquet"
    out = _cli("drift", "--reference", str(build.reference_path), "--current", str(current),
               "--features", "age,prestg10,educcat", "--format", "json")
    assert out.returncode in (0, 3), out.stderr
    features = {f["feature"]: f for f in json.loads(out.stdout)["features"]}
    ref, cur = pd.read_parquet(build.reference_path), pd.read_parquet(current)
    for name in ("age", "prestg10"):
        expected = scipy.stats.wasserstein_distance(ref[name].dropna(), cur[name].dropna())
        assert features[name]["wasserstein"] == pytest.approx(expected, rel=1e-9)
    assert features["educcat"]["kind"] == "categorical"
    explained = _cli("explain", "--model", str(build.archive_path), "--data", str(build.heldout_path),
                     "--rows", "3", "--format", "json")
    assert explained.returncode == 0, explained.stderr
    shap = json.loads(explained.stdout)
    values = np.asarray(shap["values"])
    assert values.shape == (3, len(shap["features"]))
    gap = np.asarray(shap["base_values"]) + values.sum(axis=1) - np.asarray(shap["model_output"])
    assert np.abs(gap).max() < 1e-6


@pytest.mark.e2e
def test_db_upgrade_and_stop_on_the_embedded_default() -> None:
    """No MODELGATE_DATABASE_URL: `db upgrade` starts a private PostgreSQL, `db stop` stops it."""
    import tempfile

    # Not under pytest's basetemp (mode 0700): pgserver runs PostgreSQL as its own user.
    home = Path(tempfile.mkdtemp(prefix="modelgate-embedded-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELGATE_")}
    env["MODELGATE_HOME"] = str(home)
    try:
        up = subprocess.run([sys.executable, "-m", "modelgate.cli", "db", "upgrade"], env=env,
                            capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stderr[-2000:]
        from modelgate.store.db import load_migrations

        assert f"applied {len(load_migrations())} migration(s)" in up.stdout
        assert f"host={home}" in up.stdout
        again = subprocess.run([sys.executable, "-m", "modelgate.cli", "db", "upgrade"], env=env,
                               capture_output=True, text=True, timeout=300)
        assert "applied 0 migration(s)" in again.stdout
        stop = subprocess.run([sys.executable, "-m", "modelgate.cli", "db", "stop"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0 and "stopped" in stop.stdout
        assert not (home / "pgdata" / "postmaster.pid").exists()
    finally:
        shutil.rmtree(home, ignore_errors=True)
