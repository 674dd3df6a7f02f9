"""The sufficient statistics themselves (evaluation/sufficient.py), on tiny cases worked by hand
or counted here with numpy and scikit-learn: tables, sums, grid fallback, merges, options."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from modelgate.evaluation.sufficient import (
    CALIBRATION_BINS,
    FALLBACK_GRID,
    MAX_DISTINCT,
    EvaluationStatistics,
    GroupCounts,
    ModelStatistics,
    ScoreTable,
    collect,
    merge,
)
from modelgate.fairness.disaggregate import encode_groups
from sklearn import metrics as skm

Y = np.array([0, 1, 1, 0, 1, 0])
S = np.array([0.2, 0.9, 0.4, 0.4, 0.5, 1.0])


def test_the_model_statistics_of_a_tiny_case() -> None:
    m = collect(Y, S, threshold=0.5).candidate
    # by hand: predicted positive at s >= 0.5: rows 1 (y 1), 4 (y 1), 5 (y 0)
    assert (m.threshold, m.n, m.n_pos, m.tp, m.fp) == (0.5, 6, 3, 2, 1)
    assert m.scores.keys.tolist() == [0.2, 0.4, 0.5, 0.9, 1.0]
    assert m.scores.neg.tolist() == [1, 1, 0, 0, 1] and m.scores.pos.tolist() == [0, 1, 1, 1, 0]
    assert m.scores.grid == 0
    assert m.log_loss_sum == pytest.approx(6 * skm.log_loss(Y, S), rel=1e-12)
    assert m.squared_error_sum == pytest.approx(6 * skm.brier_score_loss(Y, S), rel=1e-12)
    # uniform bins of width 0.1; a score on an inner edge goes to the bin below it, as
    # scikit-learn's calibration_curve bins (searchsorted on the inner edges), 1.0 to the last:
    # 0.2 -> bin 1, 0.4 (twice) -> 3, 0.5 -> 4, 0.9 -> 8, 1.0 -> 9, by hand
    assert m.calibration_n.tolist() == [0, 1, 0, 2, 1, 0, 0, 0, 1, 1]
    assert m.calibration_n.dtype == np.int64 and len(m.calibration_n) == CALIBRATION_BINS
    np.testing.assert_allclose(m.calibration_score_sum, [0, 0.2, 0, 0.8, 0.5, 0, 0, 0, 0.9, 1.0])
    np.testing.assert_allclose(m.calibration_label_sum, [0, 0, 0, 1, 1, 0, 0, 0, 1, 0])


def test_a_score_equal_to_the_threshold_is_predicted_positive() -> None:
    m = collect([1, 0], [0.5, 0.5], threshold=0.5).candidate
    assert (m.tp, m.fp) == (1, 1)


def test_the_champion_is_kept_with_its_own_threshold() -> None:
    h = np.array([0.1, 0.8, 0.3, 0.6, 0.7, 0.2])
    stats = collect(Y, S, threshold=0.5, champion_score=h, champion_threshold=0.65)
    c = stats.champion
    assert c is not None
    assert (c.threshold, c.n, c.n_pos, c.tp, c.fp) == (0.65, 6, 3, 2, 0)  # 0.8 and 0.7 above
    assert c.scores.keys.tolist() == sorted(h.tolist())
    assert c.log_loss_sum == pytest.approx(6 * skm.log_loss(Y, h), rel=1e-12)
    assert stats.n == 6 and stats.bootstrap.counts.sum() == 6


def test_group_counts_of_a_tiny_case() -> None:
    labels, codes = encode_groups(np.array(["a", "b", "a", "b", "b", "a"], dtype=object))
    (g,) = collect(Y, S, threshold=0.5, groups={"sex": (labels, codes)}).groups
    assert (g.feature, g.labels) == ("sex", ("a", "b"))
    # tn, fp, fn, tp: a has rows 0 (y0, s.2), 2 (y1, s.4), 5 (y0, s1.0); b rows 1, 3, 4
    assert g.counts.tolist() == [[1, 1, 1, 0], [1, 0, 0, 2]] and g.counts.dtype == np.int64


def test_group_codes_of_another_length_are_refused() -> None:
    with pytest.raises(ValueError, match=r"group codes of 'sex' must have the length of y_true "
                                         r"\(6\); got 5"):
        collect(Y, S, threshold=0.5, groups={"sex": (("a",), np.zeros(5, dtype=int))})
    with pytest.raises(ValueError, match=r"group codes of 'sex' must have the length of y_true "
                                         r"\(6\); got 12"):
        collect(Y, S, threshold=0.5, groups={"sex": (("a",), np.zeros((6, 2), dtype=int))})


@pytest.mark.parametrize(("option", "good", "bad"), [
    ("max_cells", (16, 17), (15, 0, -1, True, 16.0, "16")),
    ("max_distinct", (1, 2), (0, -1, True, 1.0, "1")),
])
def test_table_sizes_are_checked(option: str, good: tuple, bad: tuple) -> None:
    for value in good:
        collect([0, 1], [0.1, 0.9], threshold=0.5, **{option: value})
        merge([collect([0, 1], [0.1, 0.9], threshold=0.5)], **{option: value})
    minimum = 16 if option == "max_cells" else 1
    for value in bad:
        with pytest.raises(ValueError, match=rf"{option} must be an integer >= {minimum}; "
                                             rf"got {value!r}"):
            collect([0, 1], [0.1, 0.9], threshold=0.5, **{option: value})
        with pytest.raises(ValueError, match=rf"{option} must be an integer >= {minimum}"):
            merge([collect([0, 1], [0.1, 0.9], threshold=0.5)], **{option: value})


def test_the_defaults_and_keyword_only_options() -> None:
    collect_defaults = {k: p.default for k, p in inspect.signature(collect).parameters.items()}
    assert collect_defaults["max_cells"] == 2**15 and collect_defaults["max_distinct"] == 2**22
    assert collect_defaults["champion_score"] is None and collect_defaults["groups"] is None
    merge_defaults = {k: p.default for k, p in inspect.signature(merge).parameters.items()}
    assert merge_defaults["max_cells"] == 2**15 and merge_defaults["max_distinct"] == 2**22
    assert (MAX_DISTINCT, FALLBACK_GRID, CALIBRATION_BINS) == (2**22, 2**20, 10)
    with pytest.raises(TypeError):
        collect([0, 1], [0.1, 0.9], 0.5)  # type: ignore[misc]
    one = collect([0, 1], [0.1, 0.9], threshold=0.5)
    with pytest.raises(TypeError):
        merge([one], 5)  # type: ignore[misc]
    assert merge(parts=[one]).n == 2


def test_merge_refuses_no_parts_and_other_features() -> None:
    with pytest.raises(ValueError, match="merge needs at least one EvaluationStatistics; got none"):
        merge([])
    g = {"sex": encode_groups(np.array(["a", "b"], dtype=object))}
    with_sex = collect([0, 1], [0.1, 0.9], threshold=0.5, groups=g)
    with pytest.raises(ValueError, match=r"every partition must count the sensitive features "
                                         r"\['sex'\]"):
        merge([with_sex, collect([0, 1], [0.1, 0.9], threshold=0.5)])
    with pytest.raises(ValueError, match=r"every partition must count the sensitive features \[\]"):
        merge([collect([0, 1], [0.1, 0.9], threshold=0.5), with_sex])
    with pytest.raises(ValueError, match="with and without a champion"):
        merge([collect([0, 1], [0.1, 0.9], threshold=0.5),
               collect([0, 1], [0.1, 0.9], threshold=0.5, champion_score=[0.2, 0.8],
                       champion_threshold=0.5)])


def test_merged_models_add_up_in_order() -> None:
    a = collect(Y[:4], S[:4], threshold=0.5, champion_score=S[:4], champion_threshold=0.3)
    b = collect(Y[4:], S[4:], threshold=0.5, champion_score=S[4:], champion_threshold=0.3)
    m = merge([a, b])
    whole = collect(Y, S, threshold=0.5).candidate
    for stats in (m.candidate, m.champion):
        assert stats is not None
        assert (stats.n, stats.n_pos) == (6, 3)
        assert stats.log_loss_sum == a.candidate.log_loss_sum + b.candidate.log_loss_sum
        assert stats.scores.keys.tolist() == whole.scores.keys.tolist()
        assert stats.scores.neg.tolist() == whole.scores.neg.tolist()
        assert stats.calibration_n.tolist() == whole.calibration_n.tolist()
        np.testing.assert_allclose(stats.calibration_score_sum, whole.calibration_score_sum)
        np.testing.assert_allclose(stats.calibration_label_sum, whole.calibration_label_sum)
    assert (m.candidate.tp, m.candidate.fp) == (whole.tp, whole.fp)
    assert m.champion is not None and (m.champion.tp, m.champion.fp) == (3, 2)  # s >= 0.3
    assert m.candidate.squared_error_sum == a.candidate.squared_error_sum + \
        b.candidate.squared_error_sum
    assert m.n == 6


def test_merged_groups_keep_first_seen_order_and_the_missing_group_last() -> None:
    def part(values: list[str | None], y: list[int]) -> EvaluationStatistics:
        return collect(y, [0.9] * len(y), threshold=0.5,
                       groups={"g": encode_groups(np.array(values, dtype=object))})

    first, second = part([None, "b"], [1, 0]), part(["a", "b", None], [1, 1, 0])
    assert first.groups[0].labels[-1] == "__missing__"
    (g,) = merge([first, second]).groups
    assert g.labels == ("b", "a", "__missing__")
    # all predicted positive: (tn, fp, fn, tp) = (0, negatives, 0, positives) per group
    assert g.counts.tolist() == [[0, 1, 0, 1], [0, 0, 0, 1], [0, 1, 0, 1]]


@pytest.mark.parametrize("max_distinct", [4, 5])
def test_the_score_table_falls_back_to_the_grid_only_past_max_distinct(max_distinct: int) -> None:
    scores = collect(Y, S, threshold=0.5, max_distinct=max_distinct).candidate.scores
    if max_distinct == 5:  # 5 distinct scores fit
        assert scores.grid == 0 and scores.keys.tolist() == [0.2, 0.4, 0.5, 0.9, 1.0]
        return
    assert scores.grid == FALLBACK_GRID
    # floor(s * 2**20), score 1.0 in the last cell, counted by hand
    assert scores.keys.tolist() == [float(np.floor(0.2 * 2**20)), float(np.floor(0.4 * 2**20)),
                                    2.0**19, float(np.floor(0.9 * 2**20)), 2.0**20 - 1]
    assert scores.neg.tolist() == [1, 1, 0, 0, 1] and scores.pos.tolist() == [0, 1, 1, 1, 0]


def test_a_grid_table_merged_with_an_exact_one_is_on_the_grid() -> None:
    eps = 2.0**-22  # a quarter of a grid cell
    coarse = collect([0, 1, 1], [0.25, 0.25 + eps, 0.75], threshold=0.5, max_distinct=2)
    exact = collect([0, 1], [0.25 + 2 * eps, 0.5], threshold=0.5)
    assert (coarse.candidate.scores.grid, exact.candidate.scores.grid) == (FALLBACK_GRID, 0)
    for parts in ([coarse, exact], [exact, coarse]):
        scores = merge(parts).candidate.scores
        assert scores.grid == FALLBACK_GRID
        assert scores.keys.tolist() == [2.0**18, 2.0**19, 3 * 2.0**18]
        assert scores.neg.tolist() == [2, 0, 0] and scores.pos.tolist() == [1, 1, 1]


@pytest.mark.parametrize("record", [
    ScoreTable(np.zeros(1), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)),
    collect([0, 1], [0.1, 0.9], threshold=0.5).candidate,
    GroupCounts("g", ("a",), np.zeros((1, 4), dtype=np.int64)),
    collect([0, 1], [0.1, 0.9], threshold=0.5),
], ids=lambda r: type(r).__name__)
def test_the_records_are_frozen_and_slotted(record: object) -> None:
    field = dataclasses.fields(record)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, field, None)
    assert not hasattr(record, "__dict__")
    assert isinstance(record, ScoreTable | ModelStatistics | GroupCounts | EvaluationStatistics)


def test_a_score_table_defaults_to_exact_scores() -> None:
    assert ScoreTable(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).grid == 0


def test_the_log_loss_of_certain_predictions_is_clipped_as_scikit_learn_s() -> None:
    # probabilities clipped to [eps, 1 - eps]: a right certain row costs -log(1 - eps), not 0
    m = collect([1, 0, 1], [1.0, 0.0, 0.0], threshold=0.5).candidate
    assert m.log_loss_sum == pytest.approx(3 * skm.log_loss([1, 0, 1], [1.0, 0.0, 0.0]), rel=1e-12)
    right = collect([1, 0], [1.0, 0.0], threshold=0.5).candidate.log_loss_sum
    assert right == pytest.approx(2 * skm.log_loss([1, 0], [1.0, 0.0]), rel=1e-12) and right > 0


@pytest.mark.parametrize("thresholds", [(0.5, 0.6), (0.6, 0.5)], ids=["higher-later", "lower-later"])
def test_parts_at_different_thresholds_are_refused_in_either_order(thresholds: tuple) -> None:
    parts = [collect([0, 1], [0.1, 0.9], threshold=t) for t in thresholds]
    with pytest.raises(ValueError, match=r"cannot merge statistics at different thresholds "
                                         r"\[0\.5, 0\.6\]"):
        merge(parts)
    champions = [collect([0, 1], [0.1, 0.9], threshold=0.5, champion_score=[0.2, 0.8],
                         champion_threshold=t) for t in thresholds]
    with pytest.raises(ValueError, match="different thresholds"):
        merge(champions)


def test_collect_and_merge_raise_no_warning() -> None:
    import warnings

    labels, codes = encode_groups(np.array(["a", "b", "a", "b", "b", "a"], dtype=object))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = collect(Y, S, threshold=0.5, champion_score=S[::-1], champion_threshold=0.5,
                        groups={"g": (labels, codes)})
        merge([stats, stats])


def test_without_a_champion_the_table_holds_zero_champion_losses() -> None:
    table = collect(Y, S, threshold=0.5).bootstrap
    # candidate log loss, squared error, champion log loss, squared error per cell
    assert table.loss_sums.shape == (len(table.counts), 4)
    assert not table.loss_sums[:, 2:].any()
    np.testing.assert_allclose(table.loss_sums[:, 0].sum(), 6 * skm.log_loss(Y, S), rtol=1e-12)


def test_the_missing_group_of_a_part_sent_between_processes_stays_last() -> None:
    import pickle

    first = collect([1, 0], [0.9, 0.9], threshold=0.5,
                    groups={"g": encode_groups(np.array([None, "b"], dtype=object))})
    second = collect([1], [0.9], threshold=0.5,
                     groups={"g": encode_groups(np.array(["a"], dtype=object))})
    sent = pickle.loads(pickle.dumps(first))  # its labels are new string objects
    (g,) = merge([sent, second]).groups
    assert g.labels == ("b", "a", "__missing__")
    assert g.counts.tolist() == [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]]


def test_labels_that_sort_before_the_missing_label_are_merged() -> None:
    parts = [collect([1, 0], [0.9, 0.1], threshold=0.5,
                     groups={"g": encode_groups(np.array(values, dtype=object))})
             for values in (["B", None], ["1", "B"])]
    (g,) = merge(parts).groups
    assert g.labels == ("B", "1", "__missing__")
    # tn, fp, fn, tp by hand: B a true positive and a true negative, 1 a true positive
    assert g.counts.tolist() == [[1, 0, 0, 1], [0, 0, 0, 1], [1, 0, 0, 0]]
