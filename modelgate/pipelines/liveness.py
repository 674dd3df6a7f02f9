"""Runs that say when they die: SIGTERM as an exception, and a heartbeat while a step works.

A run row must never stay ``running`` because its process was told to stop. SIGTERM (``kill``,
a container stop, Airflow killing a task) is turned into :class:`Terminated`, a
``BaseException`` like ``KeyboardInterrupt`` so no ``except Exception`` on the way swallows it;
the step wrapper records the run as failed and re-raises. A process that dies without a
chance to record anything (SIGKILL, a lost machine) stops beating: the next run of the same
model marks its row ``abandoned``.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

log = logging.getLogger("modelgate.liveness")

HEARTBEAT_S = 60.0


class Terminated(BaseException):
    """The process received SIGTERM while a run was in progress."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (main thread only).

    A handler installed before (Airflow's, which calls the operator's ``on_kill``) still runs
    first. Elsewhere than the main thread Python cannot install handlers and this is a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        if callable(previous):
            previous(signum, frame)
        raise Terminated("received SIGTERM")

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def heartbeat(beat: Callable[[], Any], *, every_s: float = HEARTBEAT_S) -> Iterator[None]:
    """Call ``beat()`` now and every ``every_s`` seconds from a daemon thread until the block ends.

    A failing beat is logged and retried at the next tick: losing a heartbeat must not fail
    the work it reports on.
    """
    stop = threading.Event()

    def loop() -> None:
        while True:
            try:
                beat()
            except Exception as exc:  # noqa: BLE001 - see docstring
                log.warning("heartbeat failed: %s: %s", type(exc).__name__, exc)
            if stop.wait(every_s):
                return

    thread = threading.Thread(target=loop, name="modelgate-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
