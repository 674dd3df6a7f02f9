"""Keep numpy off its AVX-512 sort on AMD Zen 4, where that sort is several times slower.

numpy sorts float64 with x86-simd-sort, whose AVX-512 kernel stores with ``vcompresspd`` to
memory; Zen 4 runs that instruction form in microcode (AMD's Zen 4 optimization guide says to
avoid it), so on these CPUs numpy's AVX-512 sort is 4-6x slower than its AVX2 sort (1M float64:
52-74 ms against 11-18 ms, measured here; numpy/numpy#32690 and the JDK, which turned its
AVX-512 sort off on Zen 4, report the same). Sorting is most of ``modelgate drift``'s work
(exact Wasserstein-1 needs every column sorted), so the CLI asks numpy, before importing it,
to dispatch to its AVX2 kernels instead. Zen 4 splits 512-bit operations into two 256-bit ones,
so the other kernels lose nothing measurable.

Nothing is changed when numpy is already imported, when ``NPY_DISABLE_CPU_FEATURES`` is set
(the user's choice wins; set it to an empty string to keep AVX-512), or on any other CPU.
No numpy import here: the choice must be made before numpy loads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping

#: numpy's environment variable naming dispatch targets it must not use.
VARIABLE = "NPY_DISABLE_CPU_FEATURES"
#: The AVX-512 dispatch targets: numpy >= 2.4 names (X86_V4 ...) and older ones (AVX512_SKX ...).
#: numpy ignores, with an ImportWarning (hidden by default), names it does not dispatch to.
AVX512_TARGETS = ("X86_V4 AVX512_ICL AVX512_SPR "
                  "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL")
_ZEN4_FAMILY = 0x19  # family 19h: Zen 3 (no AVX-512) and Zen 4; Zen 5 is 1Ah


def is_zen4(cpuinfo: str) -> bool:
    """True when ``/proc/cpuinfo`` text describes an AMD family 19h CPU with AVX-512 (Zen 4).

    Examples
    --------
    >>> is_zen4("vendor_id\\t: AuthenticAMD\\ncpu family\\t: 25\\nflags\\t\\t: fpu avx2 avx512f\\n")
    True
    >>> is_zen4("vendor_id\\t: AuthenticAMD\\ncpu family\\t: 25\\nflags\\t\\t: fpu avx2\\n")
    False
    >>> is_zen4("vendor_id\\t: GenuineIntel\\ncpu family\\t: 6\\nflags\\t\\t: fpu avx512f\\n")
    False
    """
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            break  # the first processor's block is enough
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    try:
        family = int(fields.get("cpu family", ""))
    except ValueError:
        return False
    return (fields.get("vendor_id") == "AuthenticAMD" and family == _ZEN4_FAMILY
            and "avx512f" in fields.get("flags", "").split())


def choose(environ: Mapping[str, str], cpuinfo: str, numpy_loaded: bool) -> str | None:
    """The value to give ``NPY_DISABLE_CPU_FEATURES``, or None to leave it alone.

    Examples
    --------
    >>> zen4 = "vendor_id : AuthenticAMD\\ncpu family : 25\\nflags : avx2 avx512f\\n"
    >>> choose({}, zen4, numpy_loaded=False) == AVX512_TARGETS
    True
    >>> choose({VARIABLE: ""}, zen4, numpy_loaded=False) is None  # the user's choice wins
    True
    >>> choose({}, zen4, numpy_loaded=True) is None  # too late to matter
    True
    """
    if numpy_loaded or VARIABLE in environ or not is_zen4(cpuinfo):
        return None
    return AVX512_TARGETS


def prefer_avx2_sort(environ: MutableMapping[str, str] | None = None) -> bool:
    """Set ``NPY_DISABLE_CPU_FEATURES`` for this process on Zen 4; True when it was set.

    Call before anything imports numpy (the ``modelgate`` command does, first thing).
    """
    env = os.environ if environ is None else environ
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            cpuinfo = f.read(1 << 16)
    except OSError:  # not Linux
        return False
    value = choose(env, cpuinfo, numpy_loaded="numpy" in sys.modules)
    if value is None:
        return False
    env[VARIABLE] = value
    return True
