"""Segments through the whole evaluation (``modelgate evaluate --segments``): scoring summarises
every slice, the gate judges the policy's segment thresholds, the store, the JSON result and the
report carry them; the slice counts come from the zoo's frame with pandas."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import numpy as np
import pytest
from support.model_zoo import build

from modelgate.cli.runs import run_evaluation_locally
from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.store.db import transaction

POLICY = """
segments:
  min_rows: 50
  metrics:
    accuracy: {margin: 0.0, on_inconclusive: warn}
"""


@pytest.mark.e2e
def test_evaluate_with_segments_judges_stores_and_reports_them(settings_env: Settings,
                                                               tmp_path: Path) -> None:
    zoo = build("sklearn-no-zipmap")
    frame = zoo.frame.copy()
    rng = np.random.default_rng(0)
    frame["region"] = np.array(["north", "south"])[rng.integers(0, 2, len(frame))]
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "heldout.parquet"
    frame.to_parquet(data)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)

    outcome = run_evaluation_locally(archive, data, policy, segments=("region",),
                                     segment_pairs=True)

    seg = outcome.payload["segments"]
    records = {r["segment"]: r for r in seg["records"]}
    counts = frame.groupby("region").size().to_dict()
    assert {k: records[f"region={k}"]["n"] for k in counts} == counts
    # the pair with the sensitive column is not asked for: region only, and region x region none
    assert set(records) == {"region=north", "region=south"}
    assert records["region=north"]["judged"] and seg["correction"] == "bh"
    assert "accuracy" in records["region=north"]["metrics"]
    assert seg["weakest_slices"]["candidates"] == 2
    checks = {c["check_id"]: c for c in outcome.payload["gate"]["checks"]}
    check = checks["segment:accuracy:margin"]
    assert check["verdict"] in ("pass", "inconclusive", "breach")
    assert "family of 2 one-sided tests" in check["reason"]
    run_id = outcome.payload["evaluation_run_id"]
    with transaction(settings_env.database_url) as cur:
        cur.execute("SELECT segment, n FROM analytics.segment_metrics WHERE evaluation_run_id = %s "
                    "AND metric_name = 'accuracy' ORDER BY segment", (run_id,))
        assert cur.fetchall() == [("region=north", counts["north"]), ("region=south", counts["south"])]
        cur.execute("SELECT count(*) FROM analytics.segment_gate_checks WHERE evaluation_run_id = %s",
                    (run_id,))
        assert cur.fetchone() == (2,)
    with urllib.request.urlopen(outcome.payload["report"]) as page:  # the local S3 server's link
        report = page.read().decode()
    assert '<h2 id="segments">Segments</h2>' in report and "region=north" in report

