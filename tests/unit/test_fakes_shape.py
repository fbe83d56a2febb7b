"""The ordinary and unavailable fakes (tests/fakes/) have the shape their plug-ins take, without the emulator:
each resolves or is handed over as the harness expects, the plug-in's `answer` (its `invoke`, then its error
code) dispatches every call to it, and it reads the trusted clock as often as the harness requires.

On the in-memory fake Firestore the ordinary journal and lantern answer what the references answer, and their
runner is the SDK's own: an aborted commit is retried at once, within the client's default attempts, and the
attempt log counts each attempt and abort (tests/emulator/test_ordinary_fakes.py runs them on the emulator)."""

from __future__ import annotations

import pytest

from fencecheck.plugin.specs import describe_system, system_of_spec
from fencecheck.runners.contest import CallCounts
from fencecheck.runners.lockstep import OnceClock
from fencecheck.systems.gateway.plugin import GATEWAY, GatewaySystem
from fencecheck.systems.journal.plugin import JOURNAL, REFERENCE, ReferenceAPI, accepts_attempt_log
from fencecheck.systems.lantern.plugin import LANTERN, REFERENCE_LANTERN, LanternSystem
from known_bad.lantern import OPERATIONS as LANTERN_OPERATIONS
from model.journal import Acquire, CommandRef, Complete, Register
from model.lantern import CreateVenue, Light
from reference.gateway import OPERATIONS as GATEWAY_OPERATIONS
from reference.journal.errors import CommandJournalError
from tests.fakes import FakeFirestore, unavailable
from tests.fakes.ordinary_lantern import ORDINARY_LANTERN
from tests.fakes.sdk_runner import MAX_ATTEMPTS
from tests.systems.gateway.builders import REF, UNDECLARED, begin, claim
from tests.systems.journal.builders import LEASE_A, REF_A, T0, T1

ORDINARY_JOURNAL_SPEC = "tests.fakes.ordinary_journal"
COMMAND = CommandRef.from_inputs(environment="test", caller_scope={"kind": "firebase_uid", "value": "uid-alice"},
                                 command_id="0f8fad5b-d9cb-469f-a165-70867728950e",
                                 command_type="create_checkout_session", endpoint_schema_version=1,
                                 payload={"quantity": 2})
JOURNAL_OPS = (Register(COMMAND, T0), Acquire(COMMAND, LEASE_A, T1), Complete(COMMAND, LEASE_A, 1, REF_A, T1))
BAR = CreateVenue("bar", "Bar Lantern", 52.5200, 13.4050, 150)


def _answer(plugin, impl, db, op, log=None):
    """(what a caller of `impl` sees, how often it read its clock) for one call through the plug-in."""
    clock = OnceClock(plugin.clock_of(op))
    return plugin.answer(impl, db, op, clock, log), clock.reads


def _required_reads(plugin, op) -> int:
    return 0 if plugin.clock_of(op) is None else 1


# --- the ordinary journal ---------------------------------------------------------------------------------------


def test_the_ordinary_journal_is_a_journal_system_by_its_module_name():
    system = JOURNAL.resolve(ORDINARY_JOURNAL_SPEC)
    assert isinstance(system, ReferenceAPI) and system is not REFERENCE
    assert system.module == ORDINARY_JOURNAL_SPEC == JOURNAL.spec_of(system)
    assert system_of_spec(ORDINARY_JOURNAL_SPEC) == "journal"
    assert describe_system(system) == ORDINARY_JOURNAL_SPEC
    assert system.error_type is CommandJournalError  # the reference's own error, imported
    functions = (system.register, system.acquire, system.complete, system.fail)
    assert all(accepts_attempt_log(function) for function in functions)
    assert {function.__module__ for function in functions} == {ORDINARY_JOURNAL_SPEC}


def test_the_ordinary_journal_answers_and_stores_what_the_reference_does():
    ordinary, reference = FakeFirestore(), FakeFirestore()
    system = JOURNAL.resolve(ORDINARY_JOURNAL_SPEC)
    for op in JOURNAL_OPS:
        log = CallCounts()
        answered, reads = _answer(JOURNAL, system, ordinary, op, log)
        assert (answered, reads) == _answer(JOURNAL, REFERENCE, reference, op), op
        assert reads == 1
        assert (log.attempts, log.aborts, log.looks) == (1, 0, 0)
    assert ordinary.dump() == reference.dump() != {}


def test_the_ordinary_journal_retries_an_aborted_commit_at_once_and_counts_it():
    db = FakeFirestore(abort_commits=MAX_ATTEMPTS - 1)
    log = CallCounts()
    answered, reads = _answer(JOURNAL, JOURNAL.resolve(ORDINARY_JOURNAL_SPEC), db, JOURNAL_OPS[0], log)
    assert answered["outcome"] == "registered_new" and reads == 1
    assert (log.attempts, log.aborts, log.looks) == (MAX_ATTEMPTS, MAX_ATTEMPTS - 1, 0)
    assert [call[2] for call in db.calls_named("transaction")] == [False]  # one read-write transaction, no look


@pytest.mark.parametrize(("aborts", "attempts"), [({"abort_commits": MAX_ATTEMPTS}, MAX_ATTEMPTS),
                                                  ({"abort_reads": 1}, 1)], ids=["commits", "a read"])
def test_the_ordinary_journal_answers_unavailable_when_its_attempts_abort(aborts, attempts):
    db = FakeFirestore(**aborts)
    log = CallCounts()
    answered, reads = _answer(JOURNAL, JOURNAL.resolve(ORDINARY_JOURNAL_SPEC), db, JOURNAL_OPS[0], log)
    assert (answered, reads) == ("journal_unavailable", 1)
    assert (log.attempts, log.aborts, log.looks) == (attempts, attempts, 0)
    assert db.dump() == {}


# --- the ordinary lantern ---------------------------------------------------------------------------------------


def test_the_ordinary_lantern_is_a_lantern_system_with_the_reference_left_alone():
    import reference.lantern.api

    assert isinstance(ORDINARY_LANTERN, LanternSystem) and ORDINARY_LANTERN is not REFERENCE_LANTERN
    assert all(callable(getattr(ORDINARY_LANTERN.api, name)) for name in LANTERN_OPERATIONS)
    assert ORDINARY_LANTERN.error is ORDINARY_LANTERN.api.LanternError
    assert ORDINARY_LANTERN.api.api._run is not reference.lantern.api._run
    assert reference.lantern.api._run.__module__ == "reference.lantern.api"
    assert LANTERN.describe_impl(ORDINARY_LANTERN) == ORDINARY_LANTERN.name


def test_the_ordinary_lantern_answers_what_the_reference_does_and_counts_its_attempts():
    ordinary, reference = FakeFirestore(abort_commits=MAX_ATTEMPTS - 1), FakeFirestore()
    for expected_attempts in (MAX_ATTEMPTS, 1):  # the venue, then the same venue again: venue_exists
        log = CallCounts()
        answered = _answer(LANTERN, ORDINARY_LANTERN, ordinary, BAR, log)
        assert answered == _answer(LANTERN, REFERENCE_LANTERN, reference, BAR)
        assert (log.attempts, log.aborts, log.looks) == (expected_attempts, expected_attempts - 1, 0)
    assert ordinary.dump() == reference.dump() != {}


def test_the_ordinary_lantern_answers_unavailable_when_every_attempt_aborts():
    db = FakeFirestore(abort_commits=MAX_ATTEMPTS)
    log = CallCounts()
    assert _answer(LANTERN, ORDINARY_LANTERN, db, BAR, log) == ("lantern_unavailable", 0)
    assert (log.attempts, log.aborts) == (MAX_ATTEMPTS, MAX_ATTEMPTS)
    assert db.dump() == {}


# --- the unavailable fakes --------------------------------------------------------------------------------------

UNAVAILABLE_CALLS = {
    "journal register": (JOURNAL, unavailable.JOURNAL, JOURNAL_OPS[0]),
    "journal acquire": (JOURNAL, unavailable.JOURNAL, JOURNAL_OPS[1]),
    "journal complete": (JOURNAL, unavailable.JOURNAL, JOURNAL_OPS[2]),
    "lantern create_venue (no clock)": (LANTERN, unavailable.LANTERN, BAR),
    "lantern light": (LANTERN, unavailable.LANTERN, Light("u1", "l1", "bar", 52.52, 13.405, now=T0)),
    "gateway begin": (GATEWAY, unavailable.GATEWAY, begin(T0, REF)),
    "gateway claim": (GATEWAY, unavailable.GATEWAY, claim("7c9e6679-7425-40de-944b-e07fc1f90ae7", T0, REF)),
    # a namespace not declared linearizable is refused before the clock: the clock is never read
    "gateway begin, undeclared namespace": (GATEWAY, unavailable.GATEWAY, begin(T0, UNDECLARED)),
}


@pytest.mark.parametrize(("plugin", "impl", "op"), UNAVAILABLE_CALLS.values(), ids=UNAVAILABLE_CALLS.keys())
def test_an_unavailable_fake_answers_unavailable_touches_nothing_and_reads_its_clock_as_required(plugin, impl, op):
    db = FakeFirestore()
    log = CallCounts()
    assert _answer(plugin, impl, db, op, log) == (plugin.unavailable_code, _required_reads(plugin, op))
    assert db.calls == [] and db.dump() == {}
    assert (log.attempts, log.aborts, log.looks) == (0, 0, 0)


def test_the_unavailable_journal_resolves_by_its_spec_and_the_others_are_objects():
    assert JOURNAL.resolve("tests.fakes.unavailable:journal") is unavailable.JOURNAL
    assert system_of_spec("tests.fakes.unavailable:journal") == "journal"
    assert isinstance(unavailable.LANTERN, LanternSystem) and isinstance(unavailable.GATEWAY, GatewaySystem)
    assert all(callable(getattr(unavailable.LANTERN.api, name)) for name in LANTERN_OPERATIONS)
    assert all(callable(getattr(unavailable.GATEWAY.api, name)) for name in GATEWAY_OPERATIONS)
    for name in ("lantern", "gateway"):
        with pytest.raises(KeyError, match="objects"):
            unavailable.system(name)
