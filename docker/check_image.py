"""Build-time check of a modelgate image; the Dockerfiles run it as their last install step.

Fails the build when the image holds both ONNX Runtime builds (or the wrong one), when the
SQL migrations cannot be found where ``modelgate.store.db`` looks for them, or when the
Celery executor's packages are missing. In the GPU image it also checks, without needing a
GPU, that the CUDA major version onnxruntime-gpu was built for is the base image's, and
that its CUDA provider library finds every CUDA and cuDNN library it links to: with a
mismatch, ONNX Runtime would list ``CUDAExecutionProvider`` yet quietly run on the CPU.

Usage: ``python check_image.py cpu``, ``python check_image.py gpu`` (CUDA 13) or
``python check_image.py gpu-cu12`` (CUDA 12): the pyproject extra the image installed.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.metadata as md
import os
import re
import sys
from pathlib import Path

ORT_DISTRIBUTIONS = {"cpu": "onnxruntime", "gpu": "onnxruntime-gpu", "gpu-cu12": "onnxruntime-gpu"}
ORT_PROVIDER = {"cpu": "CPUExecutionProvider", "gpu": "CUDAExecutionProvider",
                "gpu-cu12": "CUDAExecutionProvider"}
#: The CUDA major each GPU extra's onnxruntime-gpu wheels are built for (pyproject.toml).
CUDA_MAJOR = {"gpu": 13, "gpu-cu12": 12}
_CUDA_RUNTIME_REQ = re.compile(r"^nvidia-cuda-runtime(?:-cu(\d+))?\s*~=\s*(\d+)")


def cuda_major_required(requires: list[str]) -> int | None:
    """The CUDA major version named by onnxruntime-gpu's ``cuda`` extra, if it names one.

    >>> cuda_major_required(['numpy', 'nvidia-cuda-runtime-cu12~=12.0; extra == "cuda"'])
    12
    >>> cuda_major_required(['nvidia-cuda-runtime~=13.0; extra == "cuda"'])
    13
    >>> cuda_major_required(['numpy>=1.21']) is None
    True
    """
    for requirement in requires:
        match = _CUDA_RUNTIME_REQ.match(requirement.strip())
        if match:
            return int(match[1] or match[2])
    return None


def _installed() -> set[str]:
    return {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower() for d in md.distributions()}


def _cuda_problems(variant: str) -> list[str]:
    found: list[str] = []
    base = os.environ.get("CUDA_VERSION", "")
    wanted = cuda_major_required(md.requires("onnxruntime-gpu") or [])
    if wanted is not None and wanted != CUDA_MAJOR[variant]:
        found.append(f"extra {variant!r} is for CUDA {CUDA_MAJOR[variant]}, but onnxruntime-gpu "
                     f"{md.version('onnxruntime-gpu')} is built for CUDA {wanted}")
    if not base:
        found.append("CUDA_VERSION is not set: the base is not an nvidia/cuda image")
    elif wanted is not None and int(base.split(".")[0]) != wanted:
        found.append(f"onnxruntime-gpu {md.version('onnxruntime-gpu')} is built for CUDA "
                     f"{wanted}, the base image has CUDA {base}")
    import onnxruntime

    capi = Path(onnxruntime.__file__).parent / "capi"
    try:  # the provider library needs the shared bridge loaded globally first
        ctypes.CDLL(str(capi / "libonnxruntime_providers_shared.so"), mode=ctypes.RTLD_GLOBAL)
        ctypes.CDLL(str(capi / "libonnxruntime_providers_cuda.so"))
    except OSError as exc:
        # The driver (libcuda) comes from the host at run time, not from the image.
        if "libcuda.so" not in str(exc):
            found.append(f"the CUDA provider library does not load: {exc}")
    return found


def problems(variant: str) -> list[str]:
    """What is wrong with this environment for ``variant`` (empty when nothing is)."""
    found: list[str] = []
    installed = _installed()
    wanted = ORT_DISTRIBUTIONS[variant]
    if wanted not in installed:
        found.append(f"{wanted} is not installed")
    for dist in sorted(set(ORT_DISTRIBUTIONS.values()) - {wanted}):
        if dist in installed:
            found.append(f"{dist} is installed in the {variant} image (exactly one ONNX Runtime)")
    import onnxruntime

    if ORT_PROVIDER[variant] not in onnxruntime.get_available_providers():
        found.append(f"onnxruntime offers {onnxruntime.get_available_providers()}, "
                     f"not {ORT_PROVIDER[variant]}")
    if variant in CUDA_MAJOR:
        found.extend(_cuda_problems(variant))
    from modelgate.store.db import MIGRATIONS_DIR, load_migrations

    if not load_migrations():
        found.append(f"no SQL migrations in {MIGRATIONS_DIR}")
    for module in ("airflow.providers.celery", "redis", "modelgate.cli"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            found.append(f"cannot import {module}: {exc}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ORT_DISTRIBUTIONS:
        raise SystemExit(f"usage: check_image.py {{{'|'.join(ORT_DISTRIBUTIONS)}}}, got {argv!r}")
    found = problems(argv[0])
    for line in found:
        print(f"image check: {line}", file=sys.stderr)
    if not found:
        print(f"image check: {argv[0]} image OK")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
