"""Segment rows in the results store (migration 0039), against the real PostgreSQL: written with
the decision, keyed by attempt, never changed; the analyst views read them back."""

from __future__ import annotations

import numpy as np
import psycopg2
import pytest
from modelgate.evaluation.gate import decide
from modelgate.evaluation.policy import load_policy
from modelgate.evaluation.segment_gate import segment_verdicts
from modelgate.evaluation.segment_statistics import collect_segments
from modelgate.evaluation.segments import evaluate_segments
from modelgate.fairness.disaggregate import encode_groups
from support.tiny_graphs import manifest_of

from modelgate.store import models, runs
from modelgate.store.db import transaction


def _report():
    rng = np.random.default_rng(2)
    n = 900
    y = (rng.random(n) < 0.5).astype(int)
    g = np.array(["north", "south", "east"])[rng.integers(0, 3, n)]
    s = np.clip(rng.normal(0.3 + 0.4 * y, 0.15), 0, 1)
    s[g == "south"] = rng.random((g == "south").sum())
    return evaluate_segments(collect_segments(y, s, threshold=0.5,
                                              columns={"region": encode_groups(g)}), n_bootstrap=30)


def test_segment_rows_are_stored_per_attempt_and_written_once(clean_db: str) -> None:
    url = clean_db
    sha = "a" * 64
    row, _ = models.register(url, model_name="churn", version="1", sha256=sha, archive_sha256=sha,
                             archive_key="models/churn/1.tar.gz",
                             archive_uri="s3://b/models/churn/1.tar.gz", manifest=manifest_of())
    run_id = runs.start_evaluation_run(url, run_key="eval-seg", model_version_id=row.model_version_id,
                                       champion_version_id=None, dataset_uri="d.parquet",
                                       archive_sha256=sha)
    report = _report()
    policy = load_policy("segments: {metrics: {roc_auc: {margin: 0.05}}}")
    decision = decide({}, None, {}, policy, segments=report)
    assert policy.segments is not None
    verdicts = segment_verdicts(policy.segments, report)
    rows = runs.EvaluationRows(
        gate_checks=[c.to_record() for c in decision.checks],
        segment_metrics=report.to_rows(), segment_gate_checks=[v.to_record() for v in verdicts],
        gate={**decision.to_record(), "policy_sha256": sha, "had_champion": False})
    runs.write_evaluation_results(url, run_id, rows, status="blocked", report_key=None,
                                  report_uri=None)
    with transaction(url) as cur:
        cur.execute("""SELECT segment, n, judged, value, q_value FROM analytics.segment_metrics
                       WHERE evaluation_run_id = %s AND metric_name = 'roc_auc' ORDER BY segment""",
                    (run_id,))
        stored = cur.fetchall()
        cur.execute("""SELECT segment, verdict, check_effect FROM analytics.segment_gate_checks
                       WHERE evaluation_run_id = %s ORDER BY segment""", (run_id,))
        checks = cur.fetchall()
    expected = sorted((seg.name, seg.n, seg.judged, {m.name: m for m in seg.metrics}["roc_auc"])
                      for seg in report.segments)
    assert [(r[0], r[1], r[2]) for r in stored] == [(e[0], e[1], e[2]) for e in expected]
    assert [r[3] for r in stored] == pytest.approx([e[3].value for e in expected])
    assert [r[4] for r in stored] == pytest.approx([e[3].q_value for e in expected])
    assert checks == [("region=east", "pass", "block"), ("region=north", "pass", "block"),
                      ("region=south", "breach", "block")]
    with pytest.raises(psycopg2.Error, match="never changed or deleted"), transaction(url) as cur:
        cur.execute("UPDATE segment_metric SET value = 1 WHERE evaluation_run_id = %s", (run_id,))
