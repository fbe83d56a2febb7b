"""`<system>:<module>` names system and implementation explicitly, for every registered system
(fencecheck/plugin/specs.py): the lantern's and the gateway's `resolve` take a user's module with their operations, the
journal's as it always did (bare module specs still work) (a system from outside fencecheck:
tests/unit/test_example_plugin.py); `<system>:exec:`
is the journal's only; a spec no system claims fails with the spellings listed (no emulator: specs are resolved,
no call is made)."""

from __future__ import annotations

import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

import fencecheck.cli.main as cli
import fencecheck.cli.replay as replay
import reference.gateway
import reference.lantern
from fencecheck.errors import SystemNotFoundError, UsageError
from fencecheck.plugin.registry import plugin
from fencecheck.plugin.specs import (
    ENV_SYSTEM,
    configured_implementation,
    module_of_spec,
    resolve_implementation,
    spellings,
    system_of_spec,
)
from fencecheck.runners.counterexamples import write_counterexample
from fencecheck.systems.gateway.plugin import FUNCTIONS as GATEWAY_FUNCTIONS
from fencecheck.systems.gateway.plugin import GATEWAY, REFERENCE_GATEWAY
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE, ReferenceAPI
from fencecheck.systems.lantern.plugin import FUNCTIONS as LANTERN_FUNCTIONS
from fencecheck.systems.lantern.plugin import LANTERN
from model.lantern import CreateVenue, Light

VARIANT = "known_bad.journal:earlier-clock-finishes"


pytestmark = pytest.mark.usefixtures("no_system_environment")


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> str:
    """A module of the user's, importable as `name` (it lives in tmp_path, put on sys.path for the test)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _reexport(module: str, names: list[str]) -> str:
    return f"from {module} import {', '.join(names)}  # noqa: F401\n"


@pytest.mark.parametrize("spec, system", [
    ("journal:my_journal", "journal"),
    ("journal:exec:node main.js", "journal"),
    ("lantern:my_pkg.lantern_impl", "lantern"),
    ("gateway:my_pkg.gateway_impl", "gateway"),
    ("gateway:exec:node main.js", "gateway"),  # claimed, and refused by the gateway (below)
    ("reference.lantern", "lantern"),
    ("known_bad.gateway:x", "gateway"),
    ("tests.fakes.ordinary_journal", "journal"),  # a bare module: the journal's, since its resolve takes it
    ("", None),
])
def test_the_system_of_a_spec(spec, system):
    assert system_of_spec(spec) == system


def test_a_lantern_module_of_the_users_is_taken_with_its_operations(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "my_lantern", _reexport("reference.lantern",
                                                                  [*LANTERN_FUNCTIONS, "LanternError"]))
    spec = f"lantern:{name}"
    found = configured_implementation(LANTERN, {ENV_SYSTEM: spec})
    assert (found.name, found.api.__name__, found.error) == (spec, name, reference.lantern.LanternError)
    assert LANTERN.spec_of(found) == spec and LANTERN.describe_impl(found) == spec
    assert configured_implementation(JOURNAL, {ENV_SYSTEM: spec}) is REFERENCE  # the other systems: their reference


def test_a_gateway_module_of_the_users_is_taken_with_its_operations(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "my_gateway", _reexport("reference.gateway",
                                                                  [*GATEWAY_FUNCTIONS.values(), "GatewayError"]))
    found = resolve_implementation(f"gateway:{name}")
    assert (found.name, found.api.__name__, found.error) == (f"gateway:{name}", name, reference.gateway.GatewayError)
    assert GATEWAY.resolve("gateway:reference.gateway") is REFERENCE_GATEWAY
    assert GATEWAY.resolve("gateway:known_bad.gateway:unfenced_release_after_reconciliation").name == (
        "known_bad.gateway:unfenced_release_after_reconciliation")


def test_a_module_without_the_operations_is_refused_naming_the_missing_ones(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "half_lantern", _reexport("reference.lantern", ["create_venue"]))
    with pytest.raises(SystemNotFoundError) as raised:
        resolve_implementation(f"lantern:{name}")
    assert str(raised.value) == (
        "lantern system 'lantern:half_lantern': module half_lantern has no delete_venue, light_lantern, "
        "activate_scheduled_lantern, extinguish_lantern, read_active_lanterns. Expected lantern:<module>, an "
        "importable module with create_venue, delete_venue, light_lantern, activate_scheduled_lantern, "
        "extinguish_lantern, read_active_lanterns.")


def test_a_module_that_cannot_be_imported_says_what_was_expected():
    with pytest.raises(SystemNotFoundError) as raised:
        resolve_implementation("gateway:no_such_gateway_module")
    assert str(raised.value).startswith(
        "gateway system 'gateway:no_such_gateway_module': module 'no_such_gateway_module' cannot be imported "
        "(ModuleNotFoundError: No module named 'no_such_gateway_module'). Expected gateway:<module>, an importable "
        "module with begin_gateway_journal, ")


@pytest.mark.parametrize("name", ["lantern", "gateway"])
def test_exec_is_the_journals_only(name):
    message = (f"{name} system '{name}:exec:node main.js': an implementation in another process (<system>:exec:) "
               f"is the journal's only (docs/implementation-protocol.md); for the {name}, give {name}:<module>, an "
               "importable module with its operations.")
    with pytest.raises(SystemNotFoundError) as raised:
        resolve_implementation(f"{name}:exec:node main.js")
    assert str(raised.value) == message


def test_the_gate_refuses_a_gateway_exec_spec_before_anything_starts(tmp_path, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("nothing may start for a spec that names nothing")

    monkeypatch.setattr(cli, "emulator_from_environment", refuse)
    monkeypatch.setattr(cli.gate_process, "run_suite", refuse)
    assert cli.main(["gate", "--system", "gateway:exec:node main.js", "--artifacts", str(tmp_path / "a")]) == 2
    assert "is the journal's only" in capsys.readouterr().err


def test_journal_specs_take_the_prefix_and_bare_modules_still_work(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "my_journal", _reexport("reference", [
        "register_commerce_command", "acquire_commerce_command_lease", "complete_commerce_command",
        "fail_commerce_command", "CommandJournalError"]))
    for spec in (name, f"journal:{name}"):
        found = resolve_implementation(spec)
        assert isinstance(found, ReferenceAPI) and found.module == name and found is not REFERENCE
    assert resolve_implementation("journal:reference") is REFERENCE
    assert resolve_implementation(f"journal:{VARIANT}") == resolve_implementation(VARIANT)


def test_module_of_spec():
    assert module_of_spec("lantern", "lantern:a.b") == "a.b"
    assert module_of_spec("lantern", "gateway:a.b") is None
    assert module_of_spec("lantern", "lantern") is None
    with pytest.raises(SystemNotFoundError, match="another process"):  # the journal takes its exec: specs first
        module_of_spec("journal", "journal:exec:x")
    with pytest.raises(SystemNotFoundError, match="expected lantern:<module>"):
        module_of_spec("lantern", "lantern:")


def test_a_spec_no_system_claims_or_resolves_lists_the_spellings_and_what_each_system_said():
    with pytest.raises(SystemNotFoundError) as raised:
        resolve_implementation("known_bad.gatway:x")
    message = str(raised.value)
    assert message.startswith(  # no system is the default: none is blamed alone, each says why not
        f"no system claims or resolves the spec 'known_bad.gatway:x'. An implementation is spelled one of: "
        f"{spellings()}. What each system said: journal: journal system 'known_bad.gatway:x': module "
        "'known_bad.gatway' cannot be imported (ModuleNotFoundError: No module named 'known_bad.gatway').")
    assert message.endswith(
        " lantern: lantern system 'known_bad.gatway:x': expected reference.lantern, known_bad.lantern:<variant> or "
        "lantern:<module>. gateway: gateway system 'known_bad.gatway:x': expected reference.gateway, "
        "known_bad.gateway:<variant> or gateway:<module>.")
    assert spellings() == (
        "<system>:<module> (an importable module implementing that system's operations; systems: journal, lantern, "
        "gateway; one of your own is registered by --plugin or an entry point, docs/plugins-from-your-package.md); "
        "journal:exec:<command line> (a journal in another process, docs/implementation-protocol.md); "
        "known_bad.<system>:<variant> (a variant of a known-bad catalogue); reference.lantern or reference.gateway "
        "(that system's reference); a bare module with the four journal functions (the journal's, as before "
        "<system>:<module>)")



def test_a_spec_two_systems_resolve_is_refused_not_given_to_either(monkeypatch):
    import fencecheck.plugin.specs as systems

    taking_all = attrs.evolve(LANTERN, implementations=attrs.evolve(LANTERN.implementations,
                                                                    resolve=lambda spec: REFERENCE))
    monkeypatch.setattr(systems, "plugin_named", lambda name: taking_all if name == "lantern" else plugin(name))
    bare = "tests.fakes.ordinary_journal"  # a bare module with the journal's four functions
    expected = r"is an implementation of journal and of lantern: name its system, <system>:<module> \(journal:"
    with pytest.raises(SystemNotFoundError, match=expected + r"tests.fakes.ordinary_journal\)"):
        systems.system_of_spec(bare)
    assert systems.system_of_spec(f"journal:{bare}") == "journal"  # named, it is the journal's

def test_an_empty_gate_system_lists_the_spellings(tmp_path, capsys):
    assert cli.main(["gate", "--system", " ", "--artifacts", str(tmp_path / "a")]) == 2
    assert capsys.readouterr().err == f"fencecheck: --system needs a spec, one of: {spellings()}\n"


def test_a_counterexample_of_a_users_lantern_module_names_it_and_replay_resolves_it(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "my_lantern", _reexport("reference.lantern",
                                                                  [*LANTERN_FUNCTIONS, "LanternError"]))
    ops = [CreateVenue("bar-1", "Bar", 52.52, 13.405, 150),
           Light("u", "lan-1", "bar-1", 52.52, 13.405, now=datetime(2026, 3, 1, tzinfo=UTC))]
    path = write_counterexample(tmp_path / "counterexamples", ops, machine="LanternMachine", plugin=LANTERN,
                                system_module=f"lantern:{name}")
    assert f"SYSTEM = LANTERN.resolve('lantern:{name}')\n" in path.read_text()
    assert replay.program_system(path) == f"lantern:{name}"
    prepared = replay.prepare(path)
    assert prepared.system.name == f"lantern:{name}" and prepared.system.api.__name__ == name


def test_replay_system_points_a_lantern_program_at_a_users_module(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "my_lantern", _reexport("reference.lantern",
                                                                  [*LANTERN_FUNCTIONS, "LanternError"]))
    path = write_counterexample(tmp_path, [CreateVenue("bar-1", "Bar", 52.52, 13.405, 150)], machine="LanternMachine",
                                plugin=LANTERN)
    prepared = replay.prepare(path, f"lantern:{name}")
    assert prepared.system.name == f"lantern:{name}"
    assert (f"SYSTEM = __import__('fencecheck.plugin.specs', fromlist=['resolve_implementation'])"
            f".resolve_implementation('lantern:{name}')\n") in prepared.program
    with pytest.raises(UsageError) as raised:
        replay.prepare(path, "gateway:my_gateway")
    assert str(raised.value) == (
        f"--system 'gateway:my_gateway' names a gateway implementation, but {path} is a counterexample of the "
        "lantern: expected 'reference', known_bad.lantern:<variant> or lantern:<module>")
