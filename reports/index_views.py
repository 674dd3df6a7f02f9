"""Plain input views of a model's index page: the list of its evaluation and drift runs (see
:mod:`.views` for the conventions every view follows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from .view_checks import check_choice

RunKind = Literal["evaluation", "drift"]
IndexVerdict = Literal["passed", "warn", "blocked", "ok", "drift", "failed", "abandoned"]

_HREF_SCHEMES = ("", "http", "https")


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One run listed on a model's index page.

    ``href`` is a relative link or an ``http(s)`` URL (other schemes, such as
    ``javascript:``, are refused), or empty when the run has no report (a failed run).
    ``stage`` is the version's stage now (``candidate``, ``production``, ``archived``...);
    ``note`` says why a run failed or was blocked (one line).

    Examples
    --------
    >>> IndexRow("drift", "drift-1", "7", "2026-11-29T00:00:00Z", "ok", "drift-1.html").kind
    'drift'
    """

    kind: RunKind
    run_id: str
    version: str
    when: str
    verdict: IndexVerdict
    href: str
    stage: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        check_choice("IndexRow.kind", self.kind, RunKind)
        check_choice("IndexRow.verdict", self.verdict, IndexVerdict)
        if any(ch.isspace() or ord(ch) < 32 for ch in self.href):
            raise ValueError(f"IndexRow.href must not contain whitespace, got {self.href!r}")
        scheme = urlsplit(self.href).scheme.lower()
        if scheme not in _HREF_SCHEMES:
            raise ValueError(
                f"IndexRow.href scheme must be one of {_HREF_SCHEMES!r}, got {scheme!r}"
            )


@dataclass(frozen=True, slots=True)
class ModelIndexView:
    """The list of a model's evaluation and drift runs, in the order given.

    Examples
    --------
    >>> ModelIndexView("churn", runs=()).model_name
    'churn'
    """

    model_name: str
    runs: tuple[IndexRow, ...]
