"""The canonical YAML text of a policy: what a run stores as the policy it was judged by.

A run's policy is the task default, the model's policy file and an ad-hoc file merged
(:func:`~modelgate.evaluation.policy.merge_policies`); no file holds the result. This
writes it as one self-contained policy document, which :func:`load_policy` reads back to
the same checks. Every key of a threshold is written out (``severity`` and ``direction``
too), so the text does not depend on the defaults of the modelgate version that reads it;
keys are read from the threshold dataclasses' fields, so keys added to the format later
are written too.

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
    if policy.use_confidence_bound is not None:
        document["use_confidence_bound"] = policy.use_confidence_bound
    metrics: dict[str, dict[str, Any]] = {}
    for kind, thresholds in (("value", policy.values), ("change", policy.changes)):
        for t in thresholds:
            metrics.setdefault(t.metric, {})[kind] = _body(t)
    if metrics:
        document["metrics"] = metrics
    fairness: dict[str, Any] = {}
    if policy.fairness_default:
        fairness["default"] = {t.metric: _body(t) for t in policy.fairness_default}
    features = {f: {t.metric: _body(t) for t in block} for f, block in policy.fairness_features
                if block}
    if features:
        fairness["features"] = features
    if fairness:
        document["fairness"] = fairness
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=None, allow_unicode=True)


def _body(threshold: Any) -> dict[str, Any]:
    return {f.name: getattr(threshold, f.name) for f in dataclasses.fields(threshold)
            if f.name != "metric" and getattr(threshold, f.name) is not None}
