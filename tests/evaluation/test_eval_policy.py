"""Policy parsing: strict validation with key paths, defaults, the shipped policy, merging."""

from __future__ import annotations

from pathlib import Path

import pytest
from modelgate.evaluation.policy import (
    ChangeThreshold,
    FairnessThreshold,
    Policy,
    PolicyError,
    ValueThreshold,
    default_policy,
    load_policy,
    merge_policies,
)

FULL = """
version: 1
use_confidence_bound: true
metrics:
  roc_auc:
    value: {lower: 0.7, upper: 0.99, severity: warn}
    change: {absolute: -0.01, relative: -0.02}
  log_loss:
    change: {relative: -0.05, basis: point_estimate, on_inconclusive: warn}
fairness:
  default:
    equalized_odds_difference: {upper: 0.03}
    demographic_parity_difference: {upper: 0.1, severity: warn}
  features:
    sex:
      equalized_odds_difference: {upper: 0.05, use_confidence_bound: false}
"""


def test_full_policy_parses_to_expected_dataclasses() -> None:
    policy = load_policy(FULL)
    assert policy.basis == "interval"  # the former spelling use_confidence_bound: true
    assert policy.values == (ValueThreshold("roc_auc", 0.7, 0.99, "warn", None),)
    assert policy.changes == (
        ChangeThreshold("roc_auc", -0.01, -0.02, "higher_is_better", "block", None),
        ChangeThreshold("log_loss", None, -0.05, "lower_is_better", "block", "point_estimate",
                        "warn"),
    )
    assert policy.fairness_default == (
        FairnessThreshold("equalized_odds_difference", 0.03, "block", None),
        FairnessThreshold("demographic_parity_difference", 0.1, "warn", None),
    )
    assert policy.fairness_for("sex") == (
        FairnessThreshold("demographic_parity_difference", 0.1, "warn", None),
        FairnessThreshold("equalized_odds_difference", 0.05, "block", "point_estimate"),
    )
    assert policy.fairness_for("age") == policy.fairness_default


def test_empty_document_is_an_empty_policy() -> None:
    assert load_policy("") == Policy()
    assert load_policy("version: 1") == Policy()


def test_policy_loads_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(FULL, encoding="utf-8")
    assert load_policy(path) == load_policy(FULL) == load_policy(str(path))


def test_default_policy_is_sensible() -> None:
    policy = default_policy()
    assert ValueThreshold("roc_auc", 0.7, None, "block", None) in policy.values
    assert ChangeThreshold("roc_auc", -0.01, None, "higher_is_better", "block",
                           None) in policy.changes
    assert any(c.metric == "log_loss" and c.direction == "lower_is_better"
               for c in policy.changes)
    assert FairnessThreshold("equalized_odds_difference", 0.03, "block",
                             None) in policy.fairness_default
    assert any(t.metric == "demographic_parity_difference" and t.severity == "warn"
               for t in policy.fairness_default)


BAD = [
    ("metrics: {auc: {value: {lower: 0.7}}}", "'metrics.auc': expected one of accuracy"),
    ("metrics: {roc_auc: {value: {lower: high}}}",
     "'metrics.roc_auc.value.lower': expected a finite number; got 'high'"),
    ("metrics: {roc_auc: {value: {lower: .nan}}}", "expected a finite number; got nan"),
    ("metrics: {roc_auc: {value: {lower: true}}}", "expected a finite number; got True"),
    ("metrics: {roc_auc: {value: {lower: 0.9, upper: 0.8}}}",
     "'metrics.roc_auc.value': expected lower <= upper; got lower=0.9, upper=0.8"),
    ("metrics: {roc_auc: {value: {severity: warn}}}", "expected at least one of 'lower', 'upper'"),
    ("metrics: {roc_auc: {value: {lower: 0.7, severity: fatal}}}",
     "'metrics.roc_auc.value.severity': expected 'block' or 'warn'; got 'fatal'"),
    ("metrics: {roc_auc: {value: {lower: 0.7, minimum: 1}}}", "unknown key 'minimum'"),
    ("metrics: {roc_auc: {change: {direction: up, absolute: 0}}}",
     "'metrics.roc_auc.change.direction': expected 'higher_is_better'"),
    ("metrics: {roc_auc: {change: {severity: warn}}}", "expected at least one of 'absolute'"),
    ("metrics: {roc_auc: {value: {lower: 0.7, use_confidence_bound: maybe}}}",
     "use_confidence_bound': expected true or false; got 'maybe'"),
    ("metrics: {roc_auc: {value: {lower: 0.7, basis: pessimistic}}}",
     "'metrics.roc_auc.value.basis': expected 'interval' or 'point_estimate'; got 'pessimistic'"),
    ("basis: interval\nuse_confidence_bound: true",
     "give 'basis' or its former spelling 'use_confidence_bound', not both"),
    ("on_inconclusive: pass", "'on_inconclusive': expected 'block' or 'warn'; got 'pass'"),
    ("fairness: {default: {tpr_gap: {upper: 0.1, on_inconclusive: ignore}}}",
     "'fairness.default.tpr_gap.on_inconclusive': expected 'block' or 'warn'; got 'ignore'"),
    ("fairness: {min_positives_per_group: 2.5}",
     "'fairness.min_positives_per_group': expected a whole number from 0 to "
     "9,223,372,036,854,775,807; got 2.5"),
    ("fairness: {min_negatives_per_group: -1}",
     "'fairness.min_negatives_per_group': expected a whole number from 0 to "
     "9,223,372,036,854,775,807; got -1"),
    ("metrics: {equalized_odds_difference: {value: {upper: 0.1}}}",
     "is a metric for the 'fairness' section"),
    ("fairness: {default: {roc_auc: {upper: 0.1}}}", "is a metric for the 'metrics' section"),
    ("fairness: {default: {tpr_gap: {upper: -0.1}}}",
     "'fairness.default.tpr_gap.upper': expected a number >= 0; got -0.1"),
    ("fairness: {default: {tpr_gap: {lower: 0.1}}}", "unknown key 'lower'"),
    ("fairness: {features: {sex: {fpr_gap: {}}}}",
     "'fairness.features.sex.fpr_gap.upper': expected a number >= 0; got None"),
    ("fairness: {features: {1: {fpr_gap: {upper: 1}}}}", "expected string keys; got 1"),
    ("metrics: [roc_auc]", "'metrics': expected a mapping; got ['roc_auc']"),
    ("thresholds: {}", "unknown key 'thresholds'"),
    ("version: 2", "'version': expected 1; got 2"),
    ("metrics: {roc_auc: {value: {lower: 0.7}}, roc_auc: {}}", "key 'roc_auc' twice"),
    ("metrics: {roc_auc: [", "not valid YAML"),
    ("- a\n- b", "policy: expected a mapping"),
]
#: Issue #37: what the parser or the store refused later, naming nothing, is refused here by key.
HOSTILE = [
    ("fairness: {min_positives_per_group: %s}" % ("9" * 400),  # bigint out of range at the store
     "'fairness.min_positives_per_group': expected a whole number from 0 to "
     "9,223,372,036,854,775,807; got <an integer of 400 digits>"),
    ("fairness: {min_negatives_per_group: 9223372036854775808}",  # 2**63: one past bigint
     "'fairness.min_negatives_per_group': expected a whole number from 0"),
    ("metrics: {roc_auc: {value: {lower: %s}}}" % ("9" * 400),  # OverflowError in float()
     "'metrics.roc_auc.value.lower': expected a finite number; got <an integer of 400 digits>"),
    ("metrics: {roc_auc: {value: {lower: %s}}}" % ("9" * 5000),  # int() refuses > 4,300 digits
     "policy has an integer of 5,000 characters (line 1)"),
    ("metrics: {roc_auc: {change: {absolute: 1.0e+400}}}",  # YAML reads it as inf
     "'metrics.roc_auc.change.absolute': expected a finite number; got inf"),
    ("fairness: {features: {\"age\\0band\": {tpr_gap: {upper: 0.1}}}}",  # NUL: raw DB error
     "'fairness.features': expected keys without control characters; got 'age\\x00band' (holds '\\x00')"),
    ("fairness: {features: {\"age\\tband\": {tpr_gap: {upper: 0.1}}}}",
     "(holds '\\t')"),
    ("metrics: " + "[" * 10_000 + "]" * 10_000,  # RecursionError in PyYAML's composer
     "policy nests mappings and lists deeper than 32 levels (line 1)"),
    ("a:\n" + "".join(f"{'  ' * i}k{i}:\n" for i in range(1, 40)),  # block style too
     "deeper than 32 levels (line 33)"),
    ("metrics: {%s: {value: {lower: 0.7}}}" % ("m" * 1000),
     "expected one of accuracy"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE, ids=[m[:60] for _, m in HOSTILE])
def test_hostile_policies_raise_policy_error_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        load_policy(text)
    assert message in str(info.value)
    assert len(str(info.value)) < 600  # a huge value is cut, not echoed


def test_a_policy_at_the_nesting_limit_loads() -> None:
    """32 levels are accepted by the parser (the policy's own keys then refuse the content)."""
    text = "fairness:\n  features:\n    f:\n      tpr_gap: {upper: 0.1}\n"
    assert load_policy(text).fairness_for("f")[0].upper == 0.1
    with pytest.raises(PolicyError, match="expected a mapping; got"):
        load_policy("metrics: " + "[" * 31 + "]" * 31)


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m for _, m in BAD])
def test_malformed_policies_raise_policy_error_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        load_policy(text)
    assert message in str(info.value)


def test_policy_error_is_a_value_error() -> None:
    assert issubclass(PolicyError, ValueError)


def test_merge_replaces_threshold_by_threshold() -> None:
    base = load_policy(FULL)
    override = load_policy("""
use_confidence_bound: false
metrics:
  roc_auc: {value: {lower: 0.8}}
  f1: {value: {lower: 0.4}}
fairness:
  default: {tpr_gap: {upper: 0.2}}
  features:
    sex: {demographic_parity_difference: {upper: 0.2}}
    race: {equalized_odds_difference: {upper: 0.04}}
""")
    merged = merge_policies(base, override)
    assert merged.basis == "point_estimate"
    assert merged.values == (ValueThreshold("roc_auc", 0.8, None, "block", None),
                             ValueThreshold("f1", 0.4, None, "block", None))
    assert merged.changes == base.changes
    assert [t.metric for t in merged.fairness_default] == [
        "equalized_odds_difference", "demographic_parity_difference", "tpr_gap"]
    sex = {t.metric: t.upper for t in merged.fairness_for("sex")}
    assert sex == {"equalized_odds_difference": 0.05, "demographic_parity_difference": 0.2,
                   "tpr_gap": 0.2}
    assert {t.metric: t.upper for t in merged.fairness_for("race")}[
        "equalized_odds_difference"] == 0.04


def test_merge_keeps_base_confidence_setting_when_override_is_silent() -> None:
    base = load_policy("use_confidence_bound: true")
    assert merge_policies(base, Policy()).basis == "interval"


def test_verdict_settings_parse_merge_and_default() -> None:
    base = load_policy("""
basis: interval
on_inconclusive: warn
fairness: {min_positives_per_group: 25, min_negatives_per_group: 0}
""")
    assert (base.basis, base.on_inconclusive, base.min_positives_per_group,
            base.min_negatives_per_group) == ("interval", "warn", 25, 0)
    merged = merge_policies(base, load_policy("on_inconclusive: block\n"
                                              "fairness: {min_negatives_per_group: 5}"))
    assert (merged.basis, merged.on_inconclusive, merged.min_positives_per_group,
            merged.min_negatives_per_group) == ("interval", "block", 25, 5)
    assert Policy().basis is None and Policy().on_inconclusive is None  # gate: point, block
    shipped = default_policy()
    assert (shipped.basis, shipped.on_inconclusive, shipped.min_positives_per_group,
            shipped.min_negatives_per_group) == ("interval", "block", 10, 10)


# --- cases for the mutation session of evaluation/policy.py (tests/MUTATION.md) ---


def test_a_duplicate_key_names_its_line() -> None:
    with pytest.raises(PolicyError, match=r"key 'roc_auc' twice \(line 3\)"):
        load_policy("metrics:\n  roc_auc: {value: {lower: 0.7}}\n  roc_auc: {}\n")


def test_a_recursive_alias_is_not_valid_yaml() -> None:
    # the value is built in full (deep) before validation, so the alias loop is refused by YAML
    with pytest.raises(PolicyError, match="not valid YAML: found unconstructable recursive node"):
        load_policy("metrics: &a [*a]")


@pytest.mark.parametrize(("metric", "direction"), [
    ("roc_auc", "higher_is_better"), ("accuracy", "higher_is_better"),
    ("precision", "higher_is_better"), ("recall", "higher_is_better"),
    ("f1", "higher_is_better"), ("log_loss", "lower_is_better"), ("brier", "lower_is_better"),
    ("macro_f1", "higher_is_better"), ("weighted_f1", "higher_is_better"),
    ("roc_auc_ovr_macro", "higher_is_better"), ("rmse", "lower_is_better"),
    ("mae", "lower_is_better"), ("r2", "higher_is_better"),
    ("recall[cat]", "higher_is_better"), ("precision[cat]", "higher_is_better"),
])
def test_a_change_threshold_takes_the_metric_s_natural_direction(metric: str,
                                                                  direction: str) -> None:
    (change,) = load_policy(f"metrics: {{'{metric}': {{change: {{absolute: 0}}}}}}").changes
    assert change.direction == direction


def test_equal_bounds_and_a_zero_gap_limit_are_accepted() -> None:
    policy = load_policy("metrics: {roc_auc: {value: {lower: 0.8, upper: 0.8}}}\n"
                         "fairness: {default: {tpr_gap: {upper: 0}}}")
    assert policy.values == (ValueThreshold("roc_auc", 0.8, 0.8),)
    assert policy.fairness_default == (FairnessThreshold("tpr_gap", 0.0),)


@pytest.mark.parametrize("metric", ["recall[]", "recall[cat", "f1[cat]", "roc_auc[cat]"])
def test_a_malformed_or_unknown_per_class_name_is_refused(metric: str) -> None:
    with pytest.raises(PolicyError, match=r"expected one of accuracy.*got '"
                       + metric.replace("[", r"\[").replace("]", r"\]") + "'"):
        load_policy(f"metrics: {{'{metric}': {{value: {{lower: 0.5}}}}}}")


@pytest.mark.parametrize("task", ["binary_classification", "regression"])
def test_a_per_class_name_is_refused_for_a_task_that_is_not_multiclass(task: str) -> None:
    from modelgate.evaluation.policy import check_policy_for_task

    with pytest.raises(PolicyError, match=r"'recall\[a\]' is not reported"):
        check_policy_for_task(load_policy("metrics: {'recall[a]': {value: {lower: 0.5}}}"), task)
    if task == "regression":  # a plain recall is not a regression metric either
        with pytest.raises(PolicyError, match="'recall' is not reported for task regression"):
            check_policy_for_task(load_policy("metrics: {recall: {value: {lower: 0.5}}}"), task)


def test_a_task_name_built_at_run_time_is_read_by_value() -> None:
    from modelgate.evaluation.policy import check_policy_for_task, default_policy_path

    task = "".join(["multiclass_", "classification"])
    check_policy_for_task(load_policy("metrics: {'recall[a]': {value: {lower: 0.5}}}\n"
                                      "fairness: {default: {'tpr_gap[a]': {upper: 0.1}}}"), task)
    assert default_policy_path(task).name == "default_policy_multiclass_classification.yaml"
    binary = "".join(["binary_", "classification"])
    assert default_policy_path(binary).name == "default_policy.yaml"


@pytest.mark.parametrize("version", ["0", "-1", "0.5"])
def test_a_version_below_1_is_refused(version: str) -> None:
    with pytest.raises(PolicyError, match=f"'version': expected 1; got {version}"):
        load_policy(f"version: {version}")


@pytest.mark.parametrize("threshold", [
    ValueThreshold("roc_auc", 0.7, None),
    ChangeThreshold("roc_auc", -0.01, None, "higher_is_better"),
    FairnessThreshold("tpr_gap", 0.1),
    Policy(),
], ids=lambda t: type(t).__name__)
def test_policy_records_are_frozen_and_slotted(threshold: object) -> None:
    import dataclasses

    field = dataclasses.fields(threshold)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(threshold, field, None)
    assert not hasattr(threshold, "__dict__")
    assert "__slots__" in type(threshold).__dict__
