"""Names as people see them: characters that hide or reorder text, shown as escapes.

Names (model names, versions, column names, group labels) come from users. A control
character can start a fake log line or repaint a terminal; a bidirectional override
(U+202E) shows ``txt.exe`` as ``exe.txt``; a zero-width space makes ``churn`` and
``chu\u200brn`` look the same. Every place a name is shown (the CLI's text, logs, the
HTML reports and index page, chart labels) passes it through :func:`escape_hidden`, which
writes each such character as a visible escape (``\\n``, ``\\x1b``, ``\\u202e``), so what is
shown is what is stored, character for character.

Escaped: C0 and C1 controls and DEL; the line and paragraph separators U+2028/U+2029; the
bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F,
U+202A-U+202E, U+2066-U+2069); zero-width and invisible characters (U+200B-U+200D,
U+2060-U+2064, U+FEFF).
"""

from __future__ import annotations

import re

__all__ = ["escape_hidden", "has_hidden_characters"]

_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064"
                     "\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def has_hidden_characters(text: str) -> bool:
    """Whether ``text`` holds a character :func:`escape_hidden` would escape.

    >>> has_hidden_characters("age\\u202eband"), has_hidden_characters("âge band")
    (True, False)
    """
    return _HIDDEN.search(text) is not None


def escape_hidden(text: str, *, keep: str = "") -> str:
    """``text`` with every hidden or reordering character written as a visible escape.

    Parameters
    ----------
    text
        Any text.
    keep
        Characters to leave as they are (HTML keeps ``"\\n\\t"``, which a browser shows
        as a space).

    Returns
    -------
    str
        ``text`` unchanged when it holds none of them.

    Examples
    --------
    >>> escape_hidden("invoice\\u202etxt.exe")
    'invoice\\\\u202etxt.exe'
    >>> escape_hidden("a\\u200bb\\n", keep="\\n")
    'a\\\\u200bb\\n'
    >>> escape_hidden("toy\\nINFO forged\\x1b[2J")
    'toy\\\\nINFO forged\\\\x1b[2J'
    """
    def one(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep:
            return char
        if char in _NAMED:
            return _NAMED[char]
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"

    return _HIDDEN.sub(one, text)
