"""Policy provenance: where a policy is looser than another, check by check.

A run may be judged by an ad-hoc policy layered over the model's own (the task's default
merged with ``policies/<model>.yaml``). :func:`diff_policies` compares the two and says,
for every check that differs, whether the run's policy is *looser* (it could pass a model
the other blocks), *stricter*, or *unordered* (a different kind of check: a changed
``direction`` or a key this module does not know how to order). A check is named by its
place in the policy document: ``metrics.<metric>.value``, ``metrics.<metric>.change``,
``fairness.default.<gap>`` and ``fairness.features.<feature>.<gap>``.

Which way is looser, per threshold key:

* ``lower``, ``absolute``, ``relative``: a smaller number (and no bound at all) is looser;
* ``upper``: a larger number (and no bound at all) is looser;
* ``severity`` and any other ``block``/``warn`` key (``on_inconclusive``): ``warn`` is
  looser than ``block``;
* how a check is judged, ``basis`` and ``on_inconclusive`` after falling back to the
  policy-wide values (as the gate does), compared as one key ``judging``: the interval basis
  with inconclusive blocking is strictest (it blocks every point-estimate breach and more),
  the point estimate next, the interval basis with inconclusive warning loosest (it blocks
  only what the whole interval shows breached, which the point estimate blocks too);
* ``min_positives_per_group``, ``min_negatives_per_group`` (policy-wide, unset read as the
  gate's default): a larger minimum makes more gaps inconclusive, which is stricter where
  inconclusive checks block and looser where they warn, so a change is unordered;
* a check the run's policy lacks is looser, one it adds is stricter;
* the ``segments:`` section: stricter when it only adds segment columns or pairs to the
  reference's (or the reference judges no segment), else unordered;
* any other key that changes is unordered.

Keys are read from the threshold and policy dataclasses' fields, so a key added to the
policy format later is compared too (unordered until it is listed above; a policy-wide one
under the place ``policy``, counted as blocking).

A run is *looser than the model's own policy* when any check that blocks under the model's
own policy is looser or unordered in the run's: an unordered change to a blocking check
could let through what the model's own policy blocks, so it counts against the run. The
comparison is exact; nothing is estimated.

Examples
--------
>>> from modelgate.evaluation.policy import load_policy
>>> own = load_policy("fairness: {default: {equalized_odds_difference: {upper: 0.03}}}")
>>> ad_hoc = load_policy("fairness: {default: {equalized_odds_difference: {upper: 0.15}}}")
>>> diff = diff_policies(ad_hoc, own)
>>> diff.looser
True
>>> [c.text() for c in diff.looser_blocking]
['fairness.default.equalized_odds_difference: upper 0.03 -> 0.15 (looser)']
>>> diff_policies(own, ad_hoc).looser
False
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .policy import DEFAULT_MIN_GROUP_COUNT, FairnessThreshold, Policy

__all__ = ["Effect", "PolicyChange", "PolicyDiff", "diff_policies"]

Effect = Literal["looser", "stricter", "unordered"]
Threshold = Any  # ValueThreshold | ChangeThreshold | FairnessThreshold, compared by their fields

_SEVERITY_RANK = {"warn": 0, "block": 1}


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """One difference between a run's policy and the reference (the model's own) policy.

    ``key`` is the threshold key that changed, or ``"check"`` when the whole check is only in
    one of them (its ``reference`` or ``effective`` side is then None). ``blocking`` says whether
    the reference's check blocks.
    """

    place: str
    key: str
    reference: bool | float | str | None
    effective: bool | float | str | None
    effect: Effect
    blocking: bool

    @property
    def loosens_blocking(self) -> bool:
        """True when this change could let through what the reference policy blocks."""
        return self.blocking and self.effect != "stricter"

    def text(self) -> str:
        """One line for people, e.g. ``metrics.roc_auc.value: lower 0.7 -> 0.6 (looser)``.

        >>> PolicyChange("metrics.roc_auc.value", "check", "block", None, "looser", True).text()
        'metrics.roc_auc.value: removed (looser)'
        """
        if self.key == "check":
            what = "removed" if self.effective is None else "added"
        else:
            what = f"{self.key} {_show(self.reference)} -> {_show(self.effective)}"
        return f"{self.place}: {what} ({self.effect})"

    def to_record(self) -> dict[str, Any]:
        """The change as plain values (stored as JSON with the run).

        >>> PolicyChange("fairness.default.tpr_gap", "upper", 0.1, 0.2, "looser", False).to_record()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'place': 'fairness.default.tpr_gap', 'key': 'upper', 'reference': 0.1, 'effective': 0.2,
         'effect': 'looser', 'blocking': False}
        """
        return {"place": self.place, "key": self.key, "reference": self.reference,
                "effective": self.effective, "effect": self.effect, "blocking": self.blocking}


@dataclass(frozen=True, slots=True)
class PolicyDiff:
    """Every difference of a run's policy from the reference policy, in document order."""

    changes: tuple[PolicyChange, ...]

    @property
    def looser_blocking(self) -> tuple[PolicyChange, ...]:
        """The changes that loosen a check the reference policy blocks on."""
        return tuple(c for c in self.changes if c.loosens_blocking)

    @property
    def looser(self) -> bool:
        """True when the run's policy is looser than the reference on any blocking check."""
        return bool(self.looser_blocking)


def diff_policies(policy: Policy, reference: Policy) -> PolicyDiff:
    """Compare ``policy`` (the run's) with ``reference`` (the model's own), check by check.

    Parameters
    ----------
    policy : Policy
        The policy a run is judged by.
    reference : Policy
        The policy it is compared with.

    Returns
    -------
    PolicyDiff
        Empty when the two judge every check alike.

    Examples
    --------
    >>> from modelgate.evaluation.policy import load_policy
    >>> own = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}}")
    >>> warn = load_policy("metrics: {roc_auc: {value: {lower: 0.8, severity: warn}}}")
    >>> for change in diff_policies(warn, own).changes:
    ...     print(change.text())
    metrics.roc_auc.value: lower 0.7 -> 0.8 (stricter)
    metrics.roc_auc.value: severity block -> warn (looser)
    """
    mine, theirs = dict(_checks(policy, reference)), dict(_checks(reference, policy))
    changes: list[PolicyChange] = []
    for place in dict.fromkeys([*theirs, *mine]):
        changes += _compare(place, theirs.get(place), mine.get(place), reference, policy)
    names = dict.fromkeys(f.name for p in (reference, policy) for f in dataclasses.fields(p))
    for name in names:  # policy-wide keys added later; they may unblock any check
        if name not in _CHECK_FIELDS:
            before, after = getattr(reference, name, None), getattr(policy, name, None)
            if name in _GROUP_MINIMUMS:  # unset is the gate's default
                before, after = (DEFAULT_MIN_GROUP_COUNT if v is None else v for v in (before, after))
            if name == "segments":
                if before != after:
                    changes.append(_segments_change(before, after))
                continue
            if before != after:
                changes.append(PolicyChange("policy", name, before, after,
                                            _effect(name, before, after), True))
    return PolicyDiff(tuple(changes))


def _segments_change(old: Any, new: Any) -> PolicyChange:
    """The ``segments:`` section as one change, its sides as JSON text (comparable, storable).

    Stricter when the reference judges no segment (nothing it blocks can pass), or when the
    run's section is the reference's with more columns or pairs evaluated (more slices, the
    same thresholds); any other difference is unordered (a level, a correction, a minimum
    size or a threshold moves the line both ways), blocking when the reference has a
    blocking segment threshold.
    """
    blocking = old is not None and any(t.severity == "block" for t in old.thresholds)
    more_slices = (blocking and new is not None
                   and (new.thresholds, new.level, new.correction, new.min_rows)
                   == (old.thresholds, old.level, old.correction, old.min_rows)
                   and set(old.columns) <= set(new.columns) and set(old.pairs) <= set(new.pairs))
    effect: Effect = "stricter" if not blocking or more_slices else "unordered"
    before, after = (None if v is None else json.dumps(v.to_document(), sort_keys=True)
                     for v in (old, new))
    return PolicyChange("policy", "segments", before, after, effect, blocking)


# Policy fields compared check by check (``basis`` and ``on_inconclusive`` through each
# check's judging).
_CHECK_FIELDS = frozenset({"values", "changes", "fairness_default", "fairness_features",
                           "basis", "on_inconclusive"})
_JUDGING_FIELDS = frozenset({"basis", "on_inconclusive"})
_GROUP_MINIMUMS = frozenset({"min_positives_per_group", "min_negatives_per_group"})
# Strictness of the (basis, on_inconclusive) pairs, as the gate applies them: under the
# point-estimate basis nothing is inconclusive, so on_inconclusive does not matter there.
_JUDGING_RANK = {"interval, inconclusive warns": 0, "point estimate": 1,
                 "interval, inconclusive blocks": 2}


def _checks(policy: Policy, other: Policy) -> Iterator[tuple[str, Threshold]]:
    """``(place, threshold)`` of every check of ``policy``; per-feature fairness checks where
    either policy names the feature and gap (elsewhere the default covers the feature)."""
    for value in policy.values:
        yield f"metrics.{value.metric}.value", value
    for change in policy.changes:
        yield f"metrics.{change.metric}.change", change
    for gap in policy.fairness_default:
        yield f"fairness.default.{gap.metric}", gap
    for feature, block in [*other.fairness_features, *policy.fairness_features]:
        effective: dict[str, FairnessThreshold] = {t.metric: t for t in policy.fairness_for(feature)}
        for t in block:
            if t.metric in effective:
                yield f"fairness.features.{feature}.{t.metric}", effective[t.metric]


def _compare(place: str, old: Threshold | None, new: Threshold | None, old_policy: Policy,
             new_policy: Policy) -> list[PolicyChange]:
    if old is None and new is None:
        return []
    if new is None:
        assert old is not None
        return [PolicyChange(place, "check", old.severity, None, "looser", old.severity == "block")]
    if old is None:
        return [PolicyChange(place, "check", None, new.severity, "stricter", False)]
    blocking = old.severity == "block"
    changes = []
    for field in dataclasses.fields(old):
        if field.name == "metric" or field.name in _JUDGING_FIELDS:
            continue
        before, after = getattr(old, field.name), getattr(new, field.name, None)
        if before != after:
            changes.append(PolicyChange(place, field.name, before, after,
                                        _effect(field.name, before, after), blocking))
    before, after = _judging(old, old_policy), _judging(new, new_policy)
    if before != after:
        changes.append(PolicyChange(place, "judging", before, after,
                                    _effect("judging", before, after), blocking))
    return changes


def _judging(threshold: Threshold, policy: Policy) -> str:
    """How the gate judges ``threshold`` (its keys, else the policy's, else the defaults)."""
    basis = getattr(threshold, "basis", None) or policy.basis or "point_estimate"
    if basis == "point_estimate":
        return "point estimate"
    on_inconclusive = (getattr(threshold, "on_inconclusive", None) or policy.on_inconclusive
                       or "block")
    return f"interval, inconclusive {on_inconclusive}s"


def _effect(key: str, before: Any, after: Any) -> Effect:
    order = _ORDERS.get(key)
    if order is None and {before, after} <= set(_SEVERITY_RANK):
        order = _by_rank(_SEVERITY_RANK)  # severity, on_inconclusive and the like
    return "unordered" if order is None else order(before, after)


def _higher_is_stricter(missing: float) -> Callable[[Any, Any], Effect]:
    def effect(before: Any, after: Any) -> Effect:
        b = missing if before is None else before
        a = missing if after is None else after
        return "stricter" if a > b else "looser"
    return effect


def _by_rank(rank: dict[Any, int]) -> Callable[[Any, Any], Effect]:
    def effect(before: Any, after: Any) -> Effect:
        return "stricter" if rank[after] > rank[before] else "looser"
    return effect


_NO_LOWER = float("-inf")  # a missing lower bound or margin lets anything through
_ORDERS: dict[str, Callable[[Any, Any], Effect]] = {
    "lower": _higher_is_stricter(_NO_LOWER),
    "absolute": _higher_is_stricter(_NO_LOWER),
    "relative": _higher_is_stricter(_NO_LOWER),
    # a smaller upper bound is stricter: negate both sides; a missing one is +inf
    "upper": lambda before, after: _higher_is_stricter(_NO_LOWER)(
        None if before is None else -before, None if after is None else -after),
    "judging": _by_rank(_JUDGING_RANK),
}


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
