"""``python -m modelgate.cli``: the same command as the ``modelgate`` console script."""

import sys

from modelgate.cli import main

if __name__ == "__main__":  # importing the module (tests/layers/test_import_layers.py) runs nothing
    sys.exit(main())
