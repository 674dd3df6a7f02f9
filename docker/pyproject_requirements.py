"""Print the requirements of pyproject.toml for one extra, one per line.

The Dockerfiles install these before copying the source, so that changing modelgate's code
does not reinstall Airflow and the numeric stack (a separate, cached image layer). The
package itself is then installed with ``pip install ".[<extra>]"``, which finds every
requirement already satisfied.

Usage: ``python pyproject_requirements.py pyproject.toml cpu``
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path


def requirements(pyproject: Path, extra: str) -> list[str]:
    """The base dependencies followed by those of ``extra``."""
    project = tomllib.loads(pyproject.read_text())["project"]
    extras: dict[str, list[str]] = project.get("optional-dependencies", {})
    if extra not in extras:
        raise SystemExit(f"extra: expected one of {sorted(extras)}, got {extra!r}")
    return [*project["dependencies"], *extras[extra]]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: pyproject_requirements.py PYPROJECT EXTRA")
    print("\n".join(requirements(Path(argv[0]), argv[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
