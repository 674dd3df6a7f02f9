"""Folders shipped with modelgate, found the same way from a wheel and from a checkout.

The SQL migrations, the per-model policies and the DAG files live at the top of the
repository (``sql/``, ``policies/``, ``dags/``) and are installed as the data packages
``modelgate.sql``, ``modelgate.policies`` and ``modelgate.dags`` (``pyproject.toml``'s
``package-dir``). :func:`shipped_dir` asks the import system for that package first (an
installed wheel), then falls back to the repository folder (a checkout installed with
``pip install -e``, whose editable finder maps only the code packages).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Literal

Shipped = Literal["sql/migrations", "policies", "dags"]

_CHECKOUT = Path(__file__).resolve().parents[1]


def shipped_dir(name: Shipped) -> Path:
    """The folder ``name`` as installed with modelgate.

    Parameters
    ----------
    name : {"sql/migrations", "policies", "dags"}
        A folder at the top of the repository, shipped as package data.

    Returns
    -------
    Path
        The installed copy (``modelgate/<name>`` in site-packages) or, in a checkout, the
        repository's folder.

    Raises
    ------
    FileNotFoundError
        If neither exists (a broken install), naming both places looked at.

    Examples
    --------
    >>> (shipped_dir("policies") / "gss-high-income.yaml").is_file()
    True
    """
    top, _, rest = name.partition("/")
    try:
        # A data-only package (no __init__.py) is a namespace package: its __path__ lists
        # its folder (importlib.resources would hand back a MultiplexedPath instead).
        folders = list(importlib.import_module(f"modelgate.{top}").__path__)
    except ModuleNotFoundError:
        folders = []
    for folder in folders:
        if (Path(folder) / rest).is_dir():
            return Path(folder) / rest
    checkout = _CHECKOUT / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"modelgate's {name!r} folder is neither installed as package data "
                            f"(modelgate.{top}) nor in a checkout at {str(checkout)!r}")
