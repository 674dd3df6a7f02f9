"""The canonical YAML text of a policy: what a run stores as the policy it was judged by.

A run's policy is the task default, the model's policy file and an ad-hoc file merged
(:func:`~modelgate.evaluation.policy.merge_policies`); no file holds the result. This
writes it as one self-contained policy document, which :func:`load_policy` reads back to
the same checks. Every key of a threshold is written out (``severity`` and ``direction``
too), so the text does not depend on the defaults of the modelgate version that reads it;
keys are read from the threshold and policy dataclasses' fields, so keys added to the
format later are written too.

Examples
--------
>>> from modelgate.evaluation.policy import load_policy
>>> print(policy_text(load_policy('''
... metrics: {roc_auc: {value: {lower: 0.7}}}
... fairness: {features: {gender: {tpr_gap: {upper: 0.1, severity: warn}}}}
... ''')), end="")
version: 1
metrics:
  roc_auc:
    value: {lower: 0.7, severity: block}
fairness:
  features:
    gender:
      tpr_gap: {upper: 0.1, severity: warn}
"""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from .policy import Policy

__all__ = ["policy_text"]


def policy_text(policy: Policy) -> str:
    """``policy`` as a policy YAML document that loads back to the same checks.

    Parameters
    ----------
    policy : Policy

    Returns
    -------
    str
        YAML text; sections without checks are left out.
    """
    document: dict[str, Any] = {"version": 1}
    for field in dataclasses.fields(policy):  # basis, on_inconclusive, any policy-wide key
        value = getattr(policy, field.name)
        if field.name not in _SECTIONS and field.name not in _FAIRNESS_WIDE and value is not None:
            document[field.name] = value
    metrics: dict[str, dict[str, Any]] = {}
    for kind, thresholds in (("value", policy.values), ("change", policy.changes)):
        for t in thresholds:
            metrics.setdefault(t.metric, {})[kind] = _body(t)
    if metrics:
        document["metrics"] = metrics
    fairness: dict[str, Any] = {name: getattr(policy, name) for name in _FAIRNESS_WIDE
                                if getattr(policy, name) is not None}
    if policy.fairness_default:
        fairness["default"] = {t.metric: _body(t) for t in policy.fairness_default}
    features = {f: {t.metric: _body(t) for t in block} for f, block in policy.fairness_features
                if block}
    if features:
        fairness["features"] = features
    if fairness:
        document["fairness"] = fairness
    if policy.segments is not None:
        document["segments"] = policy.segments.to_document()
    # one key at a time: thresholds in flow style ({upper: 0.1, ...}), the top level in block
    return "".join(yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True,
                                  default_flow_style=None if isinstance(value, dict) else False)
                   for key, value in document.items())


_SECTIONS = frozenset({"values", "changes", "fairness_default", "fairness_features", "segments"})
# policy-wide keys written under ``fairness:``, where the format puts them
_FAIRNESS_WIDE = ("min_positives_per_group", "min_negatives_per_group")


def _body(threshold: Any) -> dict[str, Any]:
    return {f.name: getattr(threshold, f.name) for f in dataclasses.fields(threshold)
            if f.name != "metric" and getattr(threshold, f.name) is not None}
