"""Row selection for explanations on cases worked by hand: which rows each reason picks, ties,
the random rows of the rest, the defaults, the checks and their messages, the record."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from modelgate.reports.explain_rows import RowSelection, select_error_rows, select_rows

# 12 rows; scores distinct except a tie at 0.9 (rows 1 and 7) and at 0.1 (rows 4 and 10)
SCORES = [0.5, 0.9, 0.3, 0.7, 0.1, 0.6, 0.4, 0.9, 0.2, 0.8, 0.1, 0.35]
Y_TRUE = [1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1]
Y_PRED = [1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0]


def _reasons(sel: RowSelection) -> dict[int, tuple[str, ...]]:
    return dict(zip(sel.indices.tolist(), sel.reasons, strict=True))


def test_each_reason_picks_its_rows_by_hand_ties_to_the_earlier_row() -> None:
    sel = select_rows(SCORES, Y_TRUE, Y_PRED, n_each=2, n_random=0)
    # highest: 0.9 (rows 1, 7: the tie in row order); lowest: 0.1 (rows 4, 10)
    # false positives (pred 1, true 0) by score: 1 (0.9), 9 (0.8), 3 (0.7), 5 (0.6) -> 1, 9
    # false negatives (pred 0, true 1) by score, lowest first: 4 (0.1), 10 (0.1), 2 (0.3) -> 4, 10
    assert sel.indices.tolist() == [1, 7, 4, 10, 9]
    assert sel.reasons == (
        ("highest_score", "false_positive"),
        ("highest_score",),
        ("lowest_score", "false_negative"),
        ("lowest_score", "false_negative"),
        ("false_positive",),
    )



def test_a_confident_true_negative_or_true_positive_is_no_error() -> None:
    # row 0: score 0.9, true 0, pred 0 (true negative); row 1: 0.8, 0, 1 (false positive);
    # row 2: 0.1, 1, 1 (true positive); row 3: 0.2, 1, 0 (false negative)
    sel = select_rows([0.9, 0.8, 0.1, 0.2], [0, 0, 1, 1], [0, 1, 1, 0], n_each=1, n_random=0)
    # highest 0, lowest 2; the most confident false positive is 1, not the true negative 0;
    # the most confident false negative is 3, not the true positive 2
    assert sel.indices.tolist() == [0, 2, 1, 3]
    assert sel.reasons == (("highest_score",), ("lowest_score",), ("false_positive",),
                           ("false_negative",))

def test_error_rows_by_hand_ties_to_the_earlier_row() -> None:
    sel = select_error_rows([0.5, 2.0, 0.1, 1.0, 2.0, 0.1], n_each=2, n_random=0)
    # largest 2.0 at rows 1 and 4, smallest 0.1 at rows 2 and 5
    assert sel.indices.tolist() == [1, 4, 2, 5]
    assert sel.reasons == (("largest_error",), ("largest_error",), ("smallest_error",),
                           ("smallest_error",))
    # one row is both the largest and the smallest error
    one = select_error_rows([3.0], n_each=1, n_random=0)
    assert one.indices.tolist() == [0] and one.reasons == (("largest_error", "smallest_error"),)


def test_random_rows_follow_the_chosen_ones_and_are_all_of_the_rest_when_asked_for_more() -> None:
    sel = select_rows(SCORES, Y_TRUE, Y_PRED, n_each=2, n_random=50)
    assert sel.indices[:5].tolist() == [1, 7, 4, 10, 9]  # the chosen rows first, as above
    rest = sel.indices[5:].tolist()
    assert sorted(rest) == [0, 2, 3, 5, 6, 8, 11]  # each other row once
    assert sel.reasons[5:] == (("random",),) * 7
    errors = select_error_rows(np.arange(10.0), n_each=1, n_random=50)
    assert errors.indices[:2].tolist() == [9, 0]
    assert sorted(errors.indices[2:].tolist()) == list(range(1, 9))


def test_random_rows_are_as_many_as_asked_never_a_chosen_row_and_seeded() -> None:
    a = select_rows(SCORES, Y_TRUE, Y_PRED, n_each=1, n_random=4, seed=7)
    # chosen: 1 (highest, false positive), 4 (lowest, false negative)
    assert a.indices[:2].tolist() == [1, 4]
    drawn = a.indices[2:].tolist()
    assert len(drawn) == len(set(drawn)) == 4 and not set(drawn) & {1, 4}
    assert a.reasons[2:] == (("random",),) * 4
    again = select_rows(SCORES, Y_TRUE, Y_PRED, n_each=1, n_random=4, seed=7)
    assert again.indices.tolist() == a.indices.tolist()


def test_without_rows_to_pick_from_nothing_is_chosen() -> None:
    sel = select_rows([], [], [])
    assert sel.indices.tolist() == [] and sel.reasons == ()
    assert select_error_rows([]).indices.tolist() == []
    none_each = select_rows(SCORES, Y_TRUE, Y_PRED, n_each=0, n_random=0)
    assert none_each.indices.tolist() == [] and none_each.reasons == ()


def test_defaults_three_of_each_three_random_seed_zero() -> None:
    default = select_rows(SCORES, Y_TRUE, Y_PRED)
    explicit = select_rows(SCORES, Y_TRUE, Y_PRED, n_each=3, n_random=3, seed=0)
    assert default.indices.tolist() == explicit.indices.tolist()
    assert default.reasons == explicit.reasons
    flat = [r for reasons in default.reasons for r in reasons]
    for reason in ("highest_score", "lowest_score", "false_positive", "false_negative", "random"):
        assert flat.count(reason) == 3, reason
    other_seed = select_rows(SCORES, Y_TRUE, Y_PRED, seed=1)
    assert other_seed.indices.tolist() != default.indices.tolist()
    e = np.arange(20.0)
    default_e = select_error_rows(e)
    assert default_e.indices[:6].tolist() == [19, 18, 17, 0, 1, 2]
    assert default_e.reasons[6:] == (("random",),) * 3 and len(default_e.indices) == 9
    assert default_e.indices.tolist() == select_error_rows(e, seed=0).indices.tolist()
    assert default_e.indices.tolist() != select_error_rows(e, seed=1).indices.tolist()


def test_data_pass_by_keyword_and_options_only_by_keyword() -> None:
    sel = select_rows(scores=[0.2, 0.8], y_true=[0, 1], y_pred=[0, 1], n_each=1, n_random=0)
    assert sel.indices.tolist() == [1, 0]
    assert select_error_rows(errors=[0.2, 0.8], n_each=1, n_random=0).indices.tolist() == [1, 0]
    with pytest.raises(TypeError):
        select_rows([0.2, 0.8], [0, 1], [0, 1], 1)  # type: ignore[misc]
    with pytest.raises(TypeError):
        select_error_rows([0.2, 0.8], 1)  # type: ignore[misc]


@pytest.mark.parametrize(("args", "message"), [
    (([[0.1, 0.2]], [[0, 1]], [[0, 1]]), "scores must be a 1-D array of finite floats; got shape (1, 2)"),
    ((0.5, 0, 0), "scores must be a 1-D array of finite floats; got shape ()"),
    (([0.1, np.inf], [0, 1], [0, 1]), "scores must be a 1-D array of finite floats; got shape (2,)"),
    (([0.1, 0.2], [0, 1, 1], [0, 1]), "y_true must have shape (2,) like scores; got (3,)"),
    (([0.1, 0.2], [0], [0, 1]), "y_true must have shape (2,) like scores; got (1,)"),
    (([0.1, 0.2], [0, 1], [0, 1, 0]), "y_pred must have shape (2,) like scores; got (3,)"),
    (([0.1, 0.2], [0, 1], [-1, 1]), "y_pred must hold only 0 and 1; got array([-1,  1])"),
    (([0.1] * 7, [6, 5, 4, 3, 2, 1, 0], [0] * 7),
     "y_true must hold only 0 and 1; got array([0, 1, 2, 3, 4])"),
], ids=["2-D", "0-D", "inf", "y_true longer", "y_true shorter", "y_pred longer", "label -1",
        "first five labels"])
def test_select_rows_refuses_bad_data_with_its_message(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        select_rows(*args)


def test_labels_zero_and_one_are_accepted() -> None:
    sel = select_rows([0.1, 0.2], [1, 0], [0, 1], n_each=1, n_random=0)
    # highest 1 (a false positive: pred 1, true 0), lowest 0 (a false negative)
    assert sel.reasons == (("highest_score", "false_positive"), ("lowest_score", "false_negative"))


@pytest.mark.parametrize("errors", [[[0.1, 0.2]], 0.5, [0.1, np.nan], [np.inf, 0.1]],
                         ids=["2-D", "0-D", "nan", "inf"])
def test_select_error_rows_refuses_bad_errors_with_its_message(errors: object) -> None:
    shape = np.shape(errors)
    with pytest.raises(ValueError, match=re.escape(
            f"errors must be a 1-D array of finite floats; got shape {shape!r}")):
        select_error_rows(errors)  # type: ignore[arg-type]


@pytest.mark.parametrize("option", ["n_each", "n_random"])
@pytest.mark.parametrize("value", [-1, True, False, 1.0, "2", None])
def test_counts_must_be_integers_from_zero(option: str, value: object) -> None:
    message = re.escape(f"{option} must be an integer >= 0; got {value!r}")
    with pytest.raises(ValueError, match=message):
        select_rows(SCORES, Y_TRUE, Y_PRED, **{option: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        select_error_rows(SCORES, **{option: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("option", ["n_each", "n_random"])
def test_counts_zero_and_numpy_integers_are_accepted(option: str) -> None:
    for value in (0, np.int64(2)):
        select_rows(SCORES, Y_TRUE, Y_PRED, **{option: value})  # type: ignore[arg-type]
        select_error_rows(SCORES, **{option: value})  # type: ignore[arg-type]


def test_the_selection_is_a_frozen_slotted_record_compared_by_identity() -> None:
    sel = select_rows(SCORES, Y_TRUE, Y_PRED)
    same = select_rows(SCORES, Y_TRUE, Y_PRED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sel.indices = np.array([0])  # type: ignore[misc]
    assert not hasattr(sel, "__dict__")
    assert sel == sel and sel != same  # eq=False: identity, so two arrays are never compared
    assert hash(sel) == object.__hash__(sel)  # hashable, by identity
    assert sel.indices.dtype == np.int64
    assert not sel.indices.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        sel.indices[0] = 5
    assert [f.name for f in dataclasses.fields(RowSelection)] == ["indices", "reasons"]
