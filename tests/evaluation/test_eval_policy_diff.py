"""Policy provenance cores: which checks of a run's policy are looser than the model's own
(hand-written policy pairs, expected changes written out by hand), and the canonical text."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import pytest
from modelgate.evaluation.policy import (
    FairnessThreshold,
    Policy,
    ValueThreshold,
    default_policy,
    load_policy,
    merge_policies,
)
from modelgate.evaluation.policy_diff import PolicyChange, PolicyDiff, diff_policies
from modelgate.evaluation.policy_text import policy_text

from modelgate.resources import shipped_dir

OWN = load_policy("""
metrics:
  roc_auc:
    value: {lower: 0.7}
    change: {absolute: -0.01}
  brier: {value: {upper: 0.25, severity: warn}}
fairness:
  default:
    equalized_odds_difference: {upper: 0.03}
    demographic_parity_difference: {upper: 0.10, severity: warn}
""")


def _changes(run_policy: str) -> list[tuple[str, str, object, object, str, bool]]:
    diff = diff_policies(merge_policies(OWN, load_policy(run_policy)), OWN)
    return [(c.place, c.key, c.reference, c.effective, c.effect, c.blocking) for c in diff.changes]


# (run's ad-hoc layer over OWN, expected changes, looser than OWN on a blocking check)
CASES = [
    ("fairness: {default: {equalized_odds_difference: {upper: 0.15}}}",
     [("fairness.default.equalized_odds_difference", "upper", 0.03, 0.15, "looser", True)], True),
    ("fairness: {default: {equalized_odds_difference: {upper: 0.01}}}",
     [("fairness.default.equalized_odds_difference", "upper", 0.03, 0.01, "stricter", True)], False),
    ("metrics: {roc_auc: {value: {lower: 0.6}}}",
     [("metrics.roc_auc.value", "lower", 0.7, 0.6, "looser", True)], True),
    ("metrics: {roc_auc: {value: {lower: 0.7, upper: 0.99}}}",
     [("metrics.roc_auc.value", "upper", None, 0.99, "stricter", True)], False),
    ("metrics: {roc_auc: {change: {absolute: -0.05}}}",
     [("metrics.roc_auc.change", "absolute", -0.01, -0.05, "looser", True)], True),
    ("metrics: {roc_auc: {change: {relative: 0.0}}}",  # absolute dropped, relative added
     [("metrics.roc_auc.change", "absolute", -0.01, None, "looser", True),
      ("metrics.roc_auc.change", "relative", None, 0.0, "stricter", True)], True),
    ("fairness: {default: {equalized_odds_difference: {upper: 0.03, severity: warn}}}",
     [("fairness.default.equalized_odds_difference", "severity", "block", "warn", "looser", True)],
     True),
    ("metrics: {brier: {value: {upper: 0.9, severity: warn}}}",  # a lenient warning: not blocking
     [("metrics.brier.value", "upper", 0.25, 0.9, "looser", False)], False),
    ("metrics: {brier: {value: {upper: 0.25, severity: block}}}",
     [("metrics.brier.value", "severity", "warn", "block", "stricter", False)], False),
    ("metrics: {roc_auc: {change: {absolute: -0.01, direction: lower_is_better}}}",
     [("metrics.roc_auc.change", "direction", "higher_is_better", "lower_is_better", "unordered",
       True)], True),
    ("metrics: {accuracy: {value: {lower: 0.5}}}",
     [("metrics.accuracy.value", "check", None, "block", "stricter", False)], False),
    ("fairness: {features: {gender: {equalized_odds_difference: {upper: 0.2}}}}",
     [("fairness.features.gender.equalized_odds_difference", "upper", 0.03, 0.2, "looser", True)],
     True),
    ("fairness: {features: {gender: {equalized_odds_difference: {upper: 0.03}}}}", [], False),
]


@pytest.mark.parametrize(("layer", "expected", "looser"), CASES,
                         ids=["eo-raised", "eo-lowered", "lower-lowered", "upper-added",
                              "margin-lowered", "absolute-to-relative", "block-to-warn",
                              "warn-check-raised", "warn-to-block", "direction-flipped",
                              "check-added", "feature-raised", "feature-same-as-default"])
def test_each_kind_of_difference(layer: str, expected: list[tuple[object, ...]], looser: bool) -> None:
    assert _changes(layer) == expected
    assert diff_policies(merge_policies(OWN, load_policy(layer)), OWN).looser is looser


def test_identical_policies_have_no_differences() -> None:
    assert diff_policies(OWN, OWN).changes == ()
    assert diff_policies(default_policy(), default_policy()).looser is False


def test_a_removed_blocking_check_is_looser_and_an_added_one_stricter() -> None:
    without = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}}")
    with_eo = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}}\n"
                          "fairness: {default: {equalized_odds_difference: {upper: 0.03}}}")
    (removed,) = diff_policies(without, with_eo).changes
    assert removed == PolicyChange("fairness.default.equalized_odds_difference", "check", "block",
                                   None, "looser", True)
    assert removed.text() == "fairness.default.equalized_odds_difference: removed (looser)"
    (added,) = diff_policies(with_eo, without).changes
    assert (added.effect, added.blocking, added.loosens_blocking) == ("stricter", False, False)


def test_a_removed_warning_is_looser_but_not_blocking() -> None:
    without = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}}")
    with_brier = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}, "
                             "brier: {value: {upper: 0.25, severity: warn}}}")
    diff = diff_policies(without, with_brier)
    assert diff.changes == (PolicyChange("metrics.brier.value", "check", "warn", None, "looser",
                                         False),)
    assert diff.looser is False


def test_changes_read_with_both_values() -> None:
    (margin,) = diff_policies(merge_policies(OWN, load_policy(
        "metrics: {roc_auc: {change: {absolute: -0.05}}}")), OWN).changes
    assert margin.text() == "metrics.roc_auc.change: absolute -0.01 -> -0.05 (looser)"
    # numbers in %g (six significant digits), booleans as YAML writes them
    assert PolicyChange("metrics.f1.value", "lower", 0.7, 0.1234567, "looser", True).text() == (
        "metrics.f1.value: lower 0.7 -> 0.123457 (looser)")
    assert PolicyChange("policy", "flag", True, False, "unordered", True).text() == (
        "policy: flag true -> false (unordered)")


def test_strings_are_compared_by_value() -> None:
    # a change read back from its stored JSON, and a policy built from parsed text, hold
    # equal strings that are not the module's own literals
    stricter = PolicyChange("metrics.f1.value", "lower", 0.6, 0.7, "stricter", True)
    again = PolicyChange(**json.loads(json.dumps(stricter.to_record())))
    assert again == stricter and again.loosens_blocking is False
    parsed = ValueThreshold("f1", 0.7, None, basis=json.loads('"point_estimate"'))
    assert diff_policies(Policy(values=(parsed,)),
                         Policy(values=(ValueThreshold("f1", 0.7, None),))).changes == ()
    removed = PolicyChange("metrics.f1.value", "check", "block", None, "looser", True)
    assert PolicyChange(**json.loads(json.dumps(removed.to_record()))).text() == (
        "metrics.f1.value: removed (looser)")
    blocks = ValueThreshold("f1", 0.7, None, severity=json.loads('"block"'))
    for run in (Policy(), Policy(values=(ValueThreshold("f1", 0.6, None),))):
        (change,) = diff_policies(run, Policy(values=(blocks,))).changes
        assert change.blocking is True
    # group minimums parsed from two texts: equal numbers, two objects
    text = "fairness: {min_positives_per_group: 1000, min_negatives_per_group: 1000}"
    assert diff_policies(load_policy(text), load_policy(text)).changes == ()


def test_changes_are_frozen_and_slotted() -> None:
    change = PolicyChange("metrics.f1.value", "lower", 0.6, 0.7, "stricter", True)
    for result in (change, PolicyDiff((change,))):
        assert not hasattr(result, "__dict__")  # slots
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, dataclasses.fields(result)[0].name, None)


def test_the_basis_is_compared_after_the_policy_wide_fallback() -> None:
    """``basis: interval`` at the top judges every check by its interval; dropping it to the
    point estimate loosens each check that does not name its own basis."""
    interval = load_policy("basis: interval\nmetrics: {roc_auc: {value: {lower: 0.7}}}\n"
                           "fairness: {default: {tpr_gap: {upper: 0.1, basis: interval}}}")
    point = load_policy("basis: point_estimate\nmetrics: {roc_auc: {value: {lower: 0.7}}}\n"
                        "fairness: {default: {tpr_gap: {upper: 0.1, basis: interval}}}")
    assert [(c.place, c.key, c.reference, c.effective, c.effect)
            for c in diff_policies(point, interval).changes] == [
        ("metrics.roc_auc.value", "judging", "interval, inconclusive blocks", "point estimate",
         "looser")]
    assert diff_policies(interval, point).looser is False


def test_inconclusive_warning_is_looser_than_the_point_estimate_and_blocking() -> None:
    """Interval with inconclusive warning blocks only whole-interval breaches (the point
    estimate blocks those too); with inconclusive blocking it blocks every point breach and
    more. Worked by hand from the gate's rules, not from this module."""
    block = load_policy("basis: interval\nfairness: {default: {tpr_gap: {upper: 0.1}}}")
    warn = load_policy("basis: interval\non_inconclusive: warn\n"
                       "fairness: {default: {tpr_gap: {upper: 0.1}}}")
    point = load_policy("fairness: {default: {tpr_gap: {upper: 0.1}}}")
    (change,) = diff_policies(warn, block).changes
    assert (change.key, change.effect, change.loosens_blocking) == ("judging", "looser", True)
    assert [c.effect for c in diff_policies(warn, point).changes] == ["looser"]
    assert [c.effect for c in diff_policies(block, point).changes] == ["stricter"]
    assert diff_policies(point, warn).looser is False


def test_a_changed_group_minimum_is_unordered_and_unset_reads_as_the_default() -> None:
    unset = load_policy("fairness: {default: {tpr_gap: {upper: 0.1}}}")
    ten = load_policy("fairness: {min_positives_per_group: 10, default: {tpr_gap: {upper: 0.1}}}")
    five = load_policy("fairness: {min_positives_per_group: 5, default: {tpr_gap: {upper: 0.1}}}")
    assert diff_policies(ten, unset).changes == ()
    (change,) = diff_policies(five, unset).changes
    assert (change.place, change.key, change.reference, change.effective, change.effect) == (
        "policy", "min_positives_per_group", 10, 5, "unordered")


def test_a_feature_the_model_names_keeps_its_own_limit_when_the_default_is_raised() -> None:
    """The demo model's own policy blocks EO by gender above 0.10; an ad-hoc default of 0.5
    loosens every other feature (the default) but not gender."""
    own = merge_policies(default_policy(), load_policy(shipped_dir("policies") / "gss-high-income.yaml"))
    run = merge_policies(own, load_policy(
        "fairness: {default: {equalized_odds_difference: {upper: 0.5}}}"))
    assert [(c.place, c.reference, c.effective) for c in diff_policies(run, own).looser_blocking] == [
        ("fairness.default.equalized_odds_difference", 0.03, 0.5)]


@dataclass(frozen=True, slots=True)
class _FutureThreshold:
    """A threshold with a key this module does not list (as the format may grow)."""

    metric: str
    upper: float
    severity: str = "block"
    basis: str | None = None
    on_inconclusive: str | None = None
    retries: str = "block"
    window: int = 1


def test_keys_added_to_the_format_later_are_compared() -> None:
    def policy(**keys: object) -> Policy:
        return Policy(fairness_default=(_FutureThreshold("tpr_gap", 0.1, **keys),))  # type: ignore[arg-type]

    assert [(c.key, c.effect) for c in diff_policies(policy(retries="warn"), policy()).changes] == [
        ("retries", "looser")]
    assert diff_policies(policy(), policy(retries="warn")).looser is False
    (window,) = diff_policies(policy(window=2), policy()).changes
    assert (window.key, window.effect, window.loosens_blocking) == ("window", "unordered", True)


POLICIES = {
    "binary": default_policy(),
    "multiclass": default_policy("multiclass_classification"),
    "regression": default_policy("regression"),
    "gss": merge_policies(default_policy(),
                          load_policy(shipped_dir("policies") / "gss-high-income.yaml")),
    "per-class-and-bound": load_policy(
        "basis: interval\n"
        "metrics: {'recall[cat]': {value: {lower: 0.5}}, mean_error: "
        "{change: {absolute: -0.1, direction: lower_is_better, severity: warn}}}\n"
        "fairness: {features: {'age band': {'tpr_gap[cat]': {upper: 0.2, basis: point_estimate}}}}"),
}


@pytest.mark.parametrize("name", list(POLICIES))
def test_the_canonical_text_loads_back_to_the_same_checks(name: str) -> None:
    policy = POLICIES[name]
    text = policy_text(policy)
    again = load_policy(text)
    assert diff_policies(again, policy).changes == ()
    assert diff_policies(policy, again).changes == ()
    assert policy_text(again) == text


def test_the_canonical_text_of_a_merged_policy_is_written_out_in_full() -> None:
    merged = merge_policies(load_policy("metrics: {log_loss: {change: {relative: -0.02}}}"),
                            load_policy("fairness: {default: {tpr_gap: {upper: 0.1}}}"))
    assert policy_text(merged) == (
        "version: 1\n"
        "metrics:\n"
        "  log_loss:\n"
        "    change: {relative: -0.02, direction: lower_is_better, severity: block}\n"
        "fairness:\n"
        "  default:\n"
        "    tpr_gap: {upper: 0.1, severity: block}\n")
    assert isinstance(merged.fairness_default[0], FairnessThreshold)


@dataclass(frozen=True, slots=True)
class _FuturePolicy(Policy):
    """A policy with a policy-wide key this module does not list."""

    escalation: str = "block"


def test_policy_wide_keys_added_later_are_compared_and_written() -> None:
    block, warn = _FuturePolicy(), _FuturePolicy(escalation="warn")
    (change,) = diff_policies(warn, block).changes
    assert (change.place, change.key, change.effect, change.loosens_blocking) == (
        "policy", "escalation", "looser", True)
    assert diff_policies(block, warn).looser is False
    assert policy_text(warn) == "version: 1\nescalation: block\n".replace("block", "warn")


def test_the_canonical_text_keeps_names_outside_ascii_as_written() -> None:
    policy = load_policy("fairness: {features: {género: {tpr_gap: {upper: 0.1}}}}")
    assert policy_text(policy) == ("version: 1\nfairness:\n  features:\n    género:\n"
                                   "      tpr_gap: {upper: 0.1, severity: block}\n")
