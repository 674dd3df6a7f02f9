"""Validation shared by the report views: each raises ``ValueError`` naming the field, what
was allowed and what came (see :mod:`.views`).
"""

from __future__ import annotations

import math
import re
from typing import get_args

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def check_choice(name: str, value: object, allowed: object) -> None:
    """``value`` is one of the ``Literal`` type ``allowed``'s options."""
    options = get_args(allowed)
    if value not in options:
        raise ValueError(f"{name} must be one of {options!r}, got {value!r}")


def check_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def check_optional_finite(name: str, value: float | None) -> None:
    if value is not None:
        check_finite(name, value)


def check_rate(name: str, value: float) -> None:
    """A proportion in [0, 1], or NaN when undefined."""
    if not (math.isnan(value) or 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1] or nan, got {value!r}")


def check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")


def check_sha256(name: str, value: str) -> None:
    if not _SHA256.fullmatch(value):
        raise ValueError(f"{name} must be 64 hexadecimal characters (a sha256), got {value!r}")


def check_interval(name: str, lower: float | None, upper: float | None) -> None:
    if lower is not None and upper is not None and lower > upper:
        raise ValueError(f"{name}: lower bound {lower!r} is above upper bound {upper!r}")

