"""Lets the Node journal's tests import the shared test helpers (``tests/`` and ``tests/emulator/``).

This directory is outside pyproject's ``testpaths``, so a plain ``pytest`` never collects it: it needs Node and
``npm ci --prefix implementations/node-journal``, which CI does not run yet. Run it by path (see README.md).
"""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
for _path in (_ROOT / "tests", _ROOT / "tests" / "emulator"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
