"""Readers of the promotion policy's fields: a mapping with its allowed keys, a finite number,
a severity, the judging basis and what an inconclusive check does.

Each reads one field of the parsed YAML (:mod:`~.policy_yaml`) and raises
:class:`~.policy_yaml.PolicyError` naming the key path, what was expected and what came;
:mod:`~.policy` builds the thresholds from them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from modelgate.input_limits import control_character, shown

from .policy_yaml import PolicyError

__all__ = [
    "JUDGING_KEYS",
    "Basis",
    "Severity",
    "check_known",
    "key_part",
    "policy_basis",
    "policy_mapping",
    "policy_number",
    "policy_on_inconclusive",
    "policy_severity",
]

Severity = Literal["block", "warn"]
Basis = Literal["point_estimate", "interval"]


def policy_mapping(value: object, path: str, allowed: set[str] | None) -> dict[str, Any]:
    """``value`` as a mapping of non-empty string keys without control characters, each in
    ``allowed`` (any key when None); ``path`` is the key path the messages name.

    Examples
    --------
    >>> policy_mapping({"lower": 0.7}, "metrics.roc_auc.value", {"lower", "upper"})
    {'lower': 0.7}
    >>> try:
    ...     policy_mapping({"lowr": 0.7}, "metrics.roc_auc.value", {"lower", "upper"})
    ... except PolicyError as exc:
    ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
    policy key 'metrics.roc_auc.value': unknown key 'lowr'; expected one of lower, upper
    """
    where = f"policy key {path!r}" if path else "policy"
    if not isinstance(value, dict):
        raise PolicyError(f"{where}: expected a mapping; got {shown(value)}")
    for key in value:
        if not isinstance(key, str) or not key:
            raise PolicyError(f"{where}: expected string keys; got {shown(key)}")
        bad = control_character(key)
        if bad is not None:
            raise PolicyError(f"{where}: expected keys without control characters; got {shown(key)} "
                              f"(holds {bad!r})")
        if allowed is not None and key not in allowed:
            raise PolicyError(f"{where}: unknown key {shown(key)}; expected one of "
                              f"{', '.join(sorted(allowed))}")
    return value


def key_part(key: str) -> str:
    """A key as a part of a key path in a message: cut when long (the message shows it once)."""
    return key if len(key) <= 60 else f"{key[:40]}...({len(key):,} characters)"


def check_known(name: str, known: tuple[str, ...], path: str, *, other: tuple[str, ...],
                other_place: str) -> None:
    """Refuse a metric ``name`` not in ``known``, hinting at ``other_place`` when it is one of
    ``other`` (a fairness gap under ``metrics:``, or the reverse)."""
    if name in known:
        return
    hint = f" ({name!r} is a metric for the '{other_place}' section)" if name in other else ""
    raise PolicyError(f"policy key {path!r}: expected one of {', '.join(sorted(known))}; "
                      f"got {shown(name)}{hint}")


def policy_number(body: Mapping[str, Any], key: str, path: str) -> float | None:
    """``body[key]`` as a finite float (bools refused), None when the key is absent.

    Examples
    --------
    >>> policy_number({"upper": 3}, "upper", "fairness.default.tpr_gap"), policy_number({}, "upper", "x")
    (3.0, None)
    """
    if key not in body:
        return None
    value = body[key]
    try:  # float() of an integer beyond a float's range raises OverflowError
        number = None if isinstance(value, bool) or not isinstance(value, int | float) else float(value)
    except OverflowError:
        number = None
    if number is None or not math.isfinite(number):
        raise PolicyError(f"policy key '{path}.{key}': expected a finite number; got {shown(value)}")
    return number


def policy_severity(body: Mapping[str, Any], path: str) -> Severity:
    """``body["severity"]``: ``block`` (the default) or ``warn``."""
    severity = body.get("severity", "block")
    if severity not in ("block", "warn"):
        raise PolicyError(f"policy key '{path}.severity': expected 'block' or 'warn'; got "
                          f"{shown(severity)}")
    return "block" if severity == "block" else "warn"


#: The keys that say how a threshold is judged, allowed on every threshold and policy-wide.
JUDGING_KEYS = ("basis", "on_inconclusive", "use_confidence_bound")


def policy_basis(body: Mapping[str, Any], path: str) -> Basis | None:
    """``basis``, or its former spelling ``use_confidence_bound`` (true: interval), not both."""
    def where(key: str) -> str:
        return f"{path}.{key}" if path else key

    legacy = body.get("use_confidence_bound")
    if legacy is not None and not isinstance(legacy, bool):
        raise PolicyError(f"policy key {where('use_confidence_bound')!r}: expected true or false; "
                          f"got {shown(legacy)}")
    basis = body.get("basis")
    if basis is not None and legacy is not None:
        raise PolicyError(f"policy key {where('basis')!r}: give 'basis' or its former spelling "
                          "'use_confidence_bound', not both")
    if basis is None:
        return None if legacy is None else "interval" if legacy else "point_estimate"
    if basis not in ("interval", "point_estimate"):
        raise PolicyError(f"policy key {where('basis')!r}: expected 'interval' or 'point_estimate'; "
                          f"got {shown(basis)}")
    return "interval" if basis == "interval" else "point_estimate"


def policy_on_inconclusive(body: Mapping[str, Any], path: str) -> Severity | None:
    """``body["on_inconclusive"]``: ``block``, ``warn`` or None when not given."""
    value = body.get("on_inconclusive")
    if value is not None and value not in ("block", "warn"):
        where = f"{path}.on_inconclusive" if path else "on_inconclusive"
        raise PolicyError(f"policy key {where!r}: expected 'block' or 'warn'; got {shown(value)}")
    return None if value is None else "block" if value == "block" else "warn"
