"""Lazy public surfaces for the core packages (PEP 562 module ``__getattr__``).

``drift``, ``evaluation`` and ``reports`` list their public names in ``__all__`` and import
each from its module on first use, so importing one inner module (or the package, in a task
that needs little) does not load matplotlib, jinja2, POT or ONNX.

Examples
--------
>>> getattr_, dir_ = lazy_exports("json", {"loads_": ("decoder", "JSONDecoder")}, ["loads_"], {})
>>> getattr_("loads_").__name__
'JSONDecoder'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, names: Mapping[str, tuple[str, str]], public: Sequence[str],
                 namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : Mapping[str, tuple[str, str]]
        Public name -> (submodule, attribute).
    public : Sequence[str]
        The package's ``__all__``.
    namespace : dict
        The package's ``globals()``: a loaded name is kept there, so it loads once.
    """

    def getattr_(name: str) -> Any:
        """Import a public name from its module on first use and keep it in the package."""
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = names[name]
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *public})

    return getattr_, dir_
