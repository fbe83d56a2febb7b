"""Lets the Node journal's tests import the shared test helpers (``tests/`` and ``tests/emulator/``).

Collected by ``./run tests`` (pyproject's ``testpaths``), which installs Node and runs ``npm ci`` here first.
Without ``node`` or ``node_modules`` the tests fail with the command that installs them, never skip.
"""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]
for _path in (_ROOT / "tests", _ROOT / "tests" / "emulator"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
