"""Concept drift on a model's error stream: river's ADWIN behind a tiny, validated contract.

The contract follows river's detectors: :meth:`AdwinDetector.update` one value, a read-only
:attr:`AdwinDetector.drift_detected`, :meth:`AdwinDetector.reset`; plus a vectorised
:meth:`AdwinDetector.update_many` that returns change points, and ``to_bytes``/``from_bytes``
so the window carries over between scheduled runs (a change that builds up over several
runs is still caught).

Semantics are exactly river's: after a detection, river keeps the recent sub-window until the
next update, which then empties the window. The change points of :meth:`update_many` are the
indices where ``river.drift.ADWIN`` run element by element reports ``drift_detected``.

References
----------
.. [1] Bifet, Gavalda (2007). Learning from time-changing data with adaptive windowing. SDM.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from river.drift import ADWIN

from modelgate.records import finite_or_none

__all__ = ["AdwinDetector", "ChangePoint"]

_FORMAT = "modelgate.drift.adwin/1"


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """One ADWIN detection.

    Attributes
    ----------
    position : int
        0-based global index, across runs, of the element whose update reported the drift.
    error_rate_before : float
        Mean of the older sub-window that ADWIN dropped at this detection: the elements from the
        start of its window (the last reset) up to the cut.
    error_rate_after : float
        Mean of the recent sub-window ADWIN kept, from the cut to ``position`` inclusive.
    n_before : int
        Length of the dropped sub-window.
    n_after : int
        Length of the kept sub-window.
    """

    position: int
    error_rate_before: float
    error_rate_after: float
    n_before: int
    n_after: int

    def to_record(self) -> dict[str, Any]:
        """The detection as a ``concept_drift_change`` row (the caller adds the model version,
        the run and the event time), with the sub-window lengths.

        Returns
        -------
        dict
            ``stream_position``, ``error_rate_before``, ``error_rate_after``, ``n_before`` and
            ``n_after``.

        Examples
        --------
        >>> ChangePoint(1023, 0.25, 0.35, 1000, 24).to_record()["stream_position"]
        1023
        """
        return {"stream_position": self.position,
                "error_rate_before": finite_or_none(self.error_rate_before),
                "error_rate_after": finite_or_none(self.error_rate_after),
                "n_before": self.n_before, "n_after": self.n_after}


class AdwinDetector:
    """ADWIN change detector over a stream of errors (e.g. 0/1 misclassifications).

    Parameters
    ----------
    delta : float, default 0.002
        Confidence of the cut test, in (0, 1); smaller means fewer false alarms.
    clock : int, default 32
        How often (in elements) river checks for a cut.
    max_buckets : int, default 5
        Buckets per row of river's exponential histogram.
    min_window_length : int, default 5
        Minimum length of each sub-window at a cut.
    grace_period : int, default 10
        Elements before the first check.

    Raises
    ------
    ValueError
        If a parameter is outside its range (river itself does not check).

    Examples
    --------
    >>> rng = np.random.default_rng(7)
    >>> errors = np.r_[rng.random(2000) < 0.05, rng.random(2000) < 0.5].astype(float)
    >>> det = AdwinDetector()
    >>> [c.position > 2000 for c in det.update_many(errors)]
    [True]
    """

    __slots__ = ("_adwin", "_n_seen")

    def __init__(
        self,
        *,
        delta: float = 0.002,
        clock: int = 32,
        max_buckets: int = 5,
        min_window_length: int = 5,
        grace_period: int = 10,
    ) -> None:
        if not (isinstance(delta, int | float) and 0.0 < delta < 1.0):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        for name, value in (
            ("clock", clock),
            ("max_buckets", max_buckets),
            ("min_window_length", min_window_length),
            ("grace_period", grace_period),
        ):
            if not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self._adwin = ADWIN(
            delta=float(delta),
            clock=int(clock),
            max_buckets=int(max_buckets),
            min_window_length=int(min_window_length),
            grace_period=int(grace_period),
        )
        self._n_seen = 0

    @property
    def drift_detected(self) -> bool:
        """Whether the last update reported a drift."""
        return bool(self._adwin.drift_detected)

    @property
    def n_seen(self) -> int:
        """Elements seen so far, across persisted runs (the next element's global position)."""
        return self._n_seen

    @property
    def width(self) -> int:
        """Current window length."""
        return int(self._adwin.width)

    @property
    def estimation(self) -> float:
        """Mean of the current window."""
        return float(self._adwin.estimation)

    def update(self, x: float) -> bool:
        """Add one value; return whether it made ADWIN report a drift.

        Raises
        ------
        ValueError
            If ``x`` is not finite.
        """
        if not math.isfinite(x):
            raise ValueError(f"x must be finite, got {x!r}")
        self._adwin.update(float(x))
        self._n_seen += 1
        return self.drift_detected

    def reset(self) -> None:
        """Forget the window and the position count."""
        self._adwin = self._adwin.clone()
        self._n_seen = 0

    def update_many(
        self, errors: ArrayLike, *, start_position: int | None = None
    ) -> tuple[ChangePoint, ...]:
        """Feed a batch of errors; return the drifts found, in order.

        Parameters
        ----------
        errors : array_like of float, 1-D
            The error stream of this run, finite values.
        start_position : int, optional
            Global position of ``errors[0]``. Defaults to :attr:`n_seen`, the count kept in the
            persisted state; pass it to number positions when the state is not persisted.

        Returns
        -------
        tuple of ChangePoint

        Raises
        ------
        ValueError
            If ``errors`` is not 1-D or not finite, or ``start_position`` is negative.
        """
        arr = np.asarray(errors, dtype=np.float64)
        if arr.ndim != 1 or not np.isfinite(arr).all():
            raise ValueError(
                f"errors must be a 1-D array of finite values, got shape {arr.shape!r}"
            )
        if start_position is not None:
            if not isinstance(start_position, int | np.integer) or start_position < 0:
                raise ValueError(f"start_position must be an integer >= 0, got {start_position!r}")
            self._n_seen = int(start_position)
        points = self._scan_all(arr)
        self._n_seen += arr.size
        return points

    def _scan_all(self, arr: np.ndarray) -> tuple[ChangePoint, ...]:
        adw = self._adwin
        # Window (length, sum) before this batch; river empties it on the next update after a
        # detection, so a detection persisted at the end of the previous run means empty.
        width, total = (0, 0.0) if adw.drift_detected else (int(adw.width), float(adw.total))
        seg_start = 0
        points = []
        for i in _detections(adw, arr.tolist()):
            n_all = width + (i + 1 - seg_start)
            s_all = total + float(arr[seg_start : i + 1].sum())
            n_after, s_after = int(adw.width), float(adw.total)
            n_before = n_all - n_after
            points.append(
                ChangePoint(
                    position=self._n_seen + i,
                    error_rate_before=(s_all - s_after) / n_before if n_before else math.nan,
                    error_rate_after=s_after / n_after if n_after else math.nan,
                    n_before=n_before,
                    n_after=n_after,
                )
            )
            width, total, seg_start = 0, 0.0, i + 1
        return tuple(points)

    def to_bytes(self) -> bytes:
        """Serialise the detector state (pickle of the river object and the position count).

        Only load the result with :meth:`from_bytes` from storage that this pipeline alone
        writes: unpickling runs code, so untrusted bytes must never reach it.
        """
        return pickle.dumps((_FORMAT, self._adwin, self._n_seen), protocol=5)

    @classmethod
    def from_bytes(cls, payload: bytes) -> AdwinDetector:
        """Restore a detector written by :meth:`to_bytes` (trusted bytes only, see there).

        Raises
        ------
        ValueError
            If the payload is not a detector state.
        """
        obj: Any = pickle.loads(payload)  # noqa: S301 - trusted store, see to_bytes
        if not (
            isinstance(obj, tuple)
            and len(obj) == 3
            and obj[0] == _FORMAT
            and isinstance(obj[1], ADWIN)
        ):
            raise ValueError(f"payload must be an AdwinDetector state in format {_FORMAT!r}")
        det = cls.__new__(cls)
        det._adwin, det._n_seen = obj[1], int(obj[2])
        return det


def _detections(adw: ADWIN, xs: list[float]) -> Iterator[int]:
    """Yield the indices where ``adw`` reports a drift, with river's own update semantics.

    Hot loop: after any detection the next element goes through the public ``ADWIN.update``
    (which applies river's reset); in between, we call the bound Cython ``_helper.update``
    directly, which is what ``ADWIN.update`` does when no drift is pending. That skips a
    Python-level method call and a property read per element (about 3x faster).
    """
    it = enumerate(xs)
    for i, x in it:
        adw.update(x)
        if adw.drift_detected:
            yield i
            continue
        fast = adw._helper.update
        for j, y in it:
            if fast(y):
                adw._drift_detected = True
                yield j
                break
