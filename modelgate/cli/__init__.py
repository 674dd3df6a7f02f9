"""The ``modelgate`` command line: the edge above the pipelines and the ONNX adapters.

``main`` (the console script ``modelgate = modelgate.cli:main``, and ``python -m modelgate.cli``)
parses the arguments in :mod:`modelgate.cli.commands`; each family of commands has its own
module here (``models``, ``analysis``, ``drift``, ``monitor``, ``gc``...), and ``runs`` holds
the in-process evaluation run the ``evaluate`` command and the tests share. Nothing below
this package imports it (tests/layers/test_import_layers.py).
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit code (see :mod:`modelgate.cli.commands`)."""
    from modelgate.cli.commands import main as run

    return run(argv)
