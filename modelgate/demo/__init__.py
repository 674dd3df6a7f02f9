"""``modelgate demo`` (the optional ``[demo]`` extra): the whole platform on real data.

:mod:`modelgate.demo.run` runs it, :mod:`modelgate.demo.data` builds the models and data,
:mod:`modelgate.demo.drift` replays live intervals and :mod:`modelgate.demo.story` tells what
happened. An edge like the CLI: nothing below imports it (tests/layers/test_import_layers.py).
"""

from modelgate.demo.run import log_to_file, run_demo

__all__ = ["log_to_file", "run_demo"]
