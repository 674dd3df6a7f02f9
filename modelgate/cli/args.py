"""The command line's one validation layer: argument types and usage errors (exit code 2).

Every check of a CLI argument that needs nothing but the argument itself is an ``argparse``
type here, so argparse refuses it with the usage line and exit code 2. Checks that need the
model or the database (``--class`` against the model's classes, ``--thresholds`` against
its features) raise :class:`UsageError`, which ``modelgate.cli.main`` turns into exit
code 2; :func:`as_usage_error` lets a handler run a pipeline's own argument check so the
CLI and the DAG refuse the same things with the same words.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from modelgate.input_limits import shown

#: What ``--data`` takes, as the README says: a parquet file, a directory of them, an s3:// prefix.
DATA_HELP = "a parquet file, a directory of parquet files (searched recursively) or s3://bucket/prefix"


class UsageError(Exception):
    """A command was called with arguments that cannot work."""


@contextmanager
def as_usage_error(*kinds: type[Exception]) -> Iterator[None]:
    """Turn the given exceptions (``ValueError`` by default) raised inside into :class:`UsageError`.

    >>> try:
    ...     with as_usage_error():
    ...         raise ValueError("--sample-rows must be >= 1")
    ... except UsageError as exc:
    ...     print(exc)
    --sample-rows must be >= 1
    """
    caught = kinds or (ValueError,)
    try:
        yield
    except caught as exc:
        raise UsageError(str(exc)) from exc


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]``.

    >>> bounded_int(1)("5")
    5
    >>> bounded_int(1, 10)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer from 1 to 10, got '0'
    """
    wanted = f"an integer from {low:,} to {high:,}" if high is not None else f"an integer >= {low:,}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # 5,000 digits too: Python refuses int() of over 4,300
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {shown(text)}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {shown(text)}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its own messages
    return parse


def json_object(text: str) -> dict[str, Any]:
    """An argparse type: a JSON object, read strictly (:func:`modelgate.json_input.loads_object`:
    a key given twice, nesting past 32 levels, non-finite numbers, NUL are refused).

    >>> json_object('{"relative": 2.0}')
    {'relative': 2.0}
    >>> json_object("[1]")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a JSON object, got '[1]'
    """
    from modelgate.json_input import JsonInputError, loads_object

    try:
        return loads_object(text, where="JSON")
    except JsonInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("JSON: ")) from None


def open_interval(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number in the open interval ``(low, high)``.

    >>> open_interval(0.0, 1.0)("0.002")
    0.002
    >>> open_interval(0.0, 1.0)("1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number in (0.0, 1.0), got '1'
    """
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low < value < high:  # NaN fails too
            raise argparse.ArgumentTypeError(f"must be a number in ({low}, {high}), got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def bounded_number(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number in the closed interval ``[low, high]`` (NaN, inf and
    ``1e308`` refused here, not later by the code the number reaches).

    >>> bounded_number(0, 36_500)("7.5")
    7.5
    >>> bounded_number(0, 36_500)("1e308")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number from 0 to 36,500, got '1e308'
    """
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:  # NaN fails too, and so do both infinities
            raise argparse.ArgumentTypeError(f"must be a number from {low:,} to {high:,}, "
                                             f"got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def interval_start(text: str) -> dt.datetime:
    """An argparse type: the ISO 8601 start of a data interval (UTC when no zone is given).

    >>> interval_start("2024-03-01")
    datetime.datetime(2024, 3, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be the ISO 8601 start of a data interval (e.g. 2024-03-01 or "
            f"2024-03-01T00:00:00+00:00), got {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def data_source(text: str) -> str:
    """An argparse type for ``--data``: a local file or directory (a ``file://`` URI too),
    or ``s3://bucket/prefix``. Returns the local path or the s3 URI as given; only its form
    is checked here.

    >>> data_source("s3://bucket/heldout/")
    's3://bucket/heldout/'
    >>> data_source("s3://")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be s3://bucket/prefix, got 's3://' (no bucket)
    """
    if "\x00" in text:
        raise argparse.ArgumentTypeError(f"must be {DATA_HELP}, got a name with a NUL character")
    if text.startswith("s3://"):
        bucket, _, _ = text[5:].partition("/")
        if not bucket:
            raise argparse.ArgumentTypeError(f"must be s3://bucket/prefix, got {text!r} (no bucket)")
        return text
    # A path that does not exist is not malformed: reading it fails (exit 1) naming it.
    return text[7:] if text.startswith("file://") else text


def refuse_nul(args: argparse.Namespace) -> None:
    """PostgreSQL text cannot hold NUL: refuse it in any argument before any work, by name.

    >>> refuse_nul(argparse.Namespace(name="toy\\x00", live="d"))
    Traceback (most recent call last):
    ...
    modelgate.cli.args.UsageError: name: must not contain a NUL character
    """
    for key, value in vars(args).items():
        if isinstance(value, str) and "\x00" in value:
            raise UsageError(f"{key.replace('_', '-')}: must not contain a NUL character")


def reclaim_logging() -> None:
    """Import Airflow and give the log back to the command: importing Airflow applies its
    logging config, whose root handler writes to stdout, where a command's output goes
    (``modelgate monitor run`` printed its log lines among its summary). Call it before the
    work that imports Airflow; the root logger's handlers and level are put back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import airflow.settings  # noqa: F401 - configures Airflow's logging, once per process

    root.handlers[:] = handlers
    root.setLevel(level)
