"""One-shot ``modelgate drift``: exact numbers against scipy, and no heavy import on its path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import wasserstein_distance

# Modules the one-shot command must not load: each costs 0.1-2 s of a run that takes about 1 s.
HEAVY = ("pandas", "scipy", "airflow", "onnxruntime", "shap", "jinja2", "sqlalchemy",
         "psycopg", "psycopg2", "boto3", "botocore", "sklearn", "pyarrow.dataset",
         "pyarrow.compute", "ot", "numpy.ma")

_RUN = """
import json, sys
from modelgate.cli import main
rc = main(sys.argv[1:])
sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
sys.exit(rc)
"""


def _table(rng: np.random.Generator, n: int, shift: float) -> pa.Table:
    x = rng.normal(shift, 1.0, n)
    x[rng.random(n) < 0.02] = np.nan
    labels = np.array(["red", "green", "blue"], dtype=object)[rng.integers(0, 3 if shift == 0 else 2, n)]
    labels[rng.random(n) < 0.05] = None
    return pa.table({
        "x": x,
        "k": pa.array(rng.integers(0, 50, n) + int(10 * shift), mask=rng.random(n) < 0.01),
        "colour": pa.array(labels, type=pa.string()),
        "flag": pa.array(rng.random(n) < 0.3 + shift / 5),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    rng = np.random.default_rng(15)
    root = tmp_path_factory.mktemp("cli_drift")
    pq.write_table(_table(rng, 20_000, 0.0), root / "ref.parquet", row_group_size=7_000)
    pq.write_table(_table(rng, 12_345, 0.5), root / "cur.parquet", row_group_size=5_000)
    return root / "ref.parquet", root / "cur.parquet"


def test_one_shot_drift_is_exact_and_imports_nothing_heavy(files: tuple[Path, Path]) -> None:
    ref_path, cur_path = files
    out = subprocess.run(
        [sys.executable, "-c", _RUN, "-q", "drift", "--reference", str(ref_path),
         "--current", str(cur_path), "--format", "json"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert out.returncode == 3, out.stderr  # the shifted features breach
    modules = set(json.loads(out.stderr.split("MODULES ", 1)[1]))
    loaded = sorted(m for m in modules for h in HEAVY if m == h or m.startswith(h + "."))
    assert not loaded, f"one-shot drift imported {loaded}"

    features = {f["feature"]: f for f in json.loads(out.stdout)["features"]}
    assert set(features) == {"x", "k", "colour", "flag"}
    ref, cur = pd.read_parquet(ref_path), pd.read_parquet(cur_path)
    for name in ("x", "k"):
        a, b = ref[name].dropna().to_numpy(float), cur[name].dropna().to_numpy(float)
        assert features[name]["wasserstein"] == pytest.approx(wasserstein_distance(a, b), rel=1e-9)
        assert features[name]["n_missing_current"] == int(cur[name].isna().sum())
    for name in ("colour", "flag"):
        p = ref[name].astype(str).where(ref[name].notna(), "__missing__").value_counts()
        q = cur[name].astype(str).where(cur[name].notna(), "__missing__").value_counts()
        keys = p.index.union(q.index)
        expected = jensenshannon(p.reindex(keys, fill_value=0), q.reindex(keys, fill_value=0),
                                 base=2) ** 2
        assert features[name]["js_divergence_base2"] == pytest.approx(expected, rel=1e-9)
    assert features["x"]["verdict"] == "drift" and features["k"]["verdict"] == "drift"


def test_an_empty_current_file_is_refused_as_an_empty_reference_is(
        files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # "0 feature(s) breached" with exit 0 read as "no drift" for a file of no rows
    from modelgate.cli import main

    ref_path, cur_path = files
    empty = tmp_path / "empty.parquet"
    pq.write_table(pq.read_table(cur_path).slice(0, 0), empty)
    assert main(["drift", "--reference", str(ref_path), "--current", str(empty)]) == 1
    err = capsys.readouterr().err
    assert f"current file '{empty}' has no rows: nothing to compare with the reference" in err
    assert main(["drift", "--reference", str(empty), "--current", str(cur_path)]) == 1
    assert "has no rows" in capsys.readouterr().err
    # rows whose values are all missing are data: the column reads no_data, the run goes on
    missing = tmp_path / "missing.parquet"
    table = pq.read_table(cur_path).slice(0, 50)
    pq.write_table(table.set_column(0, "x", pa.nulls(50, pa.float64())), missing)
    assert main(["drift", "--reference", str(ref_path), "--current", str(missing),
                 "--features", "x", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["no_data"] == ["x"]
