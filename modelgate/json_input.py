"""JSON options read strictly: a key given twice, deep nesting and unstorable values are refused.

Python's :mod:`json` keeps the last of a key given twice (``{"relative": 1.2, "relative":
9}`` would judge drift by the looser 9 without a word), reads ``NaN`` and ``Infinity``,
turns ``1e400`` into infinity, raises ``RecursionError`` on deep nesting and ``ValueError``
on an integer of over 4,300 digits. :func:`loads_object` refuses each, naming the option and
the key path; :func:`check_json_value` applies the same limits to an object that arrived
already parsed (a DAG's ``thresholds`` param from Airflow's run conf).

The limits are :mod:`modelgate.input_limits`'s: nesting at most ``MAX_NESTING`` levels,
integers within a PostgreSQL ``bigint``, floats finite, no control character in a key and
no NUL anywhere (PostgreSQL's ``jsonb`` cannot hold it).

Examples
--------
>>> loads_object('{"relative": 1.8}', where="--thresholds")
{'relative': 1.8}
>>> try:
...     loads_object('{"relative": 1.2, "relative": 9}', where="--thresholds")
... except JsonInputError as exc:
...     print(exc)
--thresholds: key 'relative' is given twice in one object (JSON would keep the last)
"""

from __future__ import annotations

import json
import math
from typing import Any

from modelgate.input_limits import BIGINT_MAX, MAX_NESTING, control_character, shown

__all__ = ["JsonInputError", "check_json_value", "loads_object"]


class JsonInputError(ValueError):
    """A JSON option breaks a limit; the message names the option and the key path."""


class _Unstorable:
    """A number JSON gave that no column holds, kept to be named with its key path."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return shown(self.text) if len(self.text) <= 60 else f"<a number of {len(self.text):,} characters>"


def loads_object(text: str, *, where: str) -> dict[str, Any]:
    """The JSON object in ``text``, within the limits above.

    Parameters
    ----------
    text : str
        JSON text, e.g. an option's value.
    where : str
        What the text is, for messages (``"--thresholds"``).

    Raises
    ------
    JsonInputError
        If the text is not JSON, not an object, or breaks a limit; naming ``where``.
    """
    _check_nesting(text, where)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise JsonInputError(f"{where}: key {shown(key)} is given twice in one object "
                                     "(JSON would keep the last)")
            out[key] = value
        return out

    def number(text: str) -> Any:
        value: Any = float(text) if any(c in text for c in ".eE") else (
            int(text) if len(text) <= 20 else None)
        ok = value is not None and (math.isfinite(value) if isinstance(value, float)
                                    else -BIGINT_MAX <= value <= BIGINT_MAX)
        return value if ok else _Unstorable(text)

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_int=number, parse_float=number,
                           parse_constant=_Unstorable)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"{where}: must be a JSON object, got {shown(text)}: {exc}") from None
    if not isinstance(value, dict):
        raise JsonInputError(f"{where}: must be a JSON object, got {shown(text)}")
    check_json_value(value, where=where)
    return value


def check_json_value(value: Any, *, where: str, path: str = "") -> None:
    """Refuse a parsed JSON value breaking a limit, naming ``where`` and the key path.

    >>> try:
    ...     check_json_value({"features": {"age\\tband": {}}}, where="thresholds")
    ... except JsonInputError as exc:
    ...     print(exc)
    thresholds: key 'features'.'age\\tband' holds a control character '\\t'
    """
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:  # iterative: an already parsed value may be nested deeper than Python recurses
        item, at, depth = stack.pop()
        named = f"the value of key {at}" if at else "the value"
        if depth > MAX_NESTING:
            raise JsonInputError(f"{where}: {named} nests deeper than {MAX_NESTING} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise JsonInputError(f"{where}: {named} has a key that is not text: {shown(key)}")
                bad = control_character(key)
                here = f"{at}.{shown(key)}" if at else shown(key)
                if bad is not None:
                    raise JsonInputError(f"{where}: key {here} holds a control character {bad!r}")
                stack.append((child, here, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{at}[{i}]" if at else f"[{i}]", depth + 1)
                         for i, child in enumerate(item))
        else:
            _check_scalar(item, where, named)


def _check_scalar(item: Any, where: str, named: str) -> None:
    if isinstance(item, _Unstorable) or (isinstance(item, float) and not math.isfinite(item)):
        raise JsonInputError(f"{where}: {named} must be a finite number (integers within "
                             f"+-{BIGINT_MAX:,}), got {item!r}")
    if isinstance(item, int) and not isinstance(item, bool) and abs(item) > BIGINT_MAX:
        raise JsonInputError(f"{where}: {named} must be an integer within +-{BIGINT_MAX:,}, "
                             f"got {shown(item)}")
    if isinstance(item, str) and "\x00" in item:
        raise JsonInputError(f"{where}: {named} must not contain a NUL character (\\u0000)")


def _check_nesting(text: str, where: str) -> None:
    """Refuse nesting deeper than ``MAX_NESTING`` before :mod:`json` recurses into it."""
    depth, in_string, escaped = 0, False, False
    for i, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise JsonInputError(f"{where}: nests deeper than {MAX_NESTING} levels "
                                     f"(at character {i + 1:,})")
        elif char in "]}":
            depth -= 1
