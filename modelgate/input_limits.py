"""The limits every configuration input is held to, and how a refused value is shown.

Configuration (environment variables, policy YAML, JSON options, DAG params) is checked
against these before any scoring, so a value the store or the object store would refuse
later fails first, naming the key. Integer limits are the PostgreSQL column types the
migrations declare; the nesting limit bounds the parsers (PyYAML and :mod:`json` recurse
once per level, so a deeply nested document would otherwise raise ``RecursionError``
naming nothing).

Examples
--------
>>> shown("x" * 1000)[-22:]
'... (1,002 characters)'
>>> shown(10 ** 400)
'<an integer of 401 digits>'
>>> control_character("age\\tband")
'\\t'
"""

from __future__ import annotations

import re

__all__ = [
    "BIGINT_MAX",
    "GIVEN_TEXT_PATTERN",
    "INTEGER_MAX",
    "MAX_NESTING",
    "PRESIGN_EXPIRY_MAX_S",
    "TEXT_PATTERN",
    "control_character",
    "shown",
]

#: Largest value of a PostgreSQL ``bigint`` column.
BIGINT_MAX = 2**63 - 1
#: Largest value of a PostgreSQL ``integer`` column.
INTEGER_MAX = 2**31 - 1
#: Deepest nesting of mappings and lists accepted in a policy or a JSON option. A policy
#: needs five levels (``fairness.features.<feature>.<gap>.upper``), drift thresholds four.
MAX_NESTING = 32
#: Longest lifetime of an S3 presigned URL (signature version 4 allows 7 days).
PRESIGN_EXPIRY_MAX_S = 7 * 24 * 3600
#: JSON-schema ``pattern`` of a text param: no control character (NUL included), as
#: Airflow checks a DAG's params when a run is triggered.
TEXT_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"
#: ... and not empty or only blanks (a path or name that must be given).
GIVEN_TEXT_PATTERN = r"^(?=.*\S)[^\x00-\x1f\x7f-\x9f]*$"
#: Longest text of a value shown in an error message.
SHOWN_CHARS = 80

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def shown(value: object) -> str:
    """``repr(value)`` for an error message, cut to :data:`SHOWN_CHARS` when longer.

    An integer too long to print (Python refuses ``str`` of one over 4,300 digits) is
    described by its number of digits.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        digits = len(str(abs(value))) if value.bit_length() < 14_000 else None
        return f"<an integer of {digits if digits else 'over 4,300'} digits>"
    try:
        text = repr(value)
    except ValueError:  # a container holding such an integer
        text = f"<a {type(value).__name__} too large to show>"
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS - 24]}... ({len(text):,} characters)"


def control_character(text: str) -> str | None:
    """The first control character (C0, DEL or C1, NUL included) in ``text``, or None."""
    found = _CONTROL.search(text)
    return None if found is None else found.group()
