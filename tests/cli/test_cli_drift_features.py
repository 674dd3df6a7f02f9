"""Which columns ``modelgate drift`` compares (issue #23): the manifest's features with
``--model``; without it, every numeric or string column but pandas index columns, id columns,
the label and prediction, and columns the current file lacks; the choice is printed on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.model_zoo import build

from modelgate.cli import main
from modelgate.onnx.artifact import package


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture()
def _cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Ran]:
    """``modelgate drift ... --format json`` in-process (a subprocess costs seconds a call)."""
    def run(*args: str) -> Ran:
        code = main(["drift", *args, "--format", "json"])
        out, err = capsys.readouterr()
        return Ran(code, out, err)
    return run


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(23)
    root = tmp_path_factory.mktemp("drift_features")

    def frame(n: int, shift: float) -> pd.DataFrame:
        return pd.DataFrame({
            "x1": rng.normal(shift, 1, n), "x2": rng.normal(0, 1, n), "x3": rng.normal(0, 1, n),
            "row_id": np.arange(n), "colour": rng.choice(["a", "b"], n),
        }, index=pd.Index(np.arange(n) * 3, name=None))

    ref = frame(400, 0.0).assign(y=rng.integers(0, 2, 400))
    ref.to_parquet(root / "ref.parquet")  # a non-range index: stored as __index_level_0__
    cur = frame(300, 1.0)
    cur.to_parquet(root / "cur.parquet")
    named = frame(300, 1.0).rename_axis("customer")  # a named index column
    named.to_parquet(root / "named.parquet")
    ref.rename_axis("customer").to_parquet(root / "ref_named.parquet")
    return {"ref": root / "ref.parquet", "cur": root / "cur.parquet",
            "ref_named": root / "ref_named.parquet", "named": root / "named.parquet"}


def test_inferred_features_leave_out_index_id_and_label(files: dict[str, Path],
                                                        _cli: Callable[..., Ran]) -> None:
    import pyarrow.parquet as pq

    assert "__index_level_0__" in pq.read_schema(files["ref"]).names  # what the test is about
    out = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]))
    assert out.returncode == 3, out.stderr
    assert {f["feature"] for f in json.loads(out.stdout)["features"]} == {"x1", "x2", "x3", "colour"}
    assert "modelgate drift: comparing x1, x2, x3, colour (inferred; " in out.stderr
    for why in ("__index_level_0__ (pandas index)", "row_id (id column)", "y (not in the current file)"):
        assert why in out.stderr.split("left out: ")[1], why

    named = _cli("--reference", str(files["ref_named"]), "--current", str(files["named"]))
    assert {f["feature"] for f in json.loads(named.stdout)["features"]} == {"x1", "x2", "x3", "colour"}
    assert "customer (pandas index)" in named.stderr


def test_label_and_prediction_are_not_features(files: dict[str, Path], tmp_path: Path,
                                                _cli: Callable[..., Ran]) -> None:
    labelled = pd.read_parquet(files["cur"]).assign(y=1, y_hat=0)
    labelled.to_parquet(tmp_path / "labelled.parquet")
    ref = pd.read_parquet(files["ref"]).assign(y_hat=0)
    ref.to_parquet(tmp_path / "ref.parquet")
    out = _cli("--reference", str(tmp_path / "ref.parquet"), "--current", str(tmp_path / "labelled.parquet"),
               "--label", "y", "--prediction", "y_hat")
    assert {f["feature"] for f in json.loads(out.stdout)["features"]} == {"x1", "x2", "x3", "colour"}
    assert "y (--label), y_hat (--prediction)" in out.stderr


def test_model_manifest_names_the_features(files: dict[str, Path], tmp_path: Path,
                                           _cli: Callable[..., Ran]) -> None:
    zoo = build("sklearn-no-zipmap")  # features x1, x2, x3 (numeric)
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    out = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]), "--model", str(archive))
    assert out.returncode == 3, out.stderr
    features = {f["feature"]: f for f in json.loads(out.stdout)["features"]}
    assert set(features) == {"x1", "x2", "x3"}
    assert f"comparing x1, x2, x3 (features of {zoo.draft['name']} v1)" in out.stderr
    x1 = pd.read_parquet(files["ref"])["x1"], pd.read_parquet(files["cur"])["x1"]
    from scipy.stats import wasserstein_distance

    assert features["x1"]["wasserstein"] == pytest.approx(wasserstein_distance(*x1), rel=1e-9)
    wrong = _cli("--reference", str(files["ref"]), "--current", str(files["cur"]), "--model",
                 str(archive), "--features", "colour")
    # a usage error, as for columns the data lacks
    assert wrong.returncode == 2 and "['colour'] are not features of the model" in wrong.stderr
