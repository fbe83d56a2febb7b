"""Systems from outside fencecheck join the registry (fencecheck/plugin/registry.py): by an entry point of the
group `fencecheck.systems`, by $FENCECHECK_PLUGINS, or by `--plugin module:attribute` on the command line, which
the gate hands on to its suites' processes. A name two registrations share, and a `--plugin` that names no
SystemPlugin, are clear errors (no emulator: the registry and the CLI's argument handling only)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import fencecheck.cli.main as cli
import fencecheck.plugin.registry as plugins
from fencecheck.errors import PluginRegistrationError, SystemNotFoundError
from fencecheck.plugin.registry import ENTRY_POINT_GROUP, ENV_PLUGINS, SYSTEM_NAMES, plugin
from fencecheck.systems.journal.plugin import JOURNAL
from tests.unit.conftest import clear_environment
from tests.unit.test_cli_gate import FakeEmulator  # the gate's emulator, for a gate run with fake suites

TOY = attrs.evolve(JOURNAL, name="toy")
OTHER_TOY = attrs.evolve(JOURNAL, name="toy")
SPARE = attrs.evolve(JOURNAL, name="spare")
NOT_A_PLUGIN = object()
HERE = f"{__name__}:TOY"


@pytest.fixture(autouse=True)
def _clean_environment(no_system_environment: None, monkeypatch: pytest.MonkeyPatch) -> None:
    clear_environment(monkeypatch, "FIRESTORE_EMULATOR_HOST")  # the gate would write its emulator's host


def _entry_points(monkeypatch: pytest.MonkeyPatch, *pairs: tuple[str, str]) -> None:
    """Installed distributions declare these (name, "module:attribute") entry points of the group."""
    entries = importlib.metadata.EntryPoints(
        importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in pairs)

    def entry_points(**selection: Any) -> importlib.metadata.EntryPoints:
        assert selection == {"group": ENTRY_POINT_GROUP}
        return entries

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


def test_with_nothing_outside_the_registry_is_the_built_in_one():
    assert tuple(SYSTEM_NAMES) == ("journal", "lantern", "gateway")
    assert SYSTEM_NAMES == ("journal", "lantern", "gateway")


def test_an_entry_point_adds_a_system_after_the_built_in_ones(monkeypatch):
    _entry_points(monkeypatch, ("toy", HERE))
    assert tuple(SYSTEM_NAMES) == ("journal", "lantern", "gateway", "toy")
    assert "toy" in SYSTEM_NAMES and plugin("toy") is TOY


def test_entry_points_are_seen_afresh_once_the_real_ones_are_back(monkeypatch):
    _entry_points(monkeypatch, ("toy", HERE))
    assert "toy" in SYSTEM_NAMES
    monkeypatch.undo()
    assert "toy" not in SYSTEM_NAMES


def test_an_entry_point_clashing_with_a_built_in_system_names_both(monkeypatch):
    _entry_points(monkeypatch, ("lantern", HERE))
    with pytest.raises(PluginRegistrationError) as raised:
        plugin("journal")
    message = str(raised.value)
    assert "two systems are called 'lantern'" in message
    assert "the built-in one (fencecheck.systems.lantern.plugin:LANTERN)" in message
    assert f"the entry point lantern = {HERE!r}" in message and f"(group {ENTRY_POINT_GROUP!r})" in message


def test_two_entry_points_of_one_name_are_an_error_naming_both(monkeypatch):
    _entry_points(monkeypatch, ("toy", HERE), ("toy", f"{__name__}:OTHER_TOY"))
    with pytest.raises(PluginRegistrationError) as raised:
        list(SYSTEM_NAMES)
    message = str(raised.value)
    assert "two systems are called 'toy'" in message
    assert f"the entry point toy = {HERE!r}" in message and f"the entry point toy = '{__name__}:OTHER_TOY'" in message


def test_an_entry_point_without_a_colon_says_what_was_expected(monkeypatch):
    _entry_points(monkeypatch, ("toy", __name__))
    with pytest.raises(PluginRegistrationError) as raised:
        plugin("toy")
    assert str(raised.value) == (
        f"the entry point toy = {__name__!r} (group 'fencecheck.systems'): expected module:attribute naming a "
        "fencecheck.plugin.SystemPlugin object (e.g. mypackage.plugin:MY_SYSTEM).")


def test_a_pytest_run_with_a_bad_environment_entry_stops_with_a_usage_error_naming_it(tmp_path):
    """The suites read the registry when pytest is configured: a $FENCECHECK_PLUGINS entry naming nothing is
    pytest's usage error (exit 4) with the registry's message, not a traceback out of an option's help."""
    test = tmp_path / "test_nothing.py"
    test.write_text("def test_nothing():\n    assert True\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider", "-p",
         "fencecheck.suites.pytest_plugin", "--rootdir", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, ENV_PLUGINS: "fencecheck.errors:MISSING"})
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    assert ("ERROR: $FENCECHECK_PLUGINS entry 'fencecheck.errors:MISSING': module fencecheck.errors has no "
            "attribute 'MISSING'") in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_a_bad_environment_entry_is_named_as_such(monkeypatch):
    monkeypatch.setenv(ENV_PLUGINS, f"{__name__}:MISSING")
    with pytest.raises(PluginRegistrationError) as raised:
        list(SYSTEM_NAMES)
    assert str(raised.value) == (
        f"$FENCECHECK_PLUGINS entry '{__name__}:MISSING': module {__name__} has no attribute 'MISSING'; expected "
        "module:attribute naming a fencecheck.plugin.SystemPlugin object.")


def test_an_entry_point_naming_another_object_is_a_clear_error(monkeypatch):
    _entry_points(monkeypatch, ("toy", f"{__name__}:SPARE"))
    with pytest.raises(SystemNotFoundError) as raised:
        plugin("toy")
    assert str(raised.value) == (f"system 'toy' is registered as {__name__}:SPARE, which is the SystemPlugin called "
                                 "'spare': expected the SystemPlugin whose .name is 'toy'; fix the registration.")


def test_an_unknown_system_says_how_one_from_outside_is_registered():
    with pytest.raises(SystemNotFoundError) as raised:
        plugin("ledger")
    assert str(raised.value) == (
        "no system called 'ledger': expected one of journal, lantern, gateway. (a system from outside fencecheck is "
        "registered by an entry point of the group 'fencecheck.systems', by --plugin module:attribute or by "
        "$FENCECHECK_PLUGINS.)")


def test_the_environment_variable_registers_plugins_by_their_own_name(monkeypatch):
    monkeypatch.setenv(ENV_PLUGINS, f"{HERE}, {__name__}:SPARE")
    assert tuple(SYSTEM_NAMES) == ("journal", "lantern", "gateway", "toy", "spare")
    assert plugin("spare") is SPARE


def test_the_same_plugin_by_entry_point_and_environment_is_registered_once(monkeypatch):
    _entry_points(monkeypatch, ("toy", HERE))
    monkeypatch.setenv(ENV_PLUGINS, HERE)
    assert tuple(SYSTEM_NAMES) == ("journal", "lantern", "gateway", "toy")


def test_an_entry_point_and_the_environment_naming_two_plugins_of_one_name_clash(monkeypatch):
    _entry_points(monkeypatch, ("toy", HERE))
    monkeypatch.setenv(ENV_PLUGINS, f"{__name__}:OTHER_TOY")
    with pytest.raises(PluginRegistrationError) as raised:
        plugin("toy")
    assert str(raised.value) == (
        f"two systems are called 'toy': the entry point toy = {HERE!r} (group 'fencecheck.systems') and the "
        f"plug-in '{__name__}:OTHER_TOY' of --plugin/$FENCECHECK_PLUGINS; remove or rename one of them.")


def test_add_to_environment_exports_the_plugin_for_processes_started_later(monkeypatch):
    env: dict[str, str] = {ENV_PLUGINS: f"{__name__}:SPARE"}
    assert plugins.add_to_environment(HERE, env) is TOY
    assert env == {ENV_PLUGINS: f"{__name__}:SPARE,{HERE}"}
    assert plugins.add_to_environment(HERE, env) is TOY  # once is enough
    assert env == {ENV_PLUGINS: f"{__name__}:SPARE,{HERE}"}


# --- --plugin on the command line ------------------------------------------------------------------------


@pytest.mark.parametrize("where, message", [
    ("examples.cas_register.plugin",
     "--plugin 'examples.cas_register.plugin': expected module:attribute naming a fencecheck.plugin.SystemPlugin "
     "object (e.g. mypackage.plugin:MY_SYSTEM)."),
    ("no_such_package_here.plugin:X",
     "--plugin 'no_such_package_here.plugin:X': module 'no_such_package_here.plugin' cannot be imported "
     "(ModuleNotFoundError: No module named 'no_such_package_here'); expected module:attribute naming a "
     "fencecheck.plugin.SystemPlugin object, with the module on sys.path (installed, or under the working "
     "directory)."),
    (f"{__name__}:MISSING",
     f"--plugin '{__name__}:MISSING': module {__name__} has no attribute 'MISSING'; expected module:attribute "
     "naming a fencecheck.plugin.SystemPlugin object."),
    (f"{__name__}:NOT_A_PLUGIN",
     f"--plugin '{__name__}:NOT_A_PLUGIN' is a object, not a SystemPlugin; expected module:attribute naming a "
     "fencecheck.plugin.SystemPlugin object."),
    ("fencecheck.systems.journal.plugin:JOURNAL",
     "two systems are called 'journal': the built-in one (fencecheck.systems.journal.plugin:JOURNAL) and the plug-in "
     "'fencecheck.systems.journal.plugin:JOURNAL' of --plugin/$FENCECHECK_PLUGINS; rename the outside one (a system's "
     "name is its entry point's name and its plug-in's .name)."),
])
@pytest.mark.parametrize("command", [["check", "history.json"], ["replay", "x.py"], ["gate"]])
def test_a_bad_plugin_is_a_usage_error_saying_what_was_expected(capsys, monkeypatch, command, where, message):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may run with a bad --plugin")

    monkeypatch.setattr(cli, "emulator_from_environment", refuse)
    assert cli.main([*command, "--plugin", where]) == 2
    assert capsys.readouterr().err == f"fencecheck: {message}\n"
    assert ENV_PLUGINS not in __import__("os").environ


def test_the_gate_hands_a_plugin_to_its_suites_processes(tmp_path, monkeypatch, capsys):
    calls: list[dict[str, Any]] = []

    def run_suite(command: list[str], env: dict[str, str], **kwargs: Any) -> int:
        calls.append({"command": command, "env": env})
        junit = next(arg.partition("=")[2] for arg in command if arg.startswith("--junitxml="))
        Path(junit).write_text('<testsuites><testsuite tests="1" failures="0" errors="0" skipped="0">'
                               '<testcase classname="t" name="t"/></testsuite></testsuites>')
        return 0

    monkeypatch.setattr(cli, "emulator_from_environment", lambda **kwargs: FakeEmulator())
    monkeypatch.setattr(cli.gate_process, "run_suite", run_suite)
    code = cli.main(["gate", "--suite", "rules", "--plugin", HERE, "--workers", "1", "--profile", "ci",
                     "--artifacts", str(tmp_path / "artifacts")])
    assert code == 0, capsys.readouterr()
    (call,) = calls
    assert call["env"][ENV_PLUGINS] == HERE
    # the suite's process reads the registry from that environment and finds the plug-in by its name
    monkeypatch.setenv(ENV_PLUGINS, call["env"][ENV_PLUGINS])
    assert plugin("toy") is TOY
