"""Outputs are frozen and fixed-shape; errors carry a fixed code and message and nothing else; and no raw
caller value, id, payload, lease id or terminal reference (nor any derived hash or document path) escapes
through an output, an error, the stored documents or logging (SPEC.md "Errors"; seeds' "Fixed outputs")."""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

from reference import (
    ERROR_CODES,
    CommandJournalError,
    LeaseAcquired,
    LeaseTimestamp,
    LifecycleObservation,
    RegistrationResult,
)
from tests.fakes import FakeFirestore
from tests.systems.journal.builders import LEASE, T0, T1, Command, call, patch_backoff

# -- outputs ----------------------------------------------------------------------------------------------------------
TC = T1 + timedelta(seconds=30)
T2 = T1 + LEASE + timedelta(seconds=5)
REGISTRATION_KEYS = ["journalSchemaVersion", "outcome", "state"]
OBSERVATION_KEYS = ["journalSchemaVersion", "lifecycleSchemaVersion", "outcome", "state"]
LEASE_KEYS = [*OBSERVATION_KEYS, "fenceEpoch", "leaseExpiresAt"]


def _outputs() -> dict[str, Any]:
    """One real output of every outcome, produced through the API."""
    a, b = "7c9e6679-7425-40de-944b-e07fc1f90ae7", "886313e1-3b8a-4372-9b90-0c9aee199e5d"
    db, other = FakeFirestore(), Command(command_id="16fd2706-8baf-433b-82eb-8c7fada847da")
    found = {
        "registered_new": call("register", db, T0),
        "registered_existing": call("register", db, T0),
        "lease_acquired": call("acquire", db, T1, lease=a),
        "lease_busy": call("acquire", db, T1, lease=b),
        "terminal_succeeded": call("complete", db, TC, lease=a),
    }
    call("register", db, T0, other)
    call("acquire", db, T1, other, lease=a)
    found["terminal_failed_final"] = call("fail", db, TC, other, lease=a)
    return found


OUTPUTS = _outputs()


@pytest.mark.parametrize(
    ("outcome", "kind", "state", "keys"),
    [
        ("registered_new", RegistrationResult, "registered", REGISTRATION_KEYS),
        ("registered_existing", RegistrationResult, "registered", REGISTRATION_KEYS),
        ("lease_acquired", LeaseAcquired, "leased", LEASE_KEYS),
        ("lease_busy", LifecycleObservation, "leased", OBSERVATION_KEYS),
        ("terminal_succeeded", LifecycleObservation, "succeeded", OBSERVATION_KEYS),
        ("terminal_failed_final", LifecycleObservation, "failed_final", OBSERVATION_KEYS),
    ],
)
def test_output_shape_and_key_order(outcome, kind, state, keys):
    output = OUTPUTS[outcome]
    assert type(output) is kind
    document = output.to_json()
    assert list(document) == keys
    assert (document["outcome"], document["state"], document["journalSchemaVersion"]) == (outcome, state, 1)
    assert all(type(document[key]) is int for key in keys if key.endswith(("Version", "Epoch")))
    if "lifecycleSchemaVersion" in document:
        assert document["lifecycleSchemaVersion"] == 1


def test_exact_json_text_of_fixed_outputs():
    assert json.dumps(OUTPUTS["registered_new"].to_json(), separators=(",", ":")) == (
        '{"journalSchemaVersion":1,"outcome":"registered_new","state":"registered"}'
    )
    assert json.dumps(OUTPUTS["lease_acquired"].to_json(), separators=(",", ":")) == (
        '{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_acquired","state":"leased",'
        f'"fenceEpoch":1,"leaseExpiresAt":{{"seconds":{int((T1 + LEASE).timestamp())},"nanoseconds":0}}}}'
    )
    assert list(OUTPUTS["lease_acquired"].to_json()["leaseExpiresAt"]) == ["seconds", "nanoseconds"]
    assert json.dumps(OUTPUTS["lease_busy"].to_json(), separators=(",", ":")) == (
        '{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_busy","state":"leased"}'
    )


@pytest.mark.parametrize("outcome", list(OUTPUTS))
def test_outputs_are_frozen(outcome):
    output = OUTPUTS[outcome]
    before = output.to_json()
    for field in dataclasses.fields(output):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(output, field.name, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(output, field.name)
    with pytest.raises((AttributeError, TypeError)):
        output.should_execute = True
    assert output.to_json() == before


def test_nested_lease_expiry_is_frozen():
    expiry = OUTPUTS["lease_acquired"].lease_expires_at
    assert type(expiry) is LeaseTimestamp
    with pytest.raises(dataclasses.FrozenInstanceError):
        expiry.seconds = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        expiry.nanoseconds = 1
    with pytest.raises((AttributeError, TypeError)):
        expiry.extra = 1


def test_json_forms_are_fresh_copies():
    output = OUTPUTS["lease_acquired"]
    document = output.to_json()
    document["fenceEpoch"] = 99
    document["leaseExpiresAt"]["seconds"] = 0
    assert output.to_json()["fenceEpoch"] == 1 and output.to_json()["leaseExpiresAt"]["seconds"] != 0


@pytest.mark.parametrize("outcome", list(OUTPUTS))
def test_outputs_have_only_their_documented_fields(outcome):
    names = {field.name for field in dataclasses.fields(OUTPUTS[outcome])}
    allowed = {
        "journal_schema_version",
        "lifecycle_schema_version",
        "outcome",
        "state",
        "fence_epoch",
        "lease_expires_at",
    }
    assert names <= allowed
    assert not hasattr(OUTPUTS[outcome], "__dict__")


# -- errors -----------------------------------------------------------------------------------------------------------
MESSAGES = {
    "invalid_command_input": "The command input does not meet the documented input rules; correct it and retry.",
    "command_not_registered": "The command is not registered; register it before leasing or finishing it.",
    "command_conflict": (
        "This command identity is already registered with another command type, endpoint schema version "
        "or payload; use a new command id for a different command."
    ),
    "unrecognized_record": (
        "A stored journal record is not a valid record of this contract; it was left untouched for review."
    ),
    "lease_rejected": "The lease is not held by this worker at this fence epoch, or it has expired.",
    "terminal_conflict": "The command already reached a different terminal state or commitment.",
    "journal_unavailable": "The journal is unavailable; retry the whole call later with the same ids.",
}


def test_error_codes_are_exactly_the_specified_seven():
    assert set(ERROR_CODES) == set(MESSAGES) and len(ERROR_CODES) == 7


@pytest.mark.parametrize("code", list(MESSAGES))
def test_each_code_has_its_fixed_message_repr_and_attributes(code):
    error = CommandJournalError(code)
    assert str(error) == MESSAGES[code] == str(CommandJournalError(code))
    assert error.args == (MESSAGES[code],)
    assert repr(error) == f"CommandJournalError({code!r})"
    assert vars(error) == {"code": code}
    assert error.__cause__ is None and error.__context__ is None


def test_messages_are_distinct_per_code():
    assert len({str(CommandJournalError(code)) for code in MESSAGES}) == len(MESSAGES)


@pytest.mark.parametrize("code", list(MESSAGES))
def test_errors_survive_pickling(code):
    restored = pickle.loads(pickle.dumps(CommandJournalError(code)))
    assert type(restored) is CommandJournalError
    assert (restored.code, str(restored), restored.args, repr(restored)) == (
        code,
        MESSAGES[code],
        (MESSAGES[code],),
        f"CommandJournalError({code!r})",
    )


def test_error_type_subclasses_a_built_in_exception():
    direct_base = CommandJournalError.__mro__[1]
    assert issubclass(CommandJournalError, Exception)
    assert direct_base.__module__ == "builtins"


def test_an_unknown_code_is_refused_without_echoing_it():
    with pytest.raises(ValueError) as caught:
        CommandJournalError("CANARY-unknown-code")
    assert "CANARY" not in str(caught.value) and "CANARY" not in repr(caught.value.args)


# -- redaction canaries -----------------------------------------------------------------------------------------------
CALLER = "CANARY-caller-value-7f3e"
COMMAND_ID = "c0ffee00-dead-4bee-8f00-00000000cafe"
OTHER_ID = "c0ffee11-dead-4bee-8f00-00000000cafe"
LEASE_A = "facade00-beef-4abc-9def-0123456789ab"
LEASE_B = "facade11-beef-4abc-9def-0123456789ab"
REF_A = "deadbeef" * 8
REF_B = "feedface" * 8
PAYLOAD = {"CANARY-payload-key": "CANARY-payload-value-42", "nested": ["CANARY-payload-list", 7]}
CANARY = Command(value=CALLER, command_id=COMMAND_ID, payload=PAYLOAD, command_type="checkout_probe")
CANARY_OTHER = CANARY.but(command_id=OTHER_ID)

RAW = [CALLER, COMMAND_ID, OTHER_ID, LEASE_A, LEASE_B, REF_A, REF_B, "CANARY"]
RAW += [value.replace("-", "") for value in (COMMAND_ID, OTHER_ID, LEASE_A, LEASE_B)]
DERIVED = [
    CANARY.key_hash,
    CANARY_OTHER.key_hash,
    CANARY.payload_fingerprint,
    CANARY.owner(LEASE_A),
    CANARY.owner(LEASE_B),
    CANARY.commitment(REF_A),
    CANARY.commitment(REF_B),
    "checkoutRequests",
    "auditEvents",
    "lifecycle/current",
]


def _run(db: FakeFirestore, operation: str, at, command: Command = CANARY, **kwargs: Any) -> Any:
    kwargs.setdefault("lease", LEASE_A)
    kwargs.setdefault("ref", REF_A)
    return call(operation, db, at, command, **kwargs)


def _registered(db: FakeFirestore) -> None:
    _run(db, "register", T0)


def _leased(db: FakeFirestore) -> None:
    _registered(db)
    _run(db, "acquire", T1)


def _succeeded(db: FakeFirestore) -> None:
    _leased(db)
    _run(db, "complete", TC)


def _failed(db: FakeFirestore) -> None:
    _leased(db)
    _run(db, "fail", TC)


def _nothing(db: FakeFirestore) -> None:
    return None


def _malformed(db: FakeFirestore) -> None:
    _leased(db)
    db.seed(CANARY.audit_path(3), {"unexpected": True})


def _failing(error: Exception, **options: Any) -> Callable[[FakeFirestore], None]:
    def setup(db: FakeFirestore) -> None:
        _registered(db)
        for name, value in {"fail_commit_with": error, **options}.items():
            setattr(db, name, value)

    return setup


def _aborting(db: FakeFirestore) -> None:
    _registered(db)
    db.abort_commits = 100


def _raise_canary():
    raise RuntimeError(f"clock failed for {CALLER} {COMMAND_ID}")


FIRESTORE_DETAIL = f"409 Document already exists: projects/p/databases/(default)/documents/{CANARY.root_path} {CALLER}"

SCENARIOS = [
    # (id, setup, operation, time, call overrides, expected outcome or code)
    ("register-new", _nothing, "register", T0, {}, "registered_new"),
    ("register-existing", _leased, "register", TC, {}, "registered_existing"),
    ("acquire-first", _registered, "acquire", T1, {}, "lease_acquired"),
    ("acquire-recovery", _leased, "acquire", TC, {}, "lease_acquired"),
    ("acquire-busy", _leased, "acquire", TC, {"lease": LEASE_B}, "lease_busy"),
    ("acquire-takeover", _leased, "acquire", T2, {"lease": LEASE_B}, "lease_acquired"),
    ("acquire-terminal", _succeeded, "acquire", T2, {"lease": LEASE_B}, "terminal_succeeded"),
    ("complete", _leased, "complete", TC, {}, "terminal_succeeded"),
    ("complete-retry", _succeeded, "complete", T2, {}, "terminal_succeeded"),
    ("fail", _leased, "fail", TC, {}, "terminal_failed_final"),
    ("fail-retry", _failed, "fail", T2, {}, "terminal_failed_final"),
    (
        "invalid-caller-control-char",
        _nothing,
        "register",
        T0,
        {"caller_scope": {"kind": "firebase_uid", "value": CALLER + "\x00"}},
        "invalid_command_input",
    ),
    (
        "invalid-caller-too-long",
        _nothing,
        "register",
        T0,
        {"caller_scope": {"kind": "firebase_uid", "value": CALLER * 10}},
        "invalid_command_input",
    ),
    (
        "invalid-caller-extra-key",
        _nothing,
        "register",
        T0,
        {"caller_scope": {"kind": "firebase_uid", "value": CALLER, "CANARY-key": CALLER}},
        "invalid_command_input",
    ),
    ("invalid-command-id", _nothing, "register", T0, {"command_id": COMMAND_ID.upper()}, "invalid_command_input"),
    ("invalid-command-type", _nothing, "register", T0, {"command_type": "CANARY-type"}, "invalid_command_input"),
    (
        "invalid-payload-float",
        _nothing,
        "register",
        T0,
        {"payload": {**PAYLOAD, "CANARY-float": 1.5}},
        "invalid_command_input",
    ),
    (
        "invalid-payload-too-big",
        _nothing,
        "register",
        T0,
        {"payload": {"CANARY": "CANARY" * 6000}},
        "invalid_command_input",
    ),
    ("invalid-lease-equals-command", _registered, "acquire", T1, {"lease": COMMAND_ID}, "invalid_command_input"),
    ("invalid-lease-uppercase", _registered, "acquire", T1, {"lease": LEASE_A.upper()}, "invalid_command_input"),
    ("invalid-reference", _leased, "complete", TC, {"ref": REF_A.upper()}, "invalid_command_input"),
    ("invalid-fence", _leased, "fail", TC, {"fence": True}, "invalid_command_input"),
    ("not-registered", _nothing, "acquire", T1, {}, "command_not_registered"),
    ("conflict-payload", _leased, "acquire", TC, {"payload": {"CANARY-other": CALLER}}, "command_conflict"),
    ("conflict-type", _registered, "register", T0, {"command_type": "refund_probe"}, "command_conflict"),
    ("unrecognized", _malformed, "complete", TC, {}, "unrecognized_record"),
    ("lease-rejected-holder", _leased, "complete", TC, {"lease": LEASE_B}, "lease_rejected"),
    ("lease-rejected-expired", _leased, "fail", T2, {}, "lease_rejected"),
    ("terminal-conflict", _succeeded, "complete", T2, {"ref": REF_B}, "terminal_conflict"),
    (
        "unavailable-firestore",
        _failing(api_exceptions.AlreadyExists(FIRESTORE_DETAIL)),
        "acquire",
        T1,
        {},
        "journal_unavailable",
    ),
    (
        "unavailable-after-apply",
        _failing(api_exceptions.ServiceUnavailable(FIRESTORE_DETAIL), apply_before_failing=True),
        "acquire",
        T1,
        {},
        "journal_unavailable",
    ),
    (
        "unavailable-read",
        _failing(None, fail_reads_with=api_exceptions.InternalServerError(FIRESTORE_DETAIL)),
        "fail",
        T1,
        {},
        "journal_unavailable",
    ),
    ("unavailable-exhausted", _aborting, "acquire", T1, {}, "journal_unavailable"),
    ("unavailable-clock", _registered, "acquire", T1, {"clock": _raise_canary}, "journal_unavailable"),
    ("unavailable-earlier-clock", _registered, "acquire", T0 - timedelta(seconds=1), {}, "journal_unavailable"),
]


def _assert_clean(text: str, secrets: list[str], where: str) -> None:
    leaked = [secret for secret in secrets if secret.lower() in text.lower()]
    assert leaked == [], f"{where} leaks {leaked}"


@pytest.mark.parametrize(
    ("setup", "operation", "at", "overrides", "expected"),
    [pytest.param(*scenario[1:], id=scenario[0]) for scenario in SCENARIOS],
)
def test_no_canary_escapes(setup, operation, at, overrides, expected, caplog, monkeypatch):
    patch_backoff(monkeypatch)
    caplog.set_level(logging.DEBUG)
    db = FakeFirestore()
    setup(db)  # its operations count too: nothing from the reference may log, ever
    try:
        result = _run(db, operation, at, **overrides)
    except CommandJournalError as error:
        assert error.code == expected
        assert str(error) == MESSAGES[error.code]
        assert error.__cause__ is None and error.__context__ is None
        assert not hasattr(error, "__notes__")
        surface = [str(error), repr(error), repr(error.args), repr(vars(error)), repr(pickle.dumps(error))]
        _assert_clean(" ".join(surface), RAW + DERIVED, "the error")
    else:
        assert result.to_json()["outcome"] == expected
        _assert_clean(str(result.to_json()) + repr(result), RAW + DERIVED, "the output")
    _assert_clean(repr(db.dump()), RAW, "the stored documents")
    assert [record for record in caplog.records if record.name.split(".")[0] == "reference"] == []
    _assert_clean(caplog.text, RAW + DERIVED, "the log")


def test_stored_documents_hold_only_derived_values():
    db = FakeFirestore()
    _succeeded(db)
    stored = db.dump()
    assert set(stored) == {
        CANARY.root_path,
        CANARY.audit_path(1),
        CANARY.lifecycle_path,
        CANARY.audit_path(2),
        CANARY.audit_path(3),
    }
    text = repr(stored)
    _assert_clean(text, RAW, "the stored documents")
    assert CANARY.payload_fingerprint in text and CANARY.commitment(REF_A) in text  # as the seeds specify
    audits = repr([stored[CANARY.audit_path(revision)] for revision in (1, 2, 3)])
    _assert_clean(audits, [CANARY.owner(LEASE_A), CANARY.commitment(REF_A), CANARY.payload_fingerprint], "an audit")


def test_lone_surrogate_payload_error_carries_no_chained_context():
    """SPEC.md "Errors": no chained cause carries a raw payload. `raise ... from None` still sets __context__."""
    db = FakeFirestore()
    with pytest.raises(CommandJournalError) as caught:
        _run(db, "register", T0, payload={"k": "CANARY-payload\ud800"})
    assert caught.value.code == "invalid_command_input"
    assert caught.value.__context__ is None
    assert db.calls == []


def test_lone_surrogate_caller_value_is_invalid_input_without_leaking():
    """SPEC.md: any input failure is invalid_command_input, from one error type carrying no raw caller value."""
    db = FakeFirestore()
    try:
        _run(db, "register", T0, caller_scope={"kind": "firebase_uid", "value": CALLER + "\udc80"})
    except CommandJournalError as error:
        assert error.code == "invalid_command_input"
        assert error.__context__ is None
    except Exception as error:  # noqa: BLE001 - the point is which type escapes
        pytest.fail(f"{type(error).__name__} escaped instead of CommandJournalError (it carries the raw value)")
    else:
        pytest.fail("a caller value that cannot be UTF-8 encoded was accepted")
    assert db.calls == []
