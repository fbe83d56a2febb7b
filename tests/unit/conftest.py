"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest

from fencecheck.plugin.registry import ENV_PLUGINS
from fencecheck.plugin.specs import ENV_SYSTEM
from fencecheck.suites import ENV_ARTIFACTS


def clear_environment(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Unset each variable for the test, restored after it. Set first, so monkeypatch records the value before
    and restores it: `delenv` of an unset variable records nothing, and a `--plugin` run writes
    $FENCECHECK_PLUGINS into this process's environment itself."""
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@pytest.fixture
def no_system_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No $FENCECHECK_PLUGINS and no $FENCECHECK_SYSTEM, whatever the run that started the tests set."""
    clear_environment(monkeypatch, ENV_PLUGINS, ENV_SYSTEM)


@pytest.fixture(autouse=True)
def no_gate_artifacts(monkeypatch: pytest.MonkeyPatch) -> None:
    """No $FENCECHECK_ARTIFACTS: a gate hands its suites' processes its artifacts directory, and these tests call
    the suites' writers on projects of their own (under tmp_path), whose evidence must stay there."""
    clear_environment(monkeypatch, ENV_ARTIFACTS)
