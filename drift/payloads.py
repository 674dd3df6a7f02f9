"""Reading the ``.npz`` payloads the drift sketches are stored as (no pickle)."""

from __future__ import annotations

import io
import zipfile
import zlib
from typing import Any

import numpy as np
from numpy.typing import NDArray


def load_arrays(payload: bytes, what: str) -> dict[str, NDArray[Any]]:
    """Every array of an ``.npz`` payload, by name.

    Raises
    ------
    ValueError
        ``"payload is not <what>: ..."`` if the payload is empty, truncated, not an archive,
        a lone ``.npy`` array, or an archive whose entries cannot be read (a bad checksum or
        compressed stream, an unsupported compression method, an entry marked encrypted).

    Examples
    --------
    >>> buf = io.BytesIO()
    >>> np.savez(buf, a=np.arange(2))
    >>> load_arrays(buf.getvalue(), "a test payload")["a"].tolist()
    [0, 1]
    >>> load_arrays(b"", "a test payload")
    Traceback (most recent call last):
    ...
    ValueError: payload is not a test payload: No data left in file
    """
    try:
        loaded = np.load(io.BytesIO(payload), allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            # a lone .npy array loads as an ndarray, which is no context manager (TypeError)
            raise ValueError("a single .npy array, not an .npz archive")
        with loaded as z:
            return {k: z[k] for k in z.files}
    except (ValueError, EOFError, zipfile.BadZipFile, zlib.error, RuntimeError) as exc:
        # what numpy, zipfile and zlib raise for broken bytes in memory (no file, so no
        # OSError): empty bytes EOFError, a truncated archive BadZipFile, a broken deflate
        # stream zlib.error, an entry flagged encrypted RuntimeError and an unknown compression
        # method NotImplementedError, a RuntimeError too
        raise ValueError(f"payload is not {what}: {exc}") from exc
