"""fencecheck fails closed on the wrong emulator (issue 12, point 8), and errors cannot be changed once raised.

Every Firestore client, and every request to an emulator, goes through one guard
(`fencecheck.emulator.discovery.guard_emulator_target`): FIRESTORE_EMULATOR_HOST must name a loopback host
(127.0.0.0/8, localhost, [::1]) with a port, and the project id must start with `demo-`. A refusal names the
variable (or where the project id came from), never echoes the value, and comes before any client is built or
anything is sent. Decided: a host without a port ("127.0.0.1") is refused as malformed (the client would dial
its default port, 443); so is an IPv6 address without brackets, or one that is loopback only by mapping.
"""

from __future__ import annotations

import copy
import pickle

import pytest
from google.cloud import firestore

import fencecheck.emulator.lifecycle as emulator_module
from fencecheck.emulator.discovery import (
    ENV_HOST,
    demo_project_id,
    guard_emulator_target,
    is_loopback_host,
    loopback_emulator_host,
)
from fencecheck.emulator.lifecycle import EmulatorHandle, connect_existing, emulator_from_environment
from fencecheck.errors import EmulatorTargetError, FencecheckError, PortInUseError, UsageError
from fencecheck.runners.rules_probe import RulesProbe
from fencecheck.suites import pytest_plugin
from reference import CommandJournalError
from reference.lantern import LanternError

LOOPBACK = [("127.0.0.1:8080", ("127.0.0.1", 8080)), ("127.5.6.7:1", ("127.5.6.7", 1)),
            ("localhost:9", ("localhost", 9)), ("[::1]:9", ("::1", 9)), ("127.255.255.255:65535",
                                                                           ("127.255.255.255", 65535))]
ELSEWHERE = ["10.0.0.1:8080", "example.com:443", "0.0.0.0:1", "192.168.1.1:8080", "128.0.0.1:1", "[::]:1",
             "[::ffff:127.0.0.1]:1", "[2001:db8::1]:8080", "127.1:80", "localhost.:1", "localhost.example.com:1",
             "secret-token.example.com:443"]
MALFORMED = ["127.0.0.1", "localhost", "[::1]", "::1:9", "[127.0.0.1]:9", "127.0.0.1:0", "127.0.0.1:65536",
             "127.0.0.1:", ":8080", "http://127.0.0.1:8080", "user:pw@127.0.0.1:8080", "127.0.0.1:8080/x",
             "[::1%lo]:9", "127.0.0.1:\u0661\u0662", "127.0.0.1:8080 8081", ""]


class RecordingClient:
    """Stands in for `firestore.Client`: records every construction."""

    built: list[dict] = []

    def __init__(self, **kwargs) -> None:
        type(self).built.append(kwargs)


@pytest.fixture
def built(monkeypatch):
    monkeypatch.setattr(RecordingClient, "built", [])
    monkeypatch.setattr(firestore, "Client", RecordingClient)
    return RecordingClient.built


# --- hosts --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), LOOPBACK)
def test_loopback_hosts_are_accepted(value, expected):
    assert loopback_emulator_host(value) == expected
    assert is_loopback_host(expected[0])


@pytest.mark.parametrize("value", ELSEWHERE)
def test_hosts_outside_the_loopback_range_are_refused_naming_the_variable(value):
    with pytest.raises(EmulatorTargetError) as caught:
        loopback_emulator_host(value)
    message = str(caught.value)
    assert ENV_HOST in message and "loopback" in message
    assert value not in message and "secret" not in message  # never echoed
    assert isinstance(caught.value, UsageError)


@pytest.mark.parametrize("value", MALFORMED)
def test_malformed_hosts_are_refused(value):
    with pytest.raises(UsageError, match=ENV_HOST) as caught:
        loopback_emulator_host(value)
    assert "is not a host:port pair" in str(caught.value)
    assert "pw@" not in str(caught.value) and "8081" not in str(caught.value)  # never echoed


# --- projects -----------------------------------------------------------------------------------------------


def test_only_demo_projects_are_accepted():
    assert demo_project_id("demo-x") == "demo-x"
    for project in ("prod-x", "demo", "demo-", "Demo-x", "x-demo-x", "", None, "prod-canary-7f3a"):
        with pytest.raises(EmulatorTargetError, match="does not start with 'demo-'") as caught:
            demo_project_id(project, "the project argument")
        assert "the project argument" in str(caught.value)
        assert "prod" not in str(caught.value) and "canary" not in str(caught.value)  # never echoed


# --- before anything is built or sent ---------------------------------------------------------------------------


def test_a_client_is_built_only_after_the_guard_passes(built):
    handle = EmulatorHandle("127.0.0.1:1")
    with pytest.raises(EmulatorTargetError, match="project_id argument"):
        handle.client("prod-x")
    assert built == []
    handle.client("demo-x")  # the recording stand-in is what a client is built from
    assert [entry["project"] for entry in built] == ["demo-x"]


@pytest.mark.parametrize("value", ["10.0.0.1:8080", "example.com:443", "0.0.0.0:1"])
def test_a_remote_emulator_is_refused_before_it_is_asked_anything(value, built, monkeypatch, tmp_path):
    asked: list[str] = []
    monkeypatch.setattr(EmulatorHandle, "_request", lambda self, *args, **kwargs: asked.append(self.host))
    monkeypatch.setattr(emulator_module, "start_emulator", lambda **_kwargs: pytest.fail("started one instead"))
    with pytest.raises(EmulatorTargetError, match=ENV_HOST):
        connect_existing(value)
    with pytest.raises(EmulatorTargetError, match=ENV_HOST):
        emulator_from_environment({ENV_HOST: value}, log_dir=tmp_path)
    with pytest.raises(EmulatorTargetError, match=ENV_HOST):
        EmulatorHandle(value)
    monkeypatch.setenv(ENV_HOST, value)
    monkeypatch.delenv(pytest_plugin.ENV_ERROR, raising=False)
    with pytest.raises(EmulatorTargetError, match=ENV_HOST):  # the suites' session emulator
        pytest_plugin._session_emulator(None)
    assert asked == [] and built == []


def test_no_emulator_request_goes_to_a_project_outside_demo(monkeypatch):
    asked: list[tuple] = []
    monkeypatch.setattr(EmulatorHandle, "_request", lambda self, *args, **kwargs: asked.append(args) or b"{}")
    handle = EmulatorHandle("localhost:9")
    for call in (handle.reset, handle.rule_coverage, lambda project: handle.load_rules(project, "")):
        with pytest.raises(EmulatorTargetError):
            call("prod-x")
    assert asked == []
    handle.reset("demo-x")
    assert len(asked) == 1


def test_the_one_guard_checks_both_and_the_rules_probe_uses_it():
    guard_emulator_target("[::1]:8080", "demo-x")
    with pytest.raises(EmulatorTargetError, match=ENV_HOST):
        guard_emulator_target("10.0.0.1:8080", "demo-x")
    with pytest.raises(EmulatorTargetError, match="the project id"):
        guard_emulator_target("127.0.0.1:8080", "prod-x")
    assert RulesProbe("http://127.5.6.7:8080", "demo-x").project_id == "demo-x"
    with pytest.raises(EmulatorTargetError, match="rules probe"):
        RulesProbe("http://127.0.0.1:8080", "prod-x")


# --- immutable errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("error_type", "code", "other"), [
    (CommandJournalError, "lease_rejected", "terminal_conflict"),
    (LanternError, "venue_not_found", "venue_exists"),
])
def test_a_raised_contract_error_cannot_be_changed(error_type, code, other):
    with pytest.raises(error_type) as caught:
        raise error_type(code) from None
    error = caught.value
    for name, value in (("code", other), ("args", ("changed",)), ("extra", 1), ("__class__", ValueError)):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(error, name, value)
    with pytest.raises(AttributeError, match="immutable"):
        del error.code
    with pytest.raises(AttributeError, match="immutable"):
        error.__init__(other)
    assert error.code == code and error.args == (str(error_type(code)),) and vars(error) == {"code": code}
    # still an ordinary exception: chained, annotated, copied and pickled (xdist) as before
    error.add_note("a note")
    for restored in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(restored) is error_type and restored.code == code and str(restored) == str(error)
    with pytest.raises(error_type):
        raise error


def test_fencechecks_own_errors_cannot_be_changed():
    with pytest.raises(UsageError) as caught:
        raise EmulatorTargetError("refused") from ValueError("cause")
    error = caught.value
    assert isinstance(error.__cause__, ValueError)  # what the interpreter records is still recorded
    with pytest.raises(AttributeError, match="immutable"):
        error.args = ("changed",)
    with pytest.raises(AttributeError, match="immutable"):
        error.hint = "x"
    error.add_note("a note")
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is EmulatorTargetError and restored.args == ("refused",) and restored.__notes__ == [
        "a note"]
    port = PortInUseError("busy")
    assert isinstance(port, FencecheckError) and pickle.loads(pickle.dumps(port)).args == ("busy",)
    with pytest.raises(AttributeError, match="immutable"):
        port.errno = 98
