"""The weakest-slice search against a brute force over every slice (scikit-learn metrics, scipy's
Wilson interval, statsmodels' BH), its bound on candidates, and the closed-form Wilson ends."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from modelgate.evaluation.segments import worse_p_value
from modelgate.evaluation.weakest_slices import find_weakest_slices, wilson_ends
from modelgate.fairness.disaggregate import encode_groups
from sklearn import metrics as skm
from statsmodels.stats.multitest import multipletests

from modelgate.intervals import mover_difference, wilson_interval


def test_wilson_ends_equal_scipy() -> None:
    rng = np.random.default_rng(0)
    n = np.concatenate([rng.integers(1, 500, 40), [1, 7, 30]])
    x = np.concatenate([rng.integers(0, n[:40] + 1), [0, 7, 30]])
    lo, hi = wilson_ends(x, n, 0.9)
    expected = np.array([wilson_interval(int(a), int(b), 0.9) for a, b in zip(x, n, strict=True)])
    np.testing.assert_allclose(np.column_stack([lo, hi]), expected, rtol=1e-12, atol=1e-14)
    assert np.isnan(wilson_ends([0], [0], 0.95)[0]).all()


def _data():
    rng = np.random.default_rng(4)
    n = 3000
    y = (rng.random(n) < 0.45).astype(int)
    a = rng.integers(0, 4, n)
    b = np.array(["x", "y", "z"])[rng.integers(0, 3, n)]
    c = rng.integers(0, 3, n)
    good = rng.random(n) < np.where((a == 1) & (b == "z"), 0.6, 0.85)
    s = np.where(good, y, 1 - y) * 0.6 + rng.uniform(0, 0.4, n)
    return y, s, {"a": a, "b": b, "c": c}


def _sk(metric: str, y: np.ndarray, pred: np.ndarray) -> float:
    return {"accuracy": skm.accuracy_score, "precision": skm.precision_score,
            "recall": skm.recall_score, "f1": skm.f1_score}[metric](y, pred)


def _brute_force(y, s, raw, min_rows):
    """Every slice of one column or a pair: its metrics from counts made here, its p-value from
    scipy's Wilson intervals, the MOVER difference and worse_p_value, one at a time."""
    pred = (s >= 0.5).astype(int)
    out = {}
    names = list(raw)
    for cols in [(c,) for c in names] + list(itertools.combinations(names, 2)):
        keys = raw[cols[0]].astype(str).astype(object)
        for c in cols[1:]:
            keys = keys + "|" + raw[c].astype(str).astype(object)
        for key in sorted(set(keys)):
            value = tuple(key.split("|"))
            mask = keys == key
            if mask.sum() < min_rows or (~mask).sum() < min_rows:
                continue
            for metric in ("accuracy", "precision", "recall", "f1"):
                sides = []
                for m in (mask, ~mask):
                    tp = int(np.sum((y[m] == 1) & (pred[m] == 1)))
                    fp = int(np.sum((y[m] == 0) & (pred[m] == 1)))
                    fn = int(np.sum((y[m] == 1) & (pred[m] == 0)))
                    tn = int(m.sum()) - tp - fp - fn
                    x, t = {"accuracy": (tn + tp, m.sum()), "precision": (tp, tp + fp),
                            "recall": (tp, tp + fn), "f1": (tp, tp + fp + fn)}[metric]
                    lo, hi = wilson_interval(x, t, 0.95)
                    if metric == "f1":
                        lo, hi = 2 * lo / (1 + lo), 2 * hi / (1 + hi)
                    value_ = x / t if metric != "f1" else 2 * tp / (2 * tp + fp + fn)
                    sides.append((value_, (lo, hi)))
                (v1, e1), (v2, e2) = sides
                d_lo, d_hi = mover_difference(v1, e1, v2, e2, 0.0)
                p = worse_p_value(v1 - v2, (d_lo, d_hi), True, 0.95)
                name = " & ".join(f"{c}={v}" for c, v in zip(cols, value, strict=True))
                out[(name, metric)] = (int(mask.sum()), v1, v2, d_lo, d_hi, p, mask)
    return out


def test_search_equals_brute_force_and_bh_of_every_test() -> None:
    y, s, raw = _data()
    raw = {k: raw[k] for k in ("a", "b")}  # 19 slices: the brute force stays under a second
    columns = {k: encode_groups(v) for k, v in raw.items()}
    found = find_weakest_slices(y, s, threshold=0.5, columns=columns, min_rows=60, level=0.2)
    brute = _brute_force(y, s, raw, 60)
    assert found.candidates == len(brute) // 4 and found.tests == len(brute)
    keys = list(brute)
    q = multipletests([brute[k][5] for k in keys], method="fdr_bh")[1]
    expected = {k: qi for k, qi in zip(keys, q, strict=True) if qi <= 0.2}
    assert {(x.name, x.metric) for x in found.slices} == set(expected)
    pred = (s >= 0.5).astype(int)
    for x in found.slices:
        n, v1, v2, d_lo, d_hi, p, mask = brute[(x.name, x.metric)]
        assert (x.n, x.value, x.rest_value) == (n, pytest.approx(v1), pytest.approx(v2))
        # the slice's and the rest's metric by scikit-learn
        assert x.value == pytest.approx(_sk(x.metric, y[mask], pred[mask]))
        assert x.rest_value == pytest.approx(_sk(x.metric, y[~mask], pred[~mask]))
        assert (x.difference_ci_lower, x.difference_ci_upper) == (pytest.approx(d_lo),
                                                                   pytest.approx(d_hi))
        assert x.p_value == pytest.approx(p, rel=1e-9, abs=1e-15)
        assert x.q_value == pytest.approx(expected[(x.name, x.metric)], rel=1e-9, abs=1e-15)
    assert found.slices[0].name == "a=1 & b=z"
    assert [x.difference for x in found.slices] == sorted(x.difference for x in found.slices)


def test_candidates_are_bounded_and_pairs_left_out_named() -> None:
    y, s, raw = _data()
    columns = {k: encode_groups(v) for k, v in raw.items()}
    # singles: 4 + 3 + 3 = 10 slices; a*b adds 12, a*c 12, b*c 9
    found = find_weakest_slices(y, s, threshold=0.5, columns=columns, min_rows=60,
                                max_candidates=30)
    assert found.candidates == 22 and found.pairs_searched == (("a", "b"),)
    assert found.pairs_left_out == (("a", "c"), ("b", "c"))
    assert found.to_record()["pairs_left_out"] == [["a", "c"], ["b", "c"]]
    with pytest.raises(ValueError, match="the single columns have 10 slices of at least 60 rows, "
                                         "more than max_candidates \\(9\\)"):
        find_weakest_slices(y, s, threshold=0.5, columns=columns, min_rows=60, max_candidates=9)
    with pytest.raises(ValueError, match="slice column 'a': codes must have the length"):
        find_weakest_slices(y, s, threshold=0.5, columns={"a": (("0",), [0])})


def test_counts_merged_over_partitions_give_the_one_process_search() -> None:
    from modelgate.evaluation.weakest_slices import count_slices, merge_slice_counts, search_slices

    y, s, raw = _data()

    def counted(rows: slice):
        return count_slices(y[rows], s[rows], threshold=0.5,
                            columns={k: encode_groups(v[rows]) for k, v in raw.items()})

    whole = search_slices(counted(slice(None)), min_rows=60)
    mapped = search_slices(merge_slice_counts([counted(slice(0, 1000)), counted(slice(1000, None))]),
                           min_rows=60)
    assert whole == mapped and whole.slices


def test_pair_counts_are_each_pairs_confusion_counts() -> None:
    from modelgate.evaluation.weakest_slices import count_slices

    rng = np.random.default_rng(3)
    y, s = rng.integers(0, 2, 500), rng.random(500)
    a, b = rng.integers(0, 4, 500), rng.integers(0, 3, 500)
    b[a == 2] = 0  # pairs (2, 1) and (2, 2) never occur
    pair = count_slices(y, s, threshold=0.5, columns={"a": encode_groups(a), "b": encode_groups(b)})[2]
    expected = sorted({(str(i), str(j)) for i, j in zip(a, b, strict=True)})
    assert list(pair.labels) == expected
    for (i, j), row in zip(pair.labels, pair.counts, strict=True):
        rows = (a == int(i)) & (b == int(j))
        cell = 2 * y[rows] + (s[rows] >= 0.5)
        assert row.tolist() == np.bincount(cell, minlength=4).tolist()
