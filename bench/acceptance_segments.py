"""Acceptance of issues #43 (segments) and #38 (honest fairness verdicts) as a new user tries them.

Public data the project has never used (statsmodels' bundled ``fair`` and ``randhie``,
scikit-learn's bundled ``digits`` and ``diabetes``), models trained and exported to ONNX here
as docs/model-archives.md says, every evaluation through the command line
(``modelgate evaluate --segments ... --format json``) against a results database of its own,
and every expected number computed here with scikit-learn on the scored rows (ONNX Runtime
directly, not through modelgate). Seeded; a few minutes on two idle cores.

Usage::

    psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE acceptance_segments'
    python bench/acceptance_segments.py \
        --database-url postgresql://postgres@127.0.0.1:5432/acceptance_segments \
        --workdir /tmp/acceptance [--draws 20]

It prints one table of findings (the one in bench/RESULTS.md, "Acceptance on unseen data,
issues #38 and #43") and writes every number to ``<workdir>/findings.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pandas as pd
import psycopg2
import statsmodels.api as sm
from skl2onnx import to_onnx
from sklearn import metrics as skm
from sklearn.datasets import load_diabetes, load_digits
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression, Ridge

from modelgate.onnx.artifact import package

FAIR_FEATURES = ["rate_marriage", "age", "yrs_married", "children", "religious", "educ",
                 "occupation", "occupation_husb"]
HIE_FEATURES = ["lncoins", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp"]
SEGMENTS = "occupation_name,religiousness"
SEGMENT_POLICY = """
segments:
  min_rows: 100
  metrics:
    roc_auc: {margin: 0.0, on_inconclusive: warn}
    accuracy: {margin: 0.0, on_inconclusive: warn}
"""


class Cli:
    """``modelgate`` as a user runs it, against this run's own database and store."""

    def __init__(self, workdir: Path, database_url: str) -> None:
        self.env = dict(os.environ, MODELGATE_DATABASE_URL=database_url,
                        MODELGATE_HOME=str(workdir / "home"))
        self.exe = str(Path(sys.executable).with_name("modelgate"))
        self.database_url = database_url

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.exe, *args], env=self.env, capture_output=True, text=True,
                              check=False)

    def evaluate(self, archive: Path, data: Path, *extra: str) -> tuple[int, dict[str, Any] | None,
                                                                          str]:
        done = self.run("evaluate", "--model", str(archive), "--data", str(data), "--format", "json",
                        *extra)
        payload = json.loads(done.stdout) if done.stdout.strip().startswith("{") else None
        return done.returncode, payload, done.stderr

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = psycopg2.connect(self.database_url)
        try:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                return list(cur.fetchall())
        finally:
            conn.close()


def _package(workdir: Path, onx: Any, manifest: dict[str, Any]) -> Path:
    src = workdir / f"{manifest['name']}-v{manifest['version']}"
    src.mkdir(parents=True, exist_ok=True)
    (src / "model.onnx").write_bytes(onx.SerializeToString())
    (src / "manifest.json").write_text(json.dumps({"format_version": 1, **manifest}))
    # a folder per model: the archive's name holds the sha and version, not the model's name
    return Path(package(src / "model.onnx", src / "manifest.json", src / "dist"))


def _binary_manifest(name: str, version: str, features: list[str], label: str,
                     sensitive: list[str]) -> dict[str, Any]:
    return {"name": name, "version": version, "input_tensor": "X",
            "features": [{"name": f, "kind": "numeric"} for f in features],
            "label": {"column": label, "positive": 1}, "threshold": 0.5,
            "output": {"name": "probabilities"}, "sensitive_features": sensitive}


def _scores(archive_src: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(archive_src / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    out = session.run(["probabilities"], {"X": x.astype(np.float32)})[0]
    return np.asarray(out)[:, 1].astype(np.float64)


def fair_data(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """statsmodels' ``fair`` (6,366 women, Redbook 1974): label "had an affair"; split 3,000 / rest."""
    d = sm.datasets.fair.load_pandas().data
    frame = d[FAIR_FEATURES].copy()
    frame["had_affair"] = (d["affairs"] > 0).astype(np.int64)
    frame["occupation_name"] = frame["occupation"].map(lambda v: f"occ{int(v)}")
    frame["religiousness"] = frame["religious"].map(lambda v: f"rel{int(v)}")
    rng = np.random.default_rng(seed)
    frame["group3"] = np.array(["a", "b", "c"])[rng.integers(0, 3, len(frame))]
    order = rng.permutation(len(frame))
    return frame.iloc[order[:3000]].reset_index(drop=True), frame.iloc[order[3000:]].reset_index(
        drop=True)


def _sklearn_metrics(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    yhat = (s >= 0.5).astype(int)
    out = {"accuracy": skm.accuracy_score(y, yhat), "log_loss": skm.log_loss(y, s, labels=[0, 1]),
           "brier": skm.brier_score_loss(y, s)}
    if 0 < y.sum() < len(y):
        out["roc_auc"] = skm.roc_auc_score(y, s)
    if yhat.sum():
        out["precision"] = skm.precision_score(y, yhat)
    if y.sum():
        out["recall"] = skm.recall_score(y, yhat)
        out["f1"] = skm.f1_score(y, yhat)
    return out


def check_segment_metrics(payload: dict[str, Any], held: pd.DataFrame,
                          scores: np.ndarray) -> dict[str, Any]:
    """1. Every (column, value) record against scikit-learn on that slice and on its rest."""
    worst = 0.0
    records = payload["segments"]["records"]
    missing_keys: list[str] = []
    compared = 0
    for rec in records:
        mask = np.ones(len(held), dtype=bool)
        for col, val in zip(rec["columns"], rec["values"], strict=True):
            mask &= held[col].astype(str).to_numpy() == val
        y = held["had_affair"].to_numpy()
        assert rec["n"] == int(mask.sum()), (rec["segment"], rec["n"], int(mask.sum()))
        expected = _sklearn_metrics(y[mask], scores[mask])
        rest = _sklearn_metrics(y[~mask], scores[~mask])
        for name, got in rec["metrics"].items():
            if name in expected and got["value"] is not None:
                worst = max(worst, abs(got["value"] - expected[name]))
                compared += 1
            if rec["judged"]:
                for key in ("ci_lower", "ci_upper", "difference", "difference_ci_lower",
                            "difference_ci_upper", "p_value", "q_value"):
                    if got.get(key) is None and got["value"] is not None:
                        missing_keys.append(f"{rec['segment']}:{name}:{key}")
                if got["rest_value"] is not None and name in rest:
                    worst = max(worst, abs(got["rest_value"] - rest[name]))
                    diff = got["value"] - got["rest_value"]
                    worst = max(worst, abs(got["difference"] - diff))
    return {"records": len(records), "judged": sum(r["judged"] for r in records),
            "values_compared": compared, "max_abs_diff_vs_sklearn": worst,
            "missing_keys": missing_keys[:5], "n_missing_keys": len(missing_keys)}


def _segment_flags(payload: dict[str, Any]) -> tuple[int, int]:
    checks = [c for c in payload["gate"]["checks"] if c["kind"] == "segment"]
    breaches = sum(c["verdict"] == "breach" for c in checks)
    slices = len(payload["segments"]["weakest_slices"]["slices"])
    return breaches, slices


def random_segment_draws(cli: Cli, workdir: Path, draws: int) -> dict[str, Any]:
    """2. 20-50 values assigned at random (no true difference): runs with any segment flagged."""
    d = sm.datasets.randhie.load_pandas().data
    y = (d["mdvis"] > 0).astype(np.int64).to_numpy()
    x = d[HIE_FEATURES].to_numpy(np.float32)
    rng = np.random.default_rng(1)
    order = rng.permutation(len(d))
    train, test = order[:10000], order[10000:]
    model = LogisticRegression(max_iter=2000).fit(x[train], y[train])
    onx = to_onnx(model, x[:1], options={"zipmap": False})
    archive = _package(workdir, onx, _binary_manifest("hie-visits", "1", HIE_FEATURES, "any_visit",
                                                      ["group3"]))
    held = pd.DataFrame(x[test], columns=HIE_FEATURES)
    held["any_visit"] = y[test]
    held["group3"] = np.array(["a", "b", "c"])[rng.integers(0, 3, len(held))]
    policy = workdir / "segment_policy.yaml"
    policy.write_text(SEGMENT_POLICY)
    runs: list[dict[str, Any]] = []
    for draw in range(draws):
        r = np.random.default_rng(1000 + draw)
        k = int(r.integers(20, 51))
        frame = held.copy()
        frame["random_segment"] = [f"s{v:02d}" for v in r.integers(0, k, len(frame))]
        data = workdir / f"random_{draw}.parquet"
        frame.to_parquet(data)
        rc, payload, err = cli.evaluate(archive, data, "--policy", str(policy),
                                        "--segments", "random_segment")
        if payload is None:
            runs.append({"draw": draw, "k": k, "error": err.strip().splitlines()[-1:]})
            continue
        breaches, slices = _segment_flags(payload)
        judged = sum(rec["judged"] for rec in payload["segments"]["records"])
        runs.append({"draw": draw, "k": k, "judged": judged, "gate_breaches": breaches,
                     "weakest_slices": slices})
    ok = [r for r in runs if "error" not in r]
    return {"draws": len(runs), "n_rows": len(held), "errors": len(runs) - len(ok),
            "runs_gate_breach": sum(r["gate_breaches"] > 0 for r in ok),
            "runs_weakest_slice": sum(r["weakest_slices"] > 0 for r in ok),
            "runs_any_flag": sum(r["gate_breaches"] + r["weakest_slices"] > 0 for r in ok),
            "runs": runs}


def planted_weak_slice(cli: Cli, archive: Path, held: pd.DataFrame, workdir: Path,
                       target: str = "occ4") -> dict[str, Any]:
    """3. Labels of 30 % of one slice's rows flipped: is that slice found and named?"""
    frame = held.copy()
    rng = np.random.default_rng(3)
    rows = np.flatnonzero(frame["occupation_name"].to_numpy() == target)
    flip = rng.choice(rows, size=int(round(0.3 * len(rows))), replace=False)
    frame.loc[flip, "had_affair"] = 1 - frame.loc[flip, "had_affair"]
    data = workdir / "planted.parquet"
    frame.to_parquet(data)
    policy = workdir / "segment_policy.yaml"
    policy.write_text(SEGMENT_POLICY)
    rc, payload, err = cli.evaluate(archive, data, "--policy", str(policy), "--segments", SEGMENTS)
    assert payload is not None, err
    checks = [c for c in payload["gate"]["checks"] if c["kind"] == "segment"]
    slices = payload["segments"]["weakest_slices"]["slices"]
    named = [c["check_id"] for c in checks if c["verdict"] == "breach"
             and f"occupation_name={target}" in c["reason"]]
    return {"slice": f"occupation_name={target}", "rows": len(rows), "flipped": len(flip),
            "exit_code": rc, "breaches_naming_it": named,
            "other_breaches": [c["check_id"] for c in checks if c["verdict"] == "breach"
                               and c["check_id"] not in named],
            "weakest_first": [(x["segment"], x["metric_name"], round(x["difference"], 3))
                              for x in slices[:5]],
            "weakest_rank_of_target": next((i + 1 for i, s in enumerate(slices)
                                            if s["segment"] == f"occupation_name={target}"), None),
            "reasons": [c["reason"] for c in checks if c["verdict"] == "breach"][:2]}


def worse_since_last_version(cli: Cli, workdir: Path, train: pd.DataFrame, held: pd.DataFrame,
                             first: dict[str, Any], target: str = "occ5") -> dict[str, Any]:
    """4. Version 2 trained with one slice's labels scrambled; the documented query names it."""
    rng = np.random.default_rng(4)
    spoiled = train.copy()
    rows = np.flatnonzero(spoiled["occupation_name"].to_numpy() == target)
    spoiled.loc[rows, "had_affair"] = rng.permutation(spoiled.loc[rows, "had_affair"].to_numpy())
    spoiled.loc[rows, "occupation_husb"] = rng.permutation(
        spoiled.loc[rows, "occupation_husb"].to_numpy())
    x = spoiled[FAIR_FEATURES].to_numpy(np.float32)
    model = GradientBoostingClassifier(n_estimators=60, max_depth=3, random_state=0).fit(
        x, spoiled["had_affair"].to_numpy())
    onx = to_onnx(model, x[:1], options={"zipmap": False})
    archive = _package(workdir, onx, _binary_manifest("affairs", "2", FAIR_FEATURES, "had_affair",
                                                      ["group3"]))
    rc, payload, err = cli.evaluate(archive, workdir / "heldout.parquet", "--segments", SEGMENTS)
    assert payload is not None, err
    sql = _documented_query("segment_worse_than_previous_version")
    query_rows = [r for r in cli.query(sql) if r[0] == "affairs"]
    v1 = {r["segment"]: r["metrics"]["roc_auc"]["value"] for r in first["segments"]["records"]
          if r["judged"]}
    v2 = {r["segment"]: r["metrics"]["roc_auc"]["value"] for r in payload["segments"]["records"]
          if r["judged"]}
    by_hand = sorted((v2[s] - v1[s], s) for s in v1 if s in v2)
    return {"query_rows": len(query_rows), "query_worst": query_rows[0][1] if query_rows else None,
            "query_worst_change": float(query_rows[0][6]) if query_rows else None,
            "by_hand_worst": by_hand[0][1], "by_hand_worst_change": by_hand[0][0],
            "max_abs_diff_query_vs_json": max(abs(float(r[6]) - (v2[r[1]] - v1[r[1]]))
                                              for r in query_rows) if query_rows else None,
            "spoiled_slice": f"occupation_name={target}"}


def _documented_query(name: str) -> str:
    text = (Path(__file__).resolve().parents[1] / "sql" / "README.md").read_text()
    block = text.split(f"<!-- query: {name} -->", 1)[1]
    return block.split("```sql", 1)[1].split("```", 1)[0]


def fairness_draws(cli: Cli, archive: Path, held: pd.DataFrame, workdir: Path, draws: int,
                   n: int = 200) -> dict[str, Any]:
    """5. A fair model, a random 3-group attribute, n rows: how often does the default gate block?"""
    outcomes: list[dict[str, Any]] = []
    for draw in range(draws):
        r = np.random.default_rng(5000 + draw)
        frame = held.iloc[r.choice(len(held), n, replace=False)].copy()
        frame["group3"] = np.array(["a", "b", "c"])[r.integers(0, 3, n)]
        data = workdir / f"fair_{draw}.parquet"
        frame.to_parquet(data)
        rc, payload, err = cli.evaluate(archive, data)
        if payload is None:
            outcomes.append({"draw": draw, "error": err.strip().splitlines()[-1:]})
            continue
        eod = next(c for c in payload["gate"]["checks"]
                   if c["check_id"] == "fairness:group3:equalized_odds_difference")
        outcomes.append({"draw": draw, "verdict": eod["verdict"], "effect": eod["effect"],
                         "ci": [eod["ci_lower"], eod["ci_upper"]], "observed": eod["observed"],
                         "rows_to_decide": eod.get("rows_to_decide"),
                         "says_rows": "more rows" in eod["reason"], "exit_code": rc})
    ok = [o for o in outcomes if "error" not in o]
    inconclusive = [o for o in ok if o["verdict"] == "inconclusive"]
    return {"draws": len(outcomes), "n": n, "errors": len(outcomes) - len(ok),
            "breach": sum(o["verdict"] == "breach" for o in ok),
            "inconclusive": len(inconclusive), "pass": sum(o["verdict"] == "pass" for o in ok),
            "blocked_by_eod": sum(o["effect"] == "block" for o in ok),
            "ci_holds_0": sum(o["ci"][0] is not None and o["ci"][0] <= 1e-12 for o in ok),
            "inconclusive_with_rows_to_decide": sum(o["rows_to_decide"] is not None and o["says_rows"]
                                                    for o in inconclusive),
            "outcomes": outcomes}


def rows_to_decide_kept(cli: Cli, archive: Path, held: pd.DataFrame, workdir: Path,
                       outcomes: list[dict[str, Any]], draws: int = 10) -> dict[str, Any]:
    """5d. Fresh samples of n + the suggested more rows: how often do they decide the check?"""
    verdicts: list[dict[str, Any]] = []
    for o in [o for o in outcomes if o.get("rows_to_decide")][:draws]:
        n = 200 + int(o["rows_to_decide"])
        r = np.random.default_rng(7000 + o["draw"])
        frame = held.iloc[r.choice(len(held), min(n, len(held)), replace=False)].copy()
        frame["group3"] = np.array(["a", "b", "c"])[r.integers(0, 3, len(frame))]
        data = workdir / f"promise_{o['draw']}.parquet"
        frame.to_parquet(data)
        rc, payload, err = cli.evaluate(archive, data)
        if payload is None:
            verdicts.append({"n": n, "error": err.strip().splitlines()[-1:]})
            continue
        eod = next(c for c in payload["gate"]["checks"]
                   if c["check_id"] == "fairness:group3:equalized_odds_difference")
        verdicts.append({"n": n, "verdict": eod["verdict"], "observed": eod["observed"],
                         "ci": [eod["ci_lower"], eod["ci_upper"]]})
    return {"draws": len(verdicts),
            "n_range": [min(v["n"] for v in verdicts), max(v["n"] for v in verdicts)]
            if verdicts else None,
            "decided": sum(v.get("verdict") in ("pass", "breach") for v in verdicts),
            "verdicts": verdicts}


def inconclusive_everywhere(cli: Cli, archive: Path, workdir: Path) -> dict[str, Any]:
    """5b. One inconclusive run: the rows that would decide, in the text, the JSON and the report."""
    data = workdir / "fair_0.parquet"
    text = cli.run("evaluate", "--model", str(archive), "--data", str(data), "--format", "text")
    rc, payload, err = cli.evaluate(archive, data)
    assert payload is not None, err
    report = payload["report"]
    html = Path(report[7:]).read_text() if report and report.startswith("file://") else ""
    inc = [c for c in payload["gate"]["checks"] if c["verdict"] == "inconclusive"]
    stored = cli.query("SELECT check_id, rows_to_decide FROM analytics.gate_checks "
                       "WHERE evaluation_run_id = %s AND verdict = 'inconclusive'",
                       (payload["evaluation_run_id"],))
    return {"inconclusive_checks": [c["check_id"] for c in inc],
            "json_rows_to_decide": [c["rows_to_decide"] for c in inc],
            "text_says_more_rows": "more rows" in text.stdout + text.stderr,
            "report_says_more_rows": "more rows" in html,
            "stored_rows_to_decide": [r[1] for r in stored]}


def other_tasks(cli: Cli, workdir: Path) -> dict[str, Any]:
    """5c. A 10-class and a regression model with a sensitive feature: checks or a warning line."""
    out: dict[str, Any] = {}
    digits = load_digits()
    x = digits.data.astype(np.float32)
    rng = np.random.default_rng(6)
    order = rng.permutation(len(x))
    train, test = order[:900], order[900:]
    names = [f"px{i}" for i in range(x.shape[1])]
    model = LogisticRegression(max_iter=3000).fit(x[train], digits.target[train])
    onx = to_onnx(model, x[:1], options={"zipmap": False})
    archive = _package(workdir, onx, {
        "name": "digits", "version": "1", "task": "multiclass_classification", "input_tensor": "X",
        "features": [{"name": n, "kind": "numeric"} for n in names],
        "label": {"column": "digit"}, "output": {"name": "probabilities"},
        "sensitive_features": ["group3"]})
    frame = pd.DataFrame(x[test], columns=names)
    frame["digit"] = digits.target[test]
    frame["group3"] = np.array(["a", "b", "c"])[rng.integers(0, 3, len(frame))]
    frame.to_parquet(workdir / "digits.parquet")
    out["multiclass"] = _fairness_checks_of(cli.evaluate(archive, workdir / "digits.parquet"))

    diabetes = load_diabetes(scaled=False)
    xr = diabetes.data.astype(np.float32)
    rnames = list(diabetes.feature_names)
    order = rng.permutation(len(xr))
    train, test = order[:250], order[250:]
    reg = Ridge().fit(xr[train], diabetes.target[train])
    archive = _package(workdir, to_onnx(reg, xr[:1]), {
        "name": "diabetes", "version": "1", "task": "regression", "input_tensor": "X",
        "features": [{"name": n, "kind": "numeric"} for n in rnames],
        "label": {"column": "progression"}, "sensitive_features": ["sex"]})
    frame = pd.DataFrame(xr[test], columns=rnames)
    frame["progression"] = diabetes.target[test]
    frame.to_parquet(workdir / "diabetes.parquet")
    out["regression"] = _fairness_checks_of(cli.evaluate(archive, workdir / "diabetes.parquet",
                                                         "--segments", "sex"))
    return out


def _fairness_checks_of(result: tuple[int, dict[str, Any] | None, str]) -> dict[str, Any]:
    rc, payload, err = result
    if payload is None:
        return {"exit_code": rc, "error": err.strip().splitlines()[-1:]}
    checks = [c for c in payload["gate"]["checks"] if c["kind"] == "fairness"]
    return {"exit_code": rc, "fairness_checks": len(checks),
            "verdicts": sorted({c["verdict"] for c in checks}),
            "summary_first_line": payload["gate"]["summary"].splitlines()[0],
            "warning_lines": [ln for ln in payload["gate"]["summary"].splitlines()
                              if "sensitive" in ln.lower() and "WARN" in ln][:2],
            "segments": len((payload.get("segments") or {}).get("records", []))}


def bad_inputs(cli: Cli, archive: Path, held: pd.DataFrame, workdir: Path) -> dict[str, Any]:
    """6. A column that does not exist, one with nulls, a numeric one of 10,000 distinct values."""
    out: dict[str, Any] = {}
    frame = held.copy()
    frame["occupation_with_nulls"] = frame["occupation_name"].where(
        np.arange(len(frame)) % 7 != 0, None)
    wide = pd.concat([frame] * 4, ignore_index=True)
    wide["row_number"] = np.arange(len(wide), dtype=np.float64) + 0.5
    frame.to_parquet(workdir / "nulls.parquet")
    wide.to_parquet(workdir / "wide.parquet")
    cases = {"missing_column": (workdir / "heldout.parquet", "occupaton_name"),
             "nulls": (workdir / "nulls.parquet", "occupation_with_nulls"),
             "10k_distinct": (workdir / "wide.parquet", "row_number")}
    for case, (data, column) in cases.items():
        before = cli.query("SELECT count(*) FROM analytics.segment_metrics")[0][0]
        started = time.perf_counter()
        rc, payload, err = cli.evaluate(archive, data, "--segments", column)
        after = cli.query("SELECT count(*) FROM analytics.segment_metrics")[0][0]
        running = cli.query("SELECT count(*) FROM analytics.evaluation_runs WHERE status = 'running'")
        message = err.strip().splitlines()[-1] if err.strip() else ""
        out[case] = {"exit_code": rc, "seconds": round(time.perf_counter() - started, 1),
                     "message": message[:300], "names_column": column in message,
                     "segment_rows_added": after - before, "runs_left_running": running[0][0]}
        if payload is not None:
            recs = payload["segments"]["records"]
            out[case]["segments"] = len(recs)
            out[case]["missing_segment"] = next((r["n"] for r in recs
                                                 if r["values"] == ["__missing__"]), None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--only", default="1,2,3,4,5,6",
                        help="items to run, comma-separated (5d: only item 5's rows-to-decide "
                             "check, on the draws an earlier run of item 5 left in --workdir)")
    args = parser.parse_args()
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    cli = Cli(workdir, args.database_url)
    only = set(args.only.split(","))
    # several --only invocations add to one record
    record = workdir / "findings.json"
    findings: dict[str, Any] = json.loads(record.read_text()) if record.exists() else {}
    started = time.perf_counter()

    train, held = fair_data()
    x = train[FAIR_FEATURES].to_numpy(np.float32)
    model = GradientBoostingClassifier(n_estimators=60, max_depth=3, random_state=0).fit(
        x, train["had_affair"].to_numpy())
    onx = to_onnx(model, x[:1], options={"zipmap": False})
    archive = _package(workdir, onx, _binary_manifest("affairs", "1", FAIR_FEATURES, "had_affair",
                                                      ["group3"]))
    held.to_parquet(workdir / "heldout.parquet")
    scores = _scores(workdir / "affairs-v1", held[FAIR_FEATURES].to_numpy())
    findings["sklearn_vs_onnx_max_score_diff"] = float(np.max(np.abs(
        scores - model.predict_proba(held[FAIR_FEATURES].to_numpy(np.float32))[:, 1])))

    rc, first, err = cli.evaluate(archive, workdir / "heldout.parquet", "--segments", SEGMENTS)
    assert first is not None, err
    if "1" in only:
        findings["1_segment_metrics"] = check_segment_metrics(first, held, scores)
    if "2" in only:
        findings["2_random_segments"] = random_segment_draws(cli, workdir, args.draws)
    if "3" in only:
        planted = _package(workdir, onx, _binary_manifest("affairs-planted", "1", FAIR_FEATURES,
                                                          "had_affair", ["group3"]))
        findings["3_planted"] = planted_weak_slice(cli, planted, held, workdir)
    if "4" in only:
        findings["4_worse_since_last_version"] = worse_since_last_version(cli, workdir, train,
                                                                          held, first)
    if "5" in only:
        fair_archive = _package(workdir, onx, _binary_manifest("affairs-fair", "1", FAIR_FEATURES,
                                                               "had_affair", ["group3"]))
        findings["5_fairness_n200"] = fairness_draws(cli, fair_archive, held, workdir, args.draws)
        findings["5_inconclusive_rows"] = inconclusive_everywhere(cli, fair_archive, workdir)
        findings["5_other_tasks"] = other_tasks(cli, workdir)
    if "5" in only or "5d" in only:
        fair_archive = _package(workdir, onx, _binary_manifest("affairs-fair", "1", FAIR_FEATURES,
                                                               "had_affair", ["group3"]))
        findings["5_rows_to_decide_kept"] = rows_to_decide_kept(
            cli, fair_archive, held, workdir, findings["5_fairness_n200"]["outcomes"])
    if "6" in only:
        findings["6_bad_inputs"] = bad_inputs(cli, archive, held, workdir)
    findings["seconds"] = round(time.perf_counter() - started, 1)
    findings["load_average_1min_at_end"] = os.getloadavg()[0]
    record.write_text(json.dumps(findings, indent=1, default=str))
    print(json.dumps({k: ({kk: vv for kk, vv in v.items() if kk not in ("runs", "outcomes")}
                          if isinstance(v, dict) else v) for k, v in findings.items()},
                     indent=1, default=str))


if __name__ == "__main__":
    main()
