"""The ``modelgate`` command keeps numpy off its AVX-512 sort on AMD Zen 4 only, and never
overrides the user's own ``NPY_DISABLE_CPU_FEATURES``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from modelgate import numpy_dispatch as nd

# First processor blocks of /proc/cpuinfo, shortened (flags cut to the ones that matter).
ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9454 48-Core Processor
flags\t\t: fpu sse2 avx avx2 avx512f avx512dq avx512_bf16

processor\t: 1
vendor_id\t: AuthenticAMD
"""
ZEN3 = ZEN4.replace(" avx512f avx512dq avx512_bf16", "").replace("model\t\t: 17", "model\t\t: 1")
ZEN5 = ZEN4.replace("cpu family\t: 25", "cpu family\t: 26")
INTEL = ZEN4.replace("AuthenticAMD", "GenuineIntel").replace("cpu family\t: 25", "cpu family\t: 6")


def test_only_zen4_is_detected() -> None:
    assert nd.is_zen4(ZEN4)
    assert not nd.is_zen4(ZEN3)  # family 19h without AVX-512
    assert not nd.is_zen4(ZEN5)
    assert not nd.is_zen4(INTEL)
    assert not nd.is_zen4("")
    assert not nd.is_zen4("vendor_id : AuthenticAMD\ncpu family : unknown\nflags : avx512f\n")


def test_the_users_setting_and_a_loaded_numpy_are_left_alone() -> None:
    assert nd.choose({}, ZEN4, numpy_loaded=False) == nd.AVX512_TARGETS
    assert nd.choose({nd.VARIABLE: "AVX512_SPR"}, ZEN4, numpy_loaded=False) is None
    assert nd.choose({nd.VARIABLE: ""}, ZEN4, numpy_loaded=False) is None
    assert nd.choose({}, ZEN4, numpy_loaded=True) is None
    assert nd.choose({}, INTEL, numpy_loaded=False) is None


def test_numpy_accepts_the_targets_and_drops_avx512_dispatch(tmp_path: Path) -> None:
    """With the variable set as the CLI sets it, numpy imports cleanly (unknown names of the
    other numpy generation only warn) and no AVX-512 dispatch target stays enabled."""
    code = ("import numpy as np\n"
            "from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__\n"
            "print(sorted(t for t in __cpu_dispatch__ if __cpu_features__.get(t) and "
            "(t.startswith('AVX512') or t == 'X86_V4')))\n")
    env = {"PATH": "/usr/bin:/bin", nd.VARIABLE: nd.AVX512_TARGETS}
    out = subprocess.run([sys.executable, "-c", code], env=env,
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    assert "Error" not in out.stderr, out.stderr
