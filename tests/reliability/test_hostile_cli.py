"""The command line under hostile use: usage errors exit 2 before any work, ``--data`` takes
what the README says in every command, names printed to a terminal cannot forge output, and
evaluation attempts never share scratch space.

Models are the closed-form graphs of ``tiny_graphs`` (scores are ``scipy.special.expit`` and
``softmax`` of the input), so expected numbers come from scipy and scikit-learn.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from modelgate.evaluation.labels import LabelError, binary_labels, class_indices
from scipy.special import expit
from sklearn.metrics import roc_auc_score
from support.tiny_graphs import SCALE, archive, binary_graph, three_class_graph

from modelgate import cli
from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.onnx import scoring as onnx_scoring
from modelgate.onnx.artifact import ArtifactError, LoadedModel
from modelgate.onnx.scoring import ScoringError
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all


def _three_class(tmp_path: Path) -> LoadedModel:
    return archive(tmp_path / "three", three_class_graph(), name="three", task="multiclass_classification",
                   label={"column": "y"}, output={"name": "probabilities", "classes": [0, 1, 2]},
                   threshold=None)


def _binary(tmp_path: Path, **manifest: Any) -> LoadedModel:
    return archive(tmp_path / "binary", binary_graph("FLOAT"), **manifest)


def _frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 2000.0, n)
    return pd.DataFrame({"row_id": np.arange(n, dtype=np.int64), "x": x,
                         "y": (rng.random(n) < expit(x * SCALE)).astype(np.int64),
                         "group": np.where(np.arange(n) % 2 == 0, "a", "b")})


# --- usage errors: exit 2, raised by argument parsing or the one validation layer ------------

USAGE = {  # the cases, then the other numeric options found by grepping the parsers
    "thresholds-not-json": ["monitor", "set", "m", "--live", "l", "--labels", "l",
                            "--thresholds", "{relative: 2"],
    "thresholds-not-object": ["monitor", "set", "m", "--live", "l", "--labels", "l",
                              "--thresholds", "[1]"],
    "sample-rows-negative": ["monitor", "set", "m", "--live", "l", "--labels", "l",
                             "--sample-rows", "-5"],
    "interval-yesterday": ["monitor", "retry", "m", "--interval", "yesterday"],
    "rows-zero": ["explain", "--model", "m.tar.gz", "--data", "d.parquet", "--rows", "0"],
    "background-zero": ["explain", "--model", "m.tar.gz", "--data", "d.parquet", "--background", "0"],
    "batch-rows-zero": ["score", "--model", "m", "--data", "d", "--out", "o", "--batch-rows", "0"],
    "bootstrap-negative": ["fairness", "--data", "d", "--label", "y", "--prediction", "p",
                           "--sensitive", "g", "--bootstrap", "-1"],
    "bootstrap-huge": ["fairness", "--data", "d", "--label", "y", "--prediction", "p",
                       "--sensitive", "g", "--bootstrap", "10000000000"],
    "delta-outside": ["drift", "--reference", "r", "--current", "c", "--delta", "2"],
    "bins-zero": ["drift", "--reference", "r", "--current", "c", "--bins", "0"],
    "data-s3-no-bucket": ["evaluate", "--model", "m", "--data", "s3://"],
    "nul-in-name": ["monitor", "unset", "to\x00y"],
    "keep-clashes": ["score", "--model", "m", "--data", "d", "--out", "o", "--keep", "score"],
}
_MONITOR = ["monitor", "set", "m", "--live", "l", "--labels", "l"]
#: Issue #37: configuration the CLI took and failed on later (or judged by the wrong value);
#: each is a usage error whose message names the argument.
NAMED = {
    "thresholds-key-twice": ([*_MONITOR, "--thresholds", '{"relative": 1.2, "relative": 9}'],
                             "argument --thresholds: key 'relative' is given twice in one object"),
    "thresholds-400-digits": ([*_MONITOR, "--thresholds", '{"relative": %s}' % ("9" * 400)],
                              "argument --thresholds: the value of key 'relative' must be a finite "
                              "number"),
    "thresholds-5000-digits": ([*_MONITOR, "--thresholds", '{"relative": %s}' % ("9" * 5000)],
                               "<a number of 5,000 characters>"),
    "thresholds-nan": ([*_MONITOR, "--thresholds", '{"js_floor": NaN}'],
                       "argument --thresholds: the value of key 'js_floor' must be a finite number"),
    "thresholds-overflow-float": ([*_MONITOR, "--thresholds", '{"relative": 1e400}'],
                                  "got '1e400'"),
    "thresholds-deep": ([*_MONITOR, "--thresholds", '{"a": ' * 100_000 + "1" + "}" * 100_000],
                        "argument --thresholds: nests deeper than 32 levels"),
    "thresholds-control-key": ([*_MONITOR, "--thresholds", '{"features": {"a\\u0007ge": {}}}'],
                               "argument --thresholds: key 'features'.'a\\x07ge' holds a control "
                               "character"),
    "thresholds-nul-key": ([*_MONITOR, "--thresholds", '{"a\\u0000": 1}'],
                           "argument --thresholds: key 'a\\x00' holds a control character"),
    "runs-400-digits": (["model", "show", "m", "--runs", "9" * 400],
                        "argument --runs: must be an integer from 1 to 9,223,372,036,854,775,807, "
                        "got '999"),
    "runs-5000-digits": (["model", "show", "m", "--runs", "9" * 5000], "... (5,002 characters)"),
    "run-id-past-bigint": (["report", "link", str(2**63)],
                           "argument run_id: must be an integer from 1 to 9,223,372,036,854,775,807"),
    "batch-rows-5000-digits": (["score", "--model", "m", "--data", "d", "--out", "o",
                                "--batch-rows", "9" * 5000], "argument --batch-rows: must be"),
    "policy-missing": (["evaluate", "--model", "m", "--data", "d", "--policy", "/nowhere/p.yaml"],
                       "--policy '/nowhere/p.yaml': [Errno 2] No such file or directory"),
}


@pytest.mark.parametrize("argv", USAGE.values(), ids=USAGE.keys())
def test_usage_errors_exit_2_before_any_work(argv: list[str], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # No database or object store is configured: a usage error must not need one.
    monkeypatch.setenv("MODELGATE_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")
    monkeypatch.setenv("MODELGATE_HOME", str(tmp_path / "home"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]  # argparse prints its usage lines first
    assert last.startswith("modelgate") and "error: " in last and "Traceback" not in err
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize(("argv", "message"), NAMED.values(), ids=NAMED.keys())
def test_configuration_usage_errors_exit_2_naming_the_argument(
        argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MODELGATE_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")
    monkeypatch.setenv("MODELGATE_HOME", str(tmp_path / "home"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()[-1]) < 400  # a huge value is cut, not echoed
    assert not (tmp_path / "home").exists()


def test_a_malformed_policy_argument_is_a_usage_error_naming_it_and_the_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MODELGATE_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")
    monkeypatch.setenv("MODELGATE_HOME", str(tmp_path / "home"))
    policy = tmp_path / "p.yaml"
    policy.write_text("fairness:\n  min_positives_per_group: %s\n" % ("9" * 400))
    assert cli.main(["evaluate", "--model", "m", "--data", "d", "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert f"usage error: --policy {str(policy)!r}: policy key 'fairness.min_positives_per_group': " \
           "expected a whole number from 0 to 9,223,372,036,854,775,807" in err
    assert not (tmp_path / "home").exists()


def test_class_that_the_model_lacks_is_a_usage_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.parquet"
    _frame(20).to_parquet(data, index=False)
    three = _three_class(tmp_path).path
    assert cli.main(["explain", "--model", str(three), "--data", str(data), "--class", "7",
                     "--rows", "1", "--background", "5"]) == 2
    assert "--class '7' is not one of the model's classes ['0', '1', '2']" in capsys.readouterr().err
    binary = _binary(tmp_path).path
    assert cli.main(["explain", "--model", str(binary), "--data", str(data), "--class", "1"]) == 2
    assert "--class is for multiclass models" in capsys.readouterr().err


# --- labels: multiclass typed like binary, offending values listed ---------------------------

def test_multiclass_refuses_bool_labels_as_binary_does_and_lists_them() -> None:
    with pytest.raises(LabelError):  # the binary rule the multiclass one must match
        binary_labels([True, False, True], column="y", positive=1)
    with pytest.raises(LabelError, match=r"label column 'y' must hold the model's classes "
                                         r"\[0, 1, 2\]; found other values: True \(2 rows\), "
                                         r"False \(1 row\), '2' \(1 row\)"):
        class_indices([0, True, True, False, "2", 1], [0, 1, 2], column="y")
    assert class_indices([2, 1.0, 0], [0, 1, 2], column="y").tolist() == [2, 1, 0]  # 1.0 is 1


# --- --data: file, directory, s3:// prefix in every command ------------------------------------

def _partitions(frame: pd.DataFrame, root: Path) -> list[Path]:
    paths = []
    for i, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        path = root / f"day={i}" / "part-0.parquet"
        path.parent.mkdir(parents=True)
        frame.iloc[part].to_parquet(path, index=False)
        paths.append(path)
    return paths


def _upload(settings: Settings, files: list[Path], root: Path, prefix: str) -> str:
    ctx = Context.open(settings, migrate=False)
    for path in files:
        ctx.store.put_file(f"{prefix}/{path.relative_to(root).as_posix()}", path,
                           content_type="application/vnd.apache.parquet")
    assert settings.s3 is not None
    return f"s3://{settings.s3.bucket}/{prefix}"


@pytest.mark.e2e
def test_data_takes_a_file_a_directory_and_an_s3_prefix_in_every_command(
        settings_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frame = _frame(300)
    root = tmp_path / "heldout"
    files = _partitions(frame, root)
    s3 = _upload(settings_env, files, root, "data/heldout")
    model = _binary(tmp_path, sensitive_features=["group"]).path
    expected = expit(frame["x"].to_numpy() * SCALE)
    for source in (str(root), s3, f"{s3}/"):
        out = tmp_path / f"scores-{abs(hash(source))}.parquet"
        assert cli.main(["score", "--model", str(model), "--data", source, "--out", str(out)]) == 0
        scored = pd.read_parquet(out)
        assert scored["row_id"].tolist() == frame["row_id"].tolist()  # partition order
        np.testing.assert_allclose(scored["score"], expected, rtol=1e-5, atol=1e-7)  # float32
        capsys.readouterr()
        assert cli.main(["explain", "--model", str(model), "--data", source, "--rows", "2",
                         "--background", "10"]) == 0
        np.testing.assert_allclose(json.loads(capsys.readouterr().out)["model_output"],
                                   expected[:2], rtol=1e-5, atol=1e-7)
    assert cli.main(["fairness", "--data", s3, "--label", "y", "--prediction", "y",
                     "--sensitive", "group", "--bootstrap", "0"]) == 0
    groups = json.loads(capsys.readouterr().out)["group"]["groups"]
    assert sorted(g["n"] for g in groups) == [150, 150]
    code = cli.main(["evaluate", "--model", str(model), "--data", s3, "--format", "json"])
    assert code in (0, 3), capsys.readouterr().err
    payload = json.loads(capsys.readouterr().out)
    assert payload["rows_scored"] == len(frame)
    assert payload["metrics"]["roc_auc"]["value"] == pytest.approx(
        roc_auc_score(frame["y"], expected), abs=1e-9)
    assert cli.main(["evaluate", "--model", str(model), "--data", f"{s3}-none"]) == 1
    assert "holds no .parquet file" in capsys.readouterr().err


# --- scratch space: one per attempt, removed at the end ------------------------------------------

def _leftovers(settings: Settings) -> list[str]:
    work = settings.home.resolve() / "work"
    return sorted(str(p.relative_to(work)) for p in work.glob("*/*")) if work.exists() else []


@pytest.mark.e2e
def test_two_identical_evaluations_at_once_do_not_share_scratch(
        settings_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "heldout.parquet"
    _frame(300).to_parquet(data, index=False)
    model = _binary(tmp_path, sensitive_features=["group"]).path
    real, nested, started = onnx_scoring.score_parquet, [], []

    def score_then_run_the_twin(scorer: Any, src: Any, out: Any, **kw: Any) -> Any:
        done = real(scorer, src, out, **kw)
        if not started:  # the first run's candidate is scored into its scratch: run the twin now
            started.append(Path(out).parent)
            nested.append(run_evaluation_locally(model, data, None))
            assert Path(out).exists()  # the twin neither emptied nor removed this attempt's files
        return done

    monkeypatch.setattr(onnx_scoring, "score_parquet", score_then_run_the_twin)
    first = run_evaluation_locally(model, data, None)
    assert nested and first.payload["run_key"] == nested[0].payload["run_key"]
    assert not started[0].exists()
    assert first.payload["rows_scored"] == nested[0].payload["rows_scored"] == 300
    assert _leftovers(settings_env) == []


@pytest.mark.e2e
def test_scratch_is_removed_after_a_failed_attempt(settings_env: Settings, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "heldout.parquet"
    _frame(300).to_parquet(data, index=False)
    model = _binary(tmp_path, sensitive_features=["group"]).path
    seen: list[Path] = []

    def fail_in_scratch(scorer: Any, src: Any, out: Any, **kw: Any) -> Any:
        seen.append(Path(out).parent)
        assert Path(out).parent.is_dir()
        raise ScoringError("injected")

    monkeypatch.setattr(onnx_scoring, "score_parquet", fail_in_scratch)
    with pytest.raises(ScoringError, match="injected"):
        run_evaluation_locally(model, data, None)
    assert seen and not seen[0].exists() and _leftovers(settings_env) == []


@pytest.mark.e2e
def test_evaluate_refuses_nan_scores_with_the_check_score_uses(settings_env: Settings,
                                                                tmp_path: Path) -> None:
    frame = _frame(100)
    frame.loc[[7, 9], "x"] = np.nan
    data = tmp_path / "heldout.parquet"
    frame.to_parquet(data, index=False)
    model = archive(tmp_path / "lenient", binary_graph("FLOAT"), sensitive_features=["group"],
                    features=[{"name": "x", "kind": "numeric", "allow_missing": True}]).path
    with pytest.raises(ScoringError, match=r"model output 'probabilities': 2 rows are NaN or "
                                           r"infinite.*\(first: row_id 7\)"):
        run_evaluation_locally(model, data, None)


# --- terminal output: escaped names; limits checked before any work -------------------------------

FORGED = "evil\x1b[2J\nINFO modelgate: all good"


@pytest.mark.e2e
def test_monitor_prints_names_escaped_and_checks_limits_first(
        settings_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, _binary(tmp_path, name="guarded").path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    data = tmp_path / "ref.parquet"
    _frame(100).to_parquet(data, index=False)
    for feed in ("live", "labels"):  # empty feeds: a warning, not an error
        (tmp_path / feed).mkdir()
    base = ["--live", str(tmp_path / "live"), "--labels", str(tmp_path / "labels"),
            "--reference", str(data)]
    assert cli.main(["monitor", "set", "guarded", *base, "--sample-rows", str(2**31)]) == 2
    assert "--sample-rows must be at most 2,147,483,647" in capsys.readouterr().err
    assert cli.main(["monitor", "set", "guarded", *base,
                     "--thresholds", '{"features": {"nope": {"relative": 2}}}']) == 2
    assert "name feature(s) ['nope'] that v1 does not have" in capsys.readouterr().err
    assert cli.main(["monitor", "set", "guarded", *base,
                     "--thresholds", '{"features": {"x": {"relative": 2}}}']) == 0
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM monitor_config") == [(1,)]

    assert cli.main(["monitor", "set", FORGED, *base]) == 0  # no production version: no sketch
    shown = capsys.readouterr().out + "\n"
    assert cli.main(["monitor", "list"]) == 0
    shown += capsys.readouterr().out
    assert "\x1b" not in shown and "\nINFO" not in shown
    assert "evil\\x1b[2J\\nINFO" in shown


@pytest.mark.parametrize(("manifest", "key"), [
    ({"name": "to\x00y"}, "'name'"),
    ({"label": {"column": "y\x00", "positive": 1}}, "'label.column'"),
    ({"description": "a\x00b"}, "'description'"),
], ids=["name", "label-column", "description"])
def test_nul_in_a_manifest_is_refused_at_package_naming_the_key(
        tmp_path: Path, manifest: dict[str, Any], key: str) -> None:
    with pytest.raises(ArtifactError, match=f"manifest key {key}: expected text without NUL"):
        archive(tmp_path / "nul", binary_graph("FLOAT"), **manifest)


@pytest.mark.parametrize(("manifest", "key"), [
    ({"sensitive_features": ["group\nBLOCK forged"]}, "'sensitive_features[0]'"),
    ({"label": {"column": "y\x1b[2J", "positive": 1}}, "'label.column'"),
    ({"id_column": "id\r"}, "'id_column'"),
], ids=["sensitive-newline", "label-escape", "id-carriage-return"])
def test_control_characters_in_a_column_name_are_refused_naming_the_key(
        tmp_path: Path, manifest: dict[str, Any], key: str) -> None:
    """Column names show one per line in gate summaries and reports: a newline there would
    forge a line, so the manifest refuses it (a model's name may hold one: it is escaped)."""
    with pytest.raises(ArtifactError, match=re.escape(f"manifest key {key}: expected a column name "
                                                      "without control characters")):
        archive(tmp_path / "control", binary_graph("FLOAT"), **manifest)


def test_evaluate_text_keeps_the_gate_summary_s_lines_and_escapes_what_is_in_them() -> None:
    """The gate summary is one line per check; a check id holds the sensitive feature's name
    from the manifest, so an escape sequence there is shown escaped, the lines kept."""
    from modelgate.cli.runs import _terminal_lines

    summary = ("Promotion gate FAILED: 1 blocking failure(s)\n"
               "BLOCK   fairness.equalized_odds_difference.evil\x1b[2J\x07: blocked: breached")
    shown = _terminal_lines(summary).split("\n")
    assert shown == ["Promotion gate FAILED: 1 blocking failure(s)",
                     "BLOCK   fairness.equalized_odds_difference.evil\\x1b[2J\\x07: blocked: breached"]
