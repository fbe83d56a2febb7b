"""The registry and the journal and lantern plug-ins (fencecheck/systems), checked without an emulator: the
registry's invariants, operations round-trip through their JSON, partitions restrict and merge states, the error
of an implementation is told from anything else, and an unknown system or spec is a clear error. (What every
registered plug-in promises: tests/unit/test_plugin_conformance.py; the gateway's own: test_gateway_plugin.py.)"""

from __future__ import annotations

import inspect
import re
import sys
from datetime import UTC, datetime, timedelta

import attrs
import pytest

import fencecheck.plugin.registry as plugins
import reference.lantern
from fencecheck.checker.history import Call, Definite, History, Indefinite, classifier
from fencecheck.checker.linearizability import check
from fencecheck.errors import SystemNotFoundError
from fencecheck.plugin.records import NAME_PATTERN, BrowserBoundary, SuiteParts
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.systems.lantern.plugin import LANTERN, PROJECT
from model.journal import Acquire, CommandRef, Complete, Register
from model.lantern import (
    CreateVenue,
    DeleteVenue,
    Extinguish,
    FaultKind,
    InjectFault,
    Light,
    ReadActive,
    ScheduledLight,
)

T0 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
CMD = CommandRef("test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000",
                 "create_checkout_session", 1, '{"quantity":1}')
OTHER = CommandRef("test", "firebase_uid", "uid-bob", "00000002-c0de-4000-8000-000000000000",
                   "create_checkout_session", 1, '{"quantity":2}')
HOLDER = "0000000a-1ea5-4000-a000-000000000000"
LANTERN_OPS = (
    CreateVenue("bar", "Bar", 52.52, 13.405, 150),
    Light("u1", "l1", "bar", 52.52, 13.405, now=T0),
    ScheduledLight("u2", "l2", "bar", T0, now=T0 + timedelta(seconds=1)),
    ReadActive(now=T0 + timedelta(seconds=2)),
    Extinguish("u1", "l1", now=T0 + timedelta(seconds=3)),
    DeleteVenue("bar"),
    InjectFault(FaultKind.COUNTER_DRIFT, "bar"),
    InjectFault(FaultKind.STRANDED_GUARD, "u2", now=T0 + timedelta(seconds=4)),
)


def test_every_system_is_found_by_name_and_an_unknown_one_is_a_clear_error():
    # The registry's invariants, not its content: a new system needs no line here.
    # The built-in systems come first, then any registered from outside (an entry point, $FENCECHECK_PLUGINS).
    assert tuple(SYSTEM_NAMES)[:len(plugins.REGISTRY)] == tuple(plugins.REGISTRY)
    assert len(set(SYSTEM_NAMES)) == len(SYSTEM_NAMES) > 0
    assert [plugin(name).name for name in SYSTEM_NAMES] == list(SYSTEM_NAMES)
    assert all(NAME_PATTERN.fullmatch(name) for name in SYSTEM_NAMES), SYSTEM_NAMES  # file name prefixes
    with pytest.raises(SystemNotFoundError, match=f"expected one of {', '.join(SYSTEM_NAMES)}"):
        plugin("ledger")


TOY = attrs.evolve(JOURNAL, name="toy")  # a third system, as far as the registry can tell


def test_a_system_is_added_by_one_registry_line(monkeypatch):
    monkeypatch.setitem(plugins.REGISTRY, "toy", f"{__name__}:TOY")
    assert plugin("toy") is TOY
    assert plugins.plugin_module("toy").__name__ == __name__


def test_a_registered_system_without_suite_parts_is_reported_missing_by_each_suite(monkeypatch):
    import fencecheck.plugin.suite_parts as suite_parts

    # No browser boundary of its own: the rules probe, imported by the suites below, refuses two systems' targets
    # of one name, and a copy of the journal's would be that.
    bare = attrs.evolve(JOURNAL, name="bare", suites=SuiteParts(), parallel=None, browser_denied=BrowserBoundary())
    monkeypatch.setattr(sys.modules[__name__], "BARE", bare, raising=False)
    monkeypatch.setitem(plugins.REGISTRY, "bare", f"{__name__}:BARE")
    assert "bare" in suite_parts.SYSTEM_NAMES  # the registry's live view: a system registered later is in it
    for part in suite_parts.REQUIRED:  # the parts each suite's test_*suite_parts.py fails for
        assert suite_parts.missing(part) == ("bare",), part
        assert "bare" not in suite_parts.with_part(part)
        message = suite_parts.missing_part_message("bare", part)
        assert "'bare' declares no" in message and "SuiteParts" in message, message
    # the built-in ones all declare theirs
    assert set(plugins.REGISTRY) - {"bare"} <= set(suite_parts.with_part("machine_known_bad"))
    # and each suite's own test of the part fails for it, saying what to declare
    from parallel_tests.test_parallel_suite_parts import test_every_registered_system_has_parallel_programs
    from race_tests.test_race_suite_parts import test_every_registered_system_has_race_scenarios
    from stateful_tests.test_suite_parts import test_every_registered_system_has_a_machine_this_suite_collects

    for suite_test in (test_every_registered_system_has_a_machine_this_suite_collects,
                       test_every_registered_system_has_race_scenarios,
                       test_every_registered_system_has_parallel_programs):
        with pytest.raises(pytest.fail.Exception, match="'bare' declares no .* SuiteParts"):
            suite_test("bare")


@pytest.mark.parametrize("entry", [f"{__name__}:JOURNAL", f"{__name__}:CMD"])
def test_a_registry_line_naming_another_object_is_a_clear_error(monkeypatch, entry):
    monkeypatch.setitem(plugins.REGISTRY, "toy", entry)
    with pytest.raises(SystemNotFoundError, match="is not the SystemPlugin called 'toy': fix its REGISTRY line"):
        plugin("toy")


def test_the_registry_names_its_plugins_by_module_and_attribute():
    for name, where in plugins.REGISTRY.items():
        module, _, attribute = where.partition(":")
        assert module.startswith("fencecheck.systems.") and attribute, where
        assert plugin(name).name == name


@pytest.mark.parametrize("system, ops", [
    (JOURNAL, [Register(CMD, T0), Acquire(OTHER, HOLDER, T0), Complete(CMD, HOLDER, 1, "f" * 64, T0, True)]),
    (LANTERN, list(LANTERN_OPS)),
], ids=["journal", "lantern"])
def test_operations_round_trip_through_json(system, ops):
    header, entries = system.ops_to_json(ops)
    assert set(header) <= set(system.history_header_keys)
    assert system.ops_from_json(header, entries) == ops


def test_a_lost_response_step_round_trips_and_is_left_out_when_unset():
    lost = [Register(CMD, T0, response_lost=True), Complete(CMD, HOLDER, 1, "f" * 64, T0, response_lost=True)]
    header, entries = JOURNAL.ops_to_json(lost)
    assert [entry["responseLost"] for entry in entries] == [True, True]
    assert JOURNAL.ops_from_json(header, entries) == lost and JOURNAL.response_lost(lost[0])
    lantern = [Light("u1", "l1", "bar", 52.52, 13.405, now=T0, response_lost=True),
               Extinguish("u1", "l1", now=T0, response_lost=True)]
    _header, entries = LANTERN.ops_to_json(lantern)
    assert [entry["responseLost"] for entry in entries] == [True, True]
    assert LANTERN.ops_from_json({}, entries) == lantern and LANTERN.response_lost(lantern[1])
    assert all("responseLost" not in entry for entry in LANTERN.ops_to_json(LANTERN_OPS)[1])
    assert all("responseLost" not in entry for entry in JOURNAL.ops_to_json([Register(CMD, T0)])[1])
    assert not LANTERN.response_lost(LANTERN_OPS[1]) and not JOURNAL.response_lost(Register(CMD, T0))
    _header, (venue,) = LANTERN.ops_to_json([LANTERN_OPS[0]])
    for bad in ({**entries[0], "responseLost": False}, {**venue, "responseLost": True}):
        with pytest.raises(ValueError, match="responseLost"):
            LANTERN.ops_from_json({}, [bad])


def test_lantern_operation_json_rejects_unknown_types_and_keys():
    _header, (entry,) = LANTERN.ops_to_json([LANTERN_OPS[1]])
    with pytest.raises(ValueError, match="exactly the keys"):
        LANTERN.ops_from_json({}, [{**entry, "extra": 1}])
    with pytest.raises(ValueError, match="one of"):
        LANTERN.ops_from_json({}, [{**entry, "type": "teleport"}])


def test_partitions_restrict_and_merge():
    state = JOURNAL.initial_state()
    for op in (Register(CMD, T0), Register(OTHER, T0)):
        state = JOURNAL.step(state, op)[0]
    alone = JOURNAL.restrict(state, CMD.key_hash)
    assert list(alone.keys()) == [CMD.key_hash]
    assert JOURNAL.documents_of(alone, CMD.key_hash) == JOURNAL.documents_of(state, CMD.key_hash)
    rebuilt = JOURNAL.merge(JOURNAL.restrict(state, OTHER.key_hash), alone, CMD.key_hash)
    assert rebuilt == state
    assert JOURNAL.partition_of(Register(CMD, T0)) == CMD.key_hash
    lantern_state = LANTERN.step(LANTERN.initial_state(), LANTERN_OPS[0])[0]
    assert LANTERN.partition_of(LANTERN_OPS[3]) == PROJECT
    assert LANTERN.restrict(lantern_state, PROJECT) is lantern_state
    assert set(LANTERN.documents_of(lantern_state, PROJECT)) == {"venues/bar"}
    assert LANTERN.partition_of_path("venues/bar") == PROJECT and LANTERN.partition_of_path("strays/x") is None


def test_only_calls_that_read_time_are_handed_a_clock_reading():
    assert [LANTERN.clock_of(op) is not None for op in LANTERN_OPS] == [False, True, True, True, True, False,
                                                                        False, False]
    assert JOURNAL.clock_of(Register(CMD, T0)) == T0


def test_each_lantern_call_names_exactly_the_reference_functions_parameters():
    """The lantern's operation table puts every operation (its parallel programs make only some: the conformance
    test) on a reference function whose parameters are exactly what `invoke` hands it; the venue operations are
    handed no clock, and a fault is no call."""
    for op in LANTERN_OPS[:-2]:
        function, kwargs = LANTERN.operation(op)
        handed = {"db", "attempt_log"} | (set() if function in LANTERN.clockless else {"clock"})
        assert set(inspect.signature(getattr(reference.lantern, function)).parameters) == {*kwargs, *handed}, function
    assert [LANTERN.operation(op)[0] in LANTERN.clockless for op in LANTERN_OPS[:-2]] == [True, False, False, False,
                                                                                         False, True]
    for fault in LANTERN_OPS[-2:]:
        with pytest.raises(TypeError, match="not a lantern call"):
            LANTERN.operation(fault)


def test_the_implementations_error_is_told_from_anything_else():
    journal_error = JOURNAL.reference.error_type("journal_unavailable")
    classify = classifier(JOURNAL, JOURNAL.reference)
    assert classify(journal_error) == Indefinite("journal_unavailable")
    assert classify(JOURNAL.reference.error_type("lease_rejected")) == Definite("lease_rejected")
    assert classify(TimeoutError()) == Indefinite("transport:TimeoutError")
    lantern_classify = classifier(LANTERN, LANTERN.reference)
    assert lantern_classify(LANTERN.reference.error("lantern_unavailable")) == Indefinite("lantern_unavailable")
    assert lantern_classify(LANTERN.reference.error("venue_not_found")) == Definite("venue_not_found")
    assert lantern_classify(journal_error) == Indefinite("transport:CommandJournalError")  # not the lantern's


def test_implementations_resolve_by_spec():
    assert LANTERN.resolve("") is LANTERN.reference and LANTERN.resolve("reference.lantern") is LANTERN.reference
    with pytest.raises(SystemNotFoundError, match="known_bad.lantern:<variant>"):
        LANTERN.resolve("reference.journal")
    with pytest.raises(SystemNotFoundError, match="no known-bad lantern variant"):
        LANTERN.resolve("known_bad.lantern:no-such-variant")


def test_each_plugin_names_the_specs_that_are_its_own():
    from fencecheck.plugin.specs import system_of_spec

    for name in SYSTEM_NAMES:  # derived from its name and its reference: no plug-in lists them
        own = plugin(name)
        reference = own.spec_of(own.reference)
        assert own.owns_spec(reference) and system_of_spec(reference) == name
        assert system_of_spec(f"known_bad.{name}:any_variant") == name
        assert system_of_spec(f"{name}:exec:some command") == name
    # exact names are exact, prefixes end in ":"; a spec no plug-in owns is the one whose plug-in resolves it, and
    # none resolving it is an error, never the journal's by default
    assert system_of_spec("tests.fakes.ordinary_journal") == "journal"  # the journal's resolve takes the module
    for unowned in ("reference.lanternish", "my_journal.impl"):
        with pytest.raises(SystemNotFoundError, match=f"no system claims or resolves the spec '{unowned}'"):
            system_of_spec(unowned)
    assert system_of_spec("  ") is None


def test_a_plugin_that_claims_a_prefix_owns_its_specs(monkeypatch):
    import fencecheck.plugin.specs as systems

    claiming = attrs.evolve(LANTERN, implementations=attrs.evolve(LANTERN.implementations,
                                                              spec_prefixes=("acme.lantern:",)))
    monkeypatch.setattr(systems, "plugin_named", lambda name: claiming if name == "lantern" else plugin(name))
    assert systems.system_of_spec("acme.lantern:v2") == "lantern"
    assert systems.system_of_spec("known_bad.lantern:x") == "lantern"  # what every system owns, still its own
    assert not plugin("lantern").owns_spec("acme.lantern:v2")  # claimed only by the plug-in that adds it
    with pytest.raises(SystemNotFoundError, match="no system claims or resolves"):
        systems.system_of_spec("acme.lantern")  # a prefix claims what starts with it, not itself without ":"


def test_each_plugins_browser_boundary_is_probed_under_names_of_its_own(monkeypatch):
    from fencecheck.runners import rules_probe

    documents, groups, systems = rules_probe.boundary_targets()
    assert (documents, groups) == (rules_probe.DOCUMENT_PATHS, rules_probe.GROUP_COLLECTIONS)
    for name in SYSTEM_NAMES:
        boundary = plugin(name).browser_denied
        assert [systems[t] for t, _ in (*boundary.documents, *boundary.groups)] == [name] * (
            len(boundary.documents) + len(boundary.groups))
    assert systems["root"] == "journal" and documents["lifecycle"] == "checkoutRequests/{id}/lifecycle/current"
    for template in documents.values():  # a plain document path once the id is filled in
        segments = template.format(id="a" * 64).split("/")
        assert len(segments) % 2 == 0 and all(re.fullmatch(r"[A-Za-z0-9_-]{1,200}", s) for s in segments), template
    clash = attrs.evolve(LANTERN, browser_denied=BrowserBoundary(groups=(("group_root", "venues"),)))
    real = plugins.plugin
    monkeypatch.setattr(plugins, "plugin", lambda name: clash if name == "lantern" else real(name))
    with pytest.raises(ValueError, match="'group_root' is named by both journal and lantern"):
        rules_probe.boundary_targets()


def test_a_lantern_history_round_trips_and_is_judged_with_its_own_model():
    venue, light, extinguish = LANTERN_OPS[0], LANTERN_OPS[1], LANTERN_OPS[4]
    setup = LANTERN.step(LANTERN.initial_state(), venue)[0]
    lit = LANTERN.step(setup, light)[1].output
    calls = (
        Call(0, "a", light, 0, 10, Definite(lit)),
        Call(1, "b", extinguish, 20, 30, Definite({"outcome": "extinguished", "lanternId": "l1"})),
        Call(2, "c", extinguish, 21, 31, Definite({"outcome": "extinguished", "lanternId": "l1"})),  # twice: illegal
    )
    history = History(calls, system="lantern")
    again = History.from_json(history.to_json())
    assert again == history and again.to_json()["system"] == "lantern"
    assert check(History(calls[:2], system="lantern"), plugin=LANTERN, initial_state=setup).ok
    verdict = check(history, plugin=LANTERN, initial_state=setup)
    assert verdict.status == "illegal"
    assert "project project is not linearizable" in verdict.explain()
