"""Root conftest: registers the Firestore emulator fixtures (see fencecheck/suites/pytest_plugin.py)."""

pytest_plugins = ["fencecheck.suites.pytest_plugin"]
