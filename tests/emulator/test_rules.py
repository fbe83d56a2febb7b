"""Firestore Rules browser boundary (SPEC "Firestore Rules"; seed 000 "Firestore Rules boundary").

Browser identities (unauthenticated, anonymous, signed-in member, member with an ``admin`` custom claim)
must get HTTP 403 PERMISSION_DENIED for get, list, create, update and delete of the registration root,
``lifecycle/current`` and the revision-1 audit event, and for collection-group queries over
``lifecycle``, ``auditEvents`` and ``checkoutRequests``; denied writes must leave the documents exactly as
they were. The owner token (the emulator's Admin path) must still work.

Controls that keep these tests honest:
- a project with permissive rules, and a project with no rules at all, must make the very same probe
  report "allowed" for every case (a probe that always says "denied" fails here, and the denials above
  are shown to come from the rules rather than from the request shape);
- each identity's token must reach the rules as that identity (a whoami rule set), so the admin-claim
  denial is a denial of a real admin claim, not of an unparsed token;
- appending one broad allow to firestore.rules must open the boundary (rules are OR-ed, an ``if false``
  overrides nothing), which is why these tests, not the rules text, are the guard against later edits.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
from pathlib import Path

import pytest

from fencecheck.errors import UsageError
from fencecheck.report.artifacts import write_rules_matrix
from fencecheck.runners.rules_probe import (
    BROWSER_IDENTITIES,
    DOCUMENT_TARGETS,
    PROBE_COMMAND_HASH,
    PROBE_CREATE_HASH,
    RulesProbe,
    RulesProbeError,
    emulator_token,
    identity_claims,
    probe_cases,
    rules_matrix,
)

pytestmark = pytest.mark.emulator

RULES_PATH = Path(__file__).resolve().parents[2] / "firestore.rules"

PERMISSIVE_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /{document=**} {
      allow read, write: if true;
    }
  }
}
"""

# Each browser identity may read exactly its own whoami document, and only if its token reaches the
# rules with the uid, sign-in provider, email and (absent or present) admin claim the probe intends.
WHOAMI_RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /whoami/unauthenticated {
      allow get: if request.auth == null;
    }
    match /whoami/anonymous {
      allow get: if request.auth != null
        && request.auth.uid == 'rules-probe-anonymous'
        && request.auth.token.firebase.sign_in_provider == 'anonymous'
        && !('email' in request.auth.token)
        && !('admin' in request.auth.token);
    }
    match /whoami/member {
      allow get: if request.auth != null
        && request.auth.uid == 'rules-probe-member'
        && request.auth.token.firebase.sign_in_provider == 'password'
        && request.auth.token.email == 'rules-probe-member@example.test'
        && request.auth.token.email_verified == true
        && !('admin' in request.auth.token);
    }
    match /whoami/admin_claim {
      allow get: if request.auth != null
        && request.auth.uid == 'rules-probe-admin-claim'
        && request.auth.token.firebase.sign_in_provider == 'password'
        && request.auth.token.admin == true;
    }
  }
}
"""

BROAD_ALLOW = """
    // Appended by the test: a broad allow that also matches the journal paths.
    match /{anyDocument=**} {
      allow read, write: if request.auth != null;
    }
"""

BROWSER_CASES = list(probe_cases(BROWSER_IDENTITIES))
OWNER_CASES = list(probe_cases(("owner",)))


def _case_id(case: tuple[str, str, str]) -> str:
    identity, operation, target = case
    return f"{identity}-{operation}-{target}"


def _rules_text() -> str:
    return RULES_PATH.read_text(encoding="utf-8")


def _seed(db, probe: RulesProbe) -> None:
    """Seed the probe documents through the Python client (Admin path): every plug-in's document targets."""
    for path, kind in zip(probe.seeded_paths(), DOCUMENT_TARGETS, strict=True):
        db.document(path).set({"rulesProbe": "seeded", "kind": kind, "revision": 1})
    for path in probe.create_paths():
        db.document(path).delete()


def _stored(db, probe: RulesProbe) -> dict[str, tuple]:
    """What the Admin path sees at every probe path: (exists, fields, update_time)."""
    out = {}
    for path in (*probe.seeded_paths(), *probe.create_paths()):
        snap = db.document(path).get()
        out[path] = (snap.exists, snap.to_dict() if snap.exists else None, snap.update_time)
    return out


# ------------------------------------------------------------------------------------------------
# Rules text
# ------------------------------------------------------------------------------------------------


def test_firestore_rules_compiles(emulator, project_id):
    emulator.load_rules(project_id, _rules_text())


def test_load_rules_rejects_a_rules_compile_error(emulator, project_id):
    # Shows that the compile test above can fail: the loader really compiles what it is given.
    broken = _rules_text().rstrip()
    assert broken.endswith("}")
    broken = broken[:-1]  # drop the closing brace of `service cloud.firestore`
    with pytest.raises(UsageError):
        emulator.load_rules(project_id, broken)


# ------------------------------------------------------------------------------------------------
# The boundary under firestore.rules
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", BROWSER_CASES, ids=_case_id)
def test_browser_identity_is_denied(emulator, project_id, firestore_db, case):
    identity, operation, target = case
    probe = RulesProbe(emulator.base_url, project_id)
    _seed(firestore_db, probe)
    emulator.load_rules(project_id, _rules_text())
    before = _stored(firestore_db, probe)

    result = probe.check(identity, operation, target)

    assert (result.http_status, result.error_status) == (403, "PERMISSION_DENIED"), result.to_json()
    assert result.permission_denied and result.outcome == "denied"
    assert result.document_count is None
    # A denied write changed nothing: same fields, same update times, create paths still absent.
    assert _stored(firestore_db, probe) == before


@pytest.mark.parametrize("case", OWNER_CASES, ids=_case_id)
def test_owner_admin_path_still_works(emulator, project_id, firestore_db, case):
    identity, operation, target = case
    probe = RulesProbe(emulator.base_url, project_id)
    _seed(firestore_db, probe)
    emulator.load_rules(project_id, _rules_text())

    result = probe.check(identity, operation, target)

    assert result.outcome == "allowed", result.to_json()
    if operation in ("get", "list", "query"):
        assert result.document_count == 1
    if operation == "create":
        assert firestore_db.document(probe.document_path(target, for_create=True)).get().exists
    if operation == "update":
        assert firestore_db.document(probe.document_path(target)).get().to_dict()["rulesProbe"] == "update"
    if operation == "delete":
        assert not firestore_db.document(probe.document_path(target)).get().exists


def test_repository_rules_matrix_holds(emulator, project_id):
    emulator.load_rules(project_id, _rules_text())

    matrix = rules_matrix(emulator.base_url, project_id)
    write_rules_matrix(matrix, RULES_PATH.parent / "artifacts")  # evidence for the report, before any assert

    assert len(matrix.results) == len(BROWSER_CASES) + len(OWNER_CASES)
    assert [r.case_id for r in matrix.deviations()] == []
    for r in matrix.results:
        if r.identity == "owner":
            assert r.allowed, r.to_json()
        else:
            assert (r.http_status, r.error_status) == (403, "PERMISSION_DENIED"), r.to_json()
    assert matrix.documents_unchanged is True
    assert matrix.boundary_holds
    table = matrix.table()
    assert table["admin_claim"]["lifecycle"] == {op: "denied" for op in ("get", "list", "create", "update", "delete")}
    assert table["member"]["group_lifecycle"] == {"query": "denied"}
    # The report data names no document: no command hash, no audit id.
    text = json.dumps(matrix.to_json())
    assert PROBE_COMMAND_HASH not in text and PROBE_CREATE_HASH not in text


# ------------------------------------------------------------------------------------------------
# Controls: the same probe must report "allowed" where the rules allow
# ------------------------------------------------------------------------------------------------


def _assert_every_browser_case_allowed(matrix) -> None:
    not_allowed = [(r.case_id, r.http_status, r.error_status) for r in matrix.results if r.outcome != "allowed"]
    assert not_allowed == []
    assert [r.case_id for r in matrix.results] == [_case_id(c) for c in BROWSER_CASES]
    for r in matrix.results:
        if r.operation in ("get", "list", "query"):
            assert r.document_count == 1, r.to_json()  # the read reached the seeded document
    assert matrix.documents_unchanged is False  # the browser writes really went through
    assert not matrix.boundary_holds


def test_negative_control_permissive_rules_are_reported_allowed(emulator, project_id):
    # A second project, as unique as project_id, within the 30-character id convention.
    permissive_project = "demo-open-" + hashlib.sha256(project_id.encode("utf-8")).hexdigest()[:20]
    emulator.load_rules(permissive_project, PERMISSIVE_RULES)
    try:
        matrix = rules_matrix(emulator.base_url, permissive_project, identities=BROWSER_IDENTITIES)
    finally:
        emulator.reset(permissive_project)
    _assert_every_browser_case_allowed(matrix)


def test_negative_control_project_without_rules_is_open(emulator, project_id):
    # The basis of every denial above: with no rules loaded the emulator allows the same requests.
    matrix = rules_matrix(emulator.base_url, project_id, identities=BROWSER_IDENTITIES)
    _assert_every_browser_case_allowed(matrix)


def test_a_broad_allow_elsewhere_would_open_the_boundary(emulator, project_id):
    # Rules are OR-ed: the explicit `if false` denies cannot veto a later broad allow. This is why the
    # denial tests above are the guard, and why firestore.rules says not to add such an allow.
    text = _rules_text().rstrip()
    widened, count = re.subn(r"\}\s*\}\s*$", BROAD_ALLOW + "  }\n}\n", text)
    assert count == 1
    emulator.load_rules(project_id, widened)

    matrix = rules_matrix(emulator.base_url, project_id, identities=("member", "admin_claim"))

    assert matrix.outcome("member", "get", "lifecycle") == "allowed"
    assert matrix.outcome("admin_claim", "update", "lifecycle") == "allowed"
    assert matrix.outcome("member", "query", "group_lifecycle") == "allowed"
    assert not matrix.boundary_holds


def test_identity_tokens_reach_rules_as_intended(emulator, project_id, firestore_db):
    for identity in BROWSER_IDENTITIES:
        firestore_db.document(f"whoami/{identity}").set({"rulesProbe": "whoami"})
    emulator.load_rules(project_id, WHOAMI_RULES)
    probe = RulesProbe(emulator.base_url, project_id)

    seen = {
        (caller, doc): probe.get_document(caller, f"whoami/{doc}").outcome
        for caller in (*BROWSER_IDENTITIES, "owner")
        for doc in BROWSER_IDENTITIES
    }

    expected = {
        (caller, doc): "allowed" if caller in ("owner", doc) else "denied"
        for caller in (*BROWSER_IDENTITIES, "owner")
        for doc in BROWSER_IDENTITIES
    }
    assert seen == expected


# ------------------------------------------------------------------------------------------------
# Probe mechanics (no rules involved)
# ------------------------------------------------------------------------------------------------


def _b64decode(segment: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


def test_emulator_token_is_unsigned_with_trailing_dot():
    claims = identity_claims("admin_claim", "demo-rules", now=1_700_000_000)
    token = emulator_token(claims)
    header, body, signature = token.split(".")
    assert token.endswith(".") and signature == ""
    assert _b64decode(header) == {"alg": "none", "typ": "JWT"}
    decoded = _b64decode(body)
    assert decoded == claims
    assert decoded["admin"] is True and decoded["sub"] == decoded["user_id"]
    assert decoded["aud"] == "demo-rules" and decoded["iss"] == "https://securetoken.google.com/demo-rules"
    assert decoded["exp"] > decoded["iat"]
    assert identity_claims("anonymous", "demo-rules", now=1)["firebase"]["sign_in_provider"] == "anonymous"
    assert "admin" not in identity_claims("member", "demo-rules", now=1)


def test_probe_errors_carry_no_address_or_ids():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    probe = RulesProbe(f"http://127.0.0.1:{closed_port}", "demo-rules-closed", timeout=2.0)
    with pytest.raises(RulesProbeError) as excinfo:
        probe.check("member", "get", "lifecycle")
    text = str(excinfo.value) + repr(excinfo.value)
    for leaked in (str(closed_port), PROBE_COMMAND_HASH, "checkoutRequests", "demo-rules-closed"):
        assert leaked not in text
    assert excinfo.value.__cause__ is None and excinfo.value.__suppress_context__


@pytest.mark.parametrize(
    "address", ["https://127.0.0.1:8080", "http://example.com:8080", "127.0.0.1", "http://127.0.0.1:8080/x"]
)
def test_probe_refuses_non_loopback_or_malformed_addresses(address):
    with pytest.raises(UsageError):
        RulesProbe(address, "demo-rules")
