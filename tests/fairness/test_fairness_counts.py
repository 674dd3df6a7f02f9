"""Fairness tables with their counts (issue #20): per group the positives and negatives behind each
rate, accuracy and ROC AUC, against fairlearn's MetricFrame with scikit-learn metrics; the rate
that drives each gap on a case worked by hand; the group score table merged across partitions;
and the stored rows of a real evaluation run split over two files.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame, false_positive_rate, true_positive_rate
from modelgate.fairness.disaggregate import disaggregate, table_from_counts
from modelgate.fairness.group_scores import (
    group_roc_auc,
    group_score_table,
    group_score_table_from_codes,
    merge_group_scores,
    with_group_auc,
)
from modelgate.fairness.metrics import fairness_report
from sklearn.metrics import accuracy_score, roc_auc_score

from modelgate.pipelines.evaluation.fairness_records import driving_text

TOL = 1e-12


def _data(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Labels, predictions, scores with many ties (two decimals) and a sensitive column with
    missing values; the scores depend on the group so the AUCs differ."""
    rng = np.random.default_rng(seed)
    sensitive = rng.choice(np.array(["north", "south", "west", None], dtype=object), n,
                           p=[0.5, 0.3, 0.15, 0.05])
    y = rng.integers(0, 2, n)
    noise = np.where(sensitive == "west", 0.45, 0.25)
    score = np.clip(np.round(0.5 + (y - 0.5) * 0.4 + rng.normal(scale=noise), 2), 0.0, 1.0)
    return y, (score >= 0.5).astype(int), score, sensitive


def _count(value: int) -> Any:
    return lambda y, _: int(np.sum(np.asarray(y) == value))


def test_group_counts_accuracy_and_auc_equal_metricframe() -> None:
    y, pred, score, sensitive = _data(1)
    groups = np.where(pd.isna(sensitive), "__missing__", sensitive.astype(str))
    report = fairness_report(y, pred, sensitive, sensitive_feature="region", n_bootstrap=0,
                             score=score)
    on_pred = MetricFrame(metrics={"accuracy": accuracy_score, "positives": _count(1),
                                   "negatives": _count(0),
                                   "predicted": lambda _, p: int(np.sum(p))},
                          y_true=y, y_pred=pred, sensitive_features=groups)
    on_score = MetricFrame(metrics=roc_auc_score, y_true=y, y_pred=score,
                           sensitive_features=groups)
    assert [g.group for g in report.table.groups] == ["north", "south", "west", "__missing__"]
    for g in report.table.groups:
        row = on_pred.by_group.loc[g.group]
        assert (g.positives, g.negatives, g.predicted_positives) == (
            row["positives"], row["negatives"], row["predicted"])
        assert g.accuracy == pytest.approx(row["accuracy"], abs=TOL)
        assert g.roc_auc == pytest.approx(on_score.by_group.loc[g.group], abs=TOL)
        assert g.roc_auc_error_bound == 0.0
        record = g.to_record()
        assert (record["positives"], record["negatives"]) == (g.positives, g.negatives)
        assert record["roc_auc"] == pytest.approx(on_score.by_group.loc[g.group], abs=TOL)


def test_a_group_without_negatives_has_no_auc() -> None:
    table = disaggregate([1, 1, 0, 1], [1, 0, 0, 1], ["a", "a", "b", "b"])
    t = with_group_auc(table, group_score_table("g", [1, 1, 0, 1], [0.9, 0.2, 0.3, 0.8],
                                                ["a", "a", "b", "b"]))
    a, b = t.groups
    assert np.isnan(a.roc_auc) and a.to_record()["roc_auc"] is None  # a: two positives only
    assert a.to_record()["roc_auc_error_bound"] is None
    assert b.roc_auc == 1.0  # b: 0.8 (positive) above 0.3 (negative)


def test_group_score_tables_merged_from_partitions_equal_the_whole() -> None:
    """Three partitions of the rows, one without the group 'west' and one without missing
    values, merged in two orders: the AUC per group is sklearn's on all the group's rows."""
    y, _, score, sensitive = _data(2, n=2000)
    index = np.arange(len(y))
    west = sensitive == "west"
    parts_rows = [index[:300], index[300:1100][~west[300:1100]],
                  np.r_[index[300:1100][west[300:1100]], index[1100:]]]
    parts_rows[0] = parts_rows[0][~pd.isna(sensitive[parts_rows[0]])]
    parts_rows[2] = np.r_[parts_rows[2], index[:300][pd.isna(sensitive[:300])]]
    assert sorted(np.concatenate(parts_rows).tolist()) == index.tolist()
    parts = [group_score_table("region", y[r], score[r], sensitive[r]) for r in parts_rows]
    whole = {a.group: a for a in group_roc_auc(group_score_table("region", y, score, sensitive))}
    for order in ([0, 1, 2], [2, 0, 1]):
        merged = merge_group_scores([parts[i] for i in order])
        assert {a.group: a for a in group_roc_auc(merged)} == whole
        assert merged.labels[-1] == "__missing__"
    for label, auc in whole.items():
        rows = pd.isna(sensitive) if label == "__missing__" else sensitive == label
        assert auc.roc_auc == pytest.approx(roc_auc_score(y[rows], score[rows]), abs=TOL)
        assert (auc.positives, auc.negatives) == (int(y[rows].sum()), int((1 - y[rows]).sum()))


def test_scores_pooled_on_the_grid_give_an_auc_within_its_bound() -> None:
    """Scores a few 2**-23 apart share 2**-20 grid cells once the table is pooled: the AUC is
    then estimated, and its error bound holds against sklearn's exact AUC."""
    rng = np.random.default_rng(3)
    n = 1500
    sensitive = rng.choice(["a", "b"], n)
    y = rng.integers(0, 2, n)
    score = 0.5 + (rng.integers(0, 24, n) + 3 * y) * 2.0 ** -23
    pooled = group_score_table("g", y, score, sensitive, max_distinct=20)
    assert pooled.grid == 2 ** 20
    for auc in group_roc_auc(pooled):
        rows = sensitive == auc.group
        exact = roc_auc_score(y[rows], score[rows])
        assert 0 < auc.error_bound < 0.5
        assert abs(auc.roc_auc - exact) <= auc.error_bound + TOL
    exact_part = group_score_table("g", y[:700], score[:700], sensitive[:700])
    pooled_part = group_score_table("g", y[700:], score[700:], sensitive[700:], max_distinct=20)
    assert exact_part.grid == 0
    merged = merge_group_scores([exact_part, pooled_part])  # pooled, as one part is
    assert merged.grid == 2 ** 20
    assert group_roc_auc(merged) == group_roc_auc(pooled)
    coarse = group_score_table("g", y, score, sensitive, max_distinct=3)  # halved until it fits
    assert len(coarse.keys) <= 3 and coarse.grid < 2 ** 20
    for auc in group_roc_auc(coarse):
        rows = sensitive == auc.group
        assert abs(auc.roc_auc - roc_auc_score(y[rows], score[rows])) <= auc.error_bound + TOL
    assert merge_group_scores([pooled, coarse]).grid == coarse.grid


def test_tables_of_other_rows_are_refused() -> None:
    table = disaggregate([1, 0, 1, 0], [1, 0, 0, 0], ["a", "a", "b", "b"])
    other = group_score_table("g", [1, 1, 1, 0], [0.9, 0.2, 0.3, 0.8], ["a", "a", "b", "b"])
    with pytest.raises(ValueError, match="group 'a' of 'g' has 1 positives and 1 negatives"):
        with_group_auc(table, other)
    with pytest.raises(ValueError, match=r"score must be in \[0, 1\]"):
        group_score_table("g", [1, 0], [0.5, 1.5], ["a", "a"])


# --- the rate that drives a gap ------------------------------------------------------------

def _tiny(groups: dict[str, tuple[int, int, int, int]]) -> tuple[list[int], list[int], list[str]]:
    """Rows from per-group counts (tp, fn, fp, tn)."""
    y, p, g = [], [], []
    for label, (tp, fn, fp, tn) in groups.items():
        for yy, pp, k in ((1, 1, tp), (1, 0, fn), (0, 1, fp), (0, 0, tn)):
            y += [yy] * k
            p += [pp] * k
            g += [label] * k
    return y, p, g


def test_equalized_odds_names_the_larger_gap_and_its_groups_worked_by_hand() -> None:
    """a: TPR 3/4, FPR 1/4; b: TPR 1/2, FPR 6/10; c: TPR 2/4, FPR 3/10.
    TPR gap 0.75 - 0.5 = 0.25 (a over b, first of the tied lowest); FPR gap 0.6 - 0.25 = 0.35
    (b over a): the FPR gap drives the equalized-odds difference, between b and a."""
    y, p, g = _tiny({"a": (3, 1, 1, 3), "b": (1, 1, 6, 4), "c": (2, 2, 3, 7)})
    report = fairness_report(y, p, g, sensitive_feature="g", min_group_size=1, n_bootstrap=0)
    eod = report.by_name()["equalized_odds_difference"]
    assert eod.value == pytest.approx(0.35, abs=TOL)
    assert (eod.driving_rate, eod.highest_group, eod.lowest_group) == ("fpr", "b", "a")
    tpr = report.by_name()["tpr_gap"]
    assert (tpr.value, tpr.driving_rate, tpr.highest_group) == (0.25, "tpr", "a")
    assert report.by_name()["tpr_fpr_gap_sum"].driving_rate is None
    groups = [s.to_record() for s in report.table.groups]
    assert driving_text(eod.to_record(), groups) == (
        "FPR 0.600 in b (of 10 negatives) vs 0.250 in a (of 4 negatives)")
    assert driving_text(report.by_name()["predictive_parity_difference"].to_record(), groups) == (
        "PPV 0.750 in a (of 4 predicted positives) vs 0.143 in b (of 7 predicted positives)")


def test_a_tie_between_the_gaps_is_driven_by_tpr() -> None:
    """a: TPR 1/2, FPR 1/2; b: TPR 1, FPR 0: both gaps are 0.5."""
    y, p, g = _tiny({"a": (1, 1, 1, 1), "b": (2, 0, 0, 2)})
    eod = fairness_report(y, p, g, sensitive_feature="g", min_group_size=1,
                          n_bootstrap=0).by_name()["equalized_odds_difference"]
    assert (eod.value, eod.driving_rate, eod.highest_group, eod.lowest_group) == (
        0.5, "tpr", "b", "a")


def test_cli_fairness_shows_counts_auc_and_what_drives_each_gap(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from modelgate.cli import main

    y, pred, score, sensitive = _data(4, n=800)
    groups = np.where(pd.isna(sensitive), "__missing__", sensitive.astype(str))
    pd.DataFrame({"y": y, "y_hat": pred, "s": score, "g": sensitive}).to_parquet(tmp_path / "d.parquet")
    args = ["fairness", "--data", str(tmp_path / "d.parquet"), "--label", "y", "--prediction",
            "y_hat", "--sensitive", "g", "--score", "s", "--bootstrap", "0"]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)["g"]
    for g in out["groups"]:
        rows = groups == g["group"]
        assert g["roc_auc"] == pytest.approx(roc_auc_score(y[rows], score[rows]), abs=TOL)
        assert (g["positives"], g["negatives"]) == (int(y[rows].sum()), int((1 - y[rows]).sum()))
    eod = out["gaps"]["equalized_odds_difference"]
    assert eod["driving_rate"] in ("tpr", "fpr")
    assert main([*args, "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert f"equalized_odds_difference {eod['value']:.4f} ({eod['driving_rate'].upper()} " in text
    assert "positives=" in text and "auc=" in text
    # with resamples the text shows each gap's interval, as the JSON has it
    assert main([*args[:-2], "--bootstrap", "50", "--format", "json"]) == 0
    eod = json.loads(capsys.readouterr().out)["g"]["gaps"]["equalized_odds_difference"]
    assert main([*args[:-2], "--bootstrap", "50", "--format", "text"]) == 0
    assert (f"equalized_odds_difference {eod['value']:.4f} [{eod['ci_lower']:.4f}, "
            f"{eod['ci_upper']:.4f}] (") in capsys.readouterr().out


# --- stored rows of a real run over two files --------------------------------------------

def _rows(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    from modelgate.store.db import transaction

    with transaction(url) as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_an_evaluation_over_two_files_stores_counts_auc_and_the_driving_rate(
        settings_env: Any, tmp_path: Path) -> None:
    """A skl2onnx binary model evaluated on two parquet files, the second without group 'c':
    the stored groups equal MetricFrame on the run's own scored rows, and each gap's stored
    driving rate and groups are the larger of the TPR and FPR gaps found by brute force."""
    from support.model_zoo import build

    from modelgate.cli.runs import run_evaluation_locally
    from modelgate.onnx.artifact import package
    from modelgate.store.objects import open_object_store

    zoo = build("sklearn-zipmap")
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    data = tmp_path / "data"
    (data / "day=1").mkdir(parents=True)
    (data / "day=2").mkdir()
    frame = zoo.frame
    frame.iloc[:250].to_parquet(data / "day=1" / "part-0.parquet")
    rest = frame.iloc[250:]
    rest[rest["group"] != "c"].to_parquet(data / "day=2" / "part-0.parquet")
    outcome = run_evaluation_locally(archive, data, None)
    url, run_id = str(settings_env.database_url), outcome.payload["evaluation_run_id"]

    scored = _stored_scores(settings_env, url, run_id)
    y = (scored["y_binary"] == "good").to_numpy().astype(int)
    pred, score, group = scored["prediction"].to_numpy(), scored["score"].to_numpy(), scored["group"]
    assert len(scored) == 250 + int((rest["group"] != "c").sum())
    by_pred = MetricFrame(metrics={"accuracy": accuracy_score, "positives": _count(1),
                                   "negatives": _count(0), "tpr": true_positive_rate,
                                   "fpr": false_positive_rate},
                          y_true=y, y_pred=pred, sensitive_features=group).by_group
    auc = MetricFrame(metrics=roc_auc_score, y_true=y, y_pred=score,
                      sensitive_features=group).by_group
    stored = _rows(url, """SELECT group_label, positives, negatives, accuracy, roc_auc,
                                  roc_auc_error_bound
                           FROM analytics.fairness_by_group WHERE evaluation_run_id = %s
                           ORDER BY group_label""", run_id)
    assert [r[0] for r in stored] == ["a", "b", "c"]
    for label, positives, negatives, accuracy, roc_auc, bound in stored:
        assert (positives, negatives) == (by_pred.loc[label, "positives"],
                                          by_pred.loc[label, "negatives"])
        assert accuracy == pytest.approx(by_pred.loc[label, "accuracy"], abs=TOL)
        assert roc_auc == pytest.approx(auc.loc[label], abs=TOL) and bound == 0.0

    tpr_gap = by_pred["tpr"].max() - by_pred["tpr"].min()
    fpr_gap = by_pred["fpr"].max() - by_pred["fpr"].min()
    rate = "tpr" if tpr_gap >= fpr_gap else "fpr"
    expected = (rate, by_pred[rate].idxmax(), by_pred[rate].idxmin())
    gaps = {m: (v, d, h, lo) for m, v, d, h, lo in _rows(
        url, """SELECT metric_name, value, driving_rate, highest_group, lowest_group
                FROM analytics.fairness_gaps WHERE evaluation_run_id = %s""", run_id)}
    assert gaps["equalized_odds_difference"][0] == pytest.approx(max(tpr_gap, fpr_gap), abs=TOL)
    assert gaps["equalized_odds_difference"][1:] == expected
    assert gaps["fpr_gap"][1:] == ("fpr", by_pred["fpr"].idxmax(), by_pred["fpr"].idxmin())
    assert gaps["tpr_fpr_gap_sum"][1:] == (None, None, None)

    ((key,),) = _rows(url, "SELECT report_key FROM evaluation_run WHERE evaluation_run_id = %s",
                      run_id)
    page = open_object_store(settings_env).get_bytes(key).decode()
    assert "Driven by" in page and "Positives" in page and "ROC AUC" in page
    json_group = outcome.payload["fairness"]["group"]
    assert json_group["gaps"]["equalized_odds_difference"]["driving_rate"] == rate
    assert [g["positives"] for g in json_group["groups"]] == [r[1] for r in stored]


def _stored_scores(settings: Any, url: str, run_id: int) -> pd.DataFrame:
    """The run's scored rows as stored (every partition): what its fairness tables count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from modelgate.store.objects import open_object_store

    ((uri,),) = _rows(url, "SELECT scores_uri FROM evaluation_run WHERE evaluation_run_id = %s",
                      run_id)
    store = open_object_store(settings)
    prefix = uri.split("/", 3)[3]  # s3://bucket/<prefix>
    keys = sorted(k for k in store.list_keys(prefix + "/") if k.endswith(".parquet"))
    return pd.concat([pq.read_table(pa.BufferReader(store.get_bytes(k))).to_pandas()
                      for k in keys], ignore_index=True)


def test_a_pooled_table_puts_score_one_in_the_last_cell() -> None:
    # 3 distinct scores, at most 2 rows: halved from 2**20 cells down to 4, where 0.25 is in
    # cell 1 and 0.75 and 1.0 share cell 3 (1.0 is not a cell of its own)
    t = group_score_table("g", [0, 1, 1], [0.25, 0.75, 1.0], ["a", "a", "a"], max_distinct=2)
    assert (t.grid, t.keys.tolist(), t.neg.tolist(), t.pos.tolist()) == (4, [1.0, 3.0], [1, 0],
                                                                         [0, 2])
    assert type(t.grid) is int  # a number of cells
    with pytest.raises(TypeError):  # options by keyword only
        merge_group_scores([t], 2)  # type: ignore[misc]
    (auc,) = group_roc_auc(t)
    assert (auc.roc_auc, auc.error_bound) == (1.0, 0.0)
    # one row: 0.5 and 1.0 share the upper of 2 cells, the pair ties, AUC 1/2 off by at most 1/2
    one = group_score_table("g", [0, 1], [0.5, 1.0], ["a", "a"], max_distinct=1)
    assert (one.grid, one.keys.tolist(), one.neg.tolist(), one.pos.tolist()) == (2, [1.0], [1],
                                                                                 [1])
    (auc,) = group_roc_auc(one)
    assert (auc.roc_auc, auc.error_bound) == (0.5, 0.5)


def test_a_negative_zero_score_is_kept_as_zero() -> None:
    t = group_score_table("g", [0, 1], [-0.0, 0.5], ["a", "a"])
    assert t.keys.tolist() == [0.0, 0.5] and not np.signbit(t.keys).any()


def test_an_empty_partition_gives_an_empty_table() -> None:
    t = group_score_table("g", [], [], np.array([], dtype=object))
    assert (t.labels, t.group.tolist(), t.keys.tolist(), t.neg.tolist(), t.pos.tolist()) == (
        (), [], [], [], [])
    assert group_roc_auc(t) == ()
    full = group_score_table("g", [0, 1], [0.2, 0.9], ["a", "a"])
    assert merge_group_scores([t, full]).keys.tolist() == [0.2, 0.9]


@pytest.mark.parametrize(("args", "message"), [
    (([0, 1], [0.2, 0.3, 0.4], ["a", "b"]),
     "y_true, score and codes of 'g' must be 1-D of one length; got shapes (2,), (3,) and (2,)"),
    (([0, 1], [0.2, 0.3], ["a", "b", "a"]),
     "y_true, score and codes of 'g' must be 1-D of one length; got shapes (2,), (2,) and (3,)"),
    (([0, 1, 0, 1], [1.5, -0.1, 2.0, 3.0], ["a"] * 4),
     "score must be in [0, 1]; found 4 value(s) outside, e.g. array([ 1.5, -0.1,  2. ])"),
], ids=["score-longer", "sensitive-longer", "scores-outside"])
def test_score_tables_refuse_bad_input_naming_it(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        group_score_table("g", *args)
    assert str(caught.value) == message


@pytest.mark.parametrize(("codes", "message"), [
    ([0, 2], "codes must be in 0..1; got 0..2"), ([-1, 1], "codes must be in 0..1; got -1..1")])
def test_codes_out_of_range_are_refused(codes: list[int], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        group_score_table_from_codes("g", [0, 1], [0.2, 0.3], ("a", "b"), codes)
    assert str(caught.value) == message


def test_max_distinct_is_at_least_one() -> None:
    # 0.2 and 0.3 first share a cell on the grid of 2 cells
    one = group_score_table("g", [0, 1], [0.2, 0.3], ["a", "a"], max_distinct=1)
    assert (one.grid, one.keys.tolist()) == (2, [0.0])
    for bad in (0, -1):
        with pytest.raises(ValueError) as caught:
            group_score_table("g", [0, 1], [0.2, 0.3], ["a", "a"], max_distinct=bad)
        assert str(caught.value) == f"max_distinct must be an integer >= 1; got {bad}"


def test_a_group_without_rows_has_no_auc() -> None:
    # merged per-partition counts can name a group none of the scored rows fall in
    table = table_from_counts(("a", "c"), [[1, 0, 0, 1], [0, 0, 0, 0]])
    scored = with_group_auc(table, group_score_table("g", [0, 1], [0.2, 0.9], ["a", "a"]))
    assert scored.group("a").roc_auc == 1.0 and np.isnan(scored.group("c").roc_auc)


def test_score_tables_are_frozen() -> None:
    t = group_score_table("g", [0, 1], [0.2, 0.9], ["a", "a"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.feature = "h"  # type: ignore[misc]
