"""Plain values for result records: what every core's ``to_record()`` is made of.

A record is a ``dict`` of JSON-able values (``str``, ``int``, ``bool``, ``None``, finite
``float`` and lists of those) keyed by the column names the results store uses. The store
inserts records by those names, the report views and the JSON output read the same keys.
JSON has no NaN or infinity and PostgreSQL would store them as numbers, so an undefined
number is ``None`` in a record. The helpers live here, below the numeric cores that all use
them (imports only go downward: see the README's code layout).
"""

from __future__ import annotations

import math

__all__ = ["finite_or_none"]


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or ``None`` when it is missing or not finite (JSON has no NaN).

    Parameters
    ----------
    value : float or None
        Any real number (NumPy scalars included).

    Returns
    -------
    float or None

    Examples
    --------
    >>> finite_or_none(0.5), finite_or_none(float("nan")), finite_or_none(float("inf")), finite_or_none(None)
    (0.5, None, None, None)
    """
    return None if value is None or not math.isfinite(float(value)) else float(value)
