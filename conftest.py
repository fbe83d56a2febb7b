"""Root conftest: registers the Firestore emulator fixtures (see fencecheck/pytest_plugin.py)."""

pytest_plugins = ["fencecheck.pytest_plugin"]
