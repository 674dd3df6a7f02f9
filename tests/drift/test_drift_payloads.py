"""The ``.npz`` payload loader refuses every broken payload with one error type.

Each case breaks a real archive in one way that zipfile or zlib reports with its own
exception (checked here against the standard library itself), and the loader must turn
it into ``ValueError("payload is not <what>: ...")``, the error the stores catch.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import numpy as np
import pytest
from modelgate.drift.payloads import load_arrays

WHAT = "a test payload"


def _archive(*, compressed: bool) -> bytes:
    buf = io.BytesIO()
    save = np.savez_compressed if compressed else np.savez
    save(buf, a=np.arange(50.0), b=np.array(["x", "yy"]))
    return buf.getvalue()


def _central_entry(payload: bytes) -> int:
    """Offset of the first central-directory entry (signature ``PK\\x01\\x02``)."""
    return payload.index(b"PK\x01\x02")


def _unsupported_method(payload: bytes) -> bytes:
    """The first entry's compression method (central directory, offset 10) set to 99."""
    at = _central_entry(payload) + 10
    return payload[:at] + struct.pack("<H", 99) + payload[at + 2:]


def _encrypted_flag(payload: bytes) -> bytes:
    """The first entry's general-purpose flag (central directory, offset 8) marked encrypted."""
    at = _central_entry(payload) + 8
    (flags,) = struct.unpack("<H", payload[at:at + 2])
    return payload[:at] + struct.pack("<H", flags | 0x1) + payload[at + 2:]


def _bad_deflate_stream(payload: bytes) -> bytes:
    """The first entry's deflate stream opened with a reserved block type (``BTYPE=11``)."""
    name_len, extra_len = struct.unpack("<HH", payload[26:30])
    at = 30 + name_len + extra_len
    return payload[:at] + bytes([0x07]) + payload[at + 1:]


BROKEN = {
    "unsupported-compression": (_unsupported_method, False, NotImplementedError),
    "encrypted-entry": (_encrypted_flag, False, RuntimeError),
    "corrupt-deflate-stream": (_bad_deflate_stream, True, zlib.error),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_each_broken_archive_raises_its_own_library_error(case: str) -> None:
    """The oracle: zipfile itself, reading the broken archive, raises the expected type."""
    breaker, compressed, library_error = BROKEN[case]
    broken = breaker(_archive(compressed=compressed))
    with pytest.raises(library_error), zipfile.ZipFile(io.BytesIO(broken)) as z:
        z.read(z.namelist()[0])


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_a_broken_archive_is_a_value_error_naming_the_payload(case: str) -> None:
    breaker, compressed, library_error = BROKEN[case]
    with pytest.raises(ValueError, match=f"^payload is not {WHAT}: ") as caught:
        load_arrays(breaker(_archive(compressed=compressed)), WHAT)
    assert isinstance(caught.value.__cause__, library_error)


@pytest.mark.parametrize("compressed", [False, True], ids=["stored", "deflated"])
def test_an_intact_archive_loads_every_array(compressed: bool) -> None:
    arrays = load_arrays(_archive(compressed=compressed), WHAT)
    assert sorted(arrays) == ["a", "b"]
    assert arrays["a"].tolist() == list(np.arange(50.0))
    assert arrays["b"].tolist() == ["x", "yy"]


def test_single_byte_corruptions_load_or_raise_value_error() -> None:
    """A seeded sweep of one-byte corruptions of a compressed archive: each either loads
    (a byte zip does not check) or raises the loader's ValueError, nothing else."""
    payload = _archive(compressed=True)
    rng = np.random.default_rng(7)
    for _ in range(600):
        broken = bytearray(payload)
        broken[int(rng.integers(len(broken)))] = int(rng.integers(256))
        try:
            load_arrays(bytes(broken), WHAT)
        except ValueError as exc:
            assert str(exc).startswith(f"payload is not {WHAT}: ")
