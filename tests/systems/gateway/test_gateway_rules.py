"""The browser boundary of the gateway journal (docs/gateway-contract.md, G34): under the repository's
firestore.rules no browser identity (unauthenticated, anonymous, member, admin claim) can get, list, create,
update or delete a gateway record or event, nor run a collection-group query over `journals` or `events`;
a denied write changes nothing. The same requests under permissive rules are allowed, so the denials come
from the rules, not from the request shape.

Here the documents are the reference's own (a begun and claimed journal) and the requests are spelled out;
the rules matrix (fencecheck/runners/rules_probe.py, tests/emulator/test_rules.py) probes the same paths from the
gateway plug-in's `browser_denied`, on synthetic documents, and its evidence lists them.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fencecheck.runners.rules_probe import (
    BROWSER_IDENTITIES,
    TARGET_SYSTEMS,
    emulator_token,
    identity_claims,
    rules_matrix,
)
from fencecheck.systems.gateway.plugin import GATEWAY
from reference.gateway.identity import event_path, record_path
from tests.systems.gateway.builders import NAMESPACE, REF, T0, A, begin, claim
from tests.systems.gateway.lockstep import typed_docs
from tests.systems.gateway.test_gateway_reference import call_reference, stored_documents

pytestmark = pytest.mark.emulator
RULES = (Path(__file__).resolve().parents[3] / "firestore.rules").read_text("utf-8")
PERMISSIVE = """rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /{document=**} {
      allow read, write: if true;
    }
  }
}
"""
RECORD = record_path(NAMESPACE, REF.journal_key)
EVENT = event_path(NAMESPACE, REF.journal_key, 1)
OTHER_RECORD = record_path(NAMESPACE, "f" * 64)
REQUESTS = (
    "get namespace",
    "get record",
    "get event",
    "list journals",
    "list events",
    "create record",
    "create event",
    "update record",
    "delete record",
    "delete event",
    "query journals",
    "query events",
)


def _send(base_url: str, project: str, identity: str, name: str) -> int:
    documents = f"{base_url}/v1/projects/{project}/databases/(default)/documents"
    verb, what = name.split(" ")
    body: dict[str, Any] | None = None
    fields = {"fields": {"probe": {"stringValue": "x"}}}
    if verb == "get":
        method, url = "GET", {"namespace": f"gatewayNamespaces/{NAMESPACE}", "record": RECORD, "event": EVENT}[what]
        url = f"{documents}/{url}"
    elif verb == "list":
        method, url = "GET", f"{documents}/{RECORD.rsplit('/', 1)[0] if what == 'journals' else RECORD + '/events'}"
    elif verb == "create":
        parent, _, doc_id = (
            OTHER_RECORD if what == "record" else event_path(NAMESPACE, REF.journal_key, 9)
        ).rpartition("/")
        method, url, body = "POST", f"{documents}/{parent}?" + urllib.parse.urlencode({"documentId": doc_id}), fields
    elif verb == "update":
        query = urllib.parse.urlencode({"updateMask.fieldPaths": "probe", "currentDocument.exists": "true"})
        method, url, body = "PATCH", f"{documents}/{RECORD}?{query}", fields
    elif verb == "delete":
        method, url = "DELETE", f"{documents}/{RECORD if what == 'record' else EVENT}?currentDocument.exists=true"
    else:
        method, url = "POST", f"{documents}:runQuery"
        body = {"structuredQuery": {"from": [{"collectionId": what, "allDescendants": True}]}}
    headers = {"Accept": "application/json"}
    if identity != "unauthenticated":
        claims = identity_claims(identity, project, now=int(time.time()))
        headers["Authorization"] = "Bearer " + emulator_token(claims)
    data = None if body is None else json.dumps(body).encode("utf-8")
    if data is not None:
        headers["Content-Type"] = "application/json"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    try:
        with opener.open(urllib.request.Request(url, data=data, method=method, headers=headers), timeout=10) as reply:
            return reply.status
    except urllib.error.HTTPError as error:
        error.close()
        return error.code


def _seed(db: Any) -> None:
    for op in (begin(T0), claim(A, T0)):
        assert not isinstance(call_reference(db, op), str)


@pytest.mark.parametrize("identity", BROWSER_IDENTITIES)
def test_browser_identities_are_denied_every_gateway_path(emulator, project_id, firestore_db, identity):
    emulator.load_rules(project_id, RULES)
    _seed(firestore_db)
    before = typed_docs(stored_documents(firestore_db))
    statuses = {name: _send(emulator.base_url, project_id, identity, name) for name in REQUESTS}
    assert statuses == dict.fromkeys(REQUESTS, 403), statuses
    assert typed_docs(stored_documents(firestore_db)) == before


def test_control_permissive_rules_allow_the_same_requests(emulator, project_id, firestore_db):
    emulator.load_rules(project_id, PERMISSIVE)
    _seed(firestore_db)
    reads = [name for name in REQUESTS if name.split(" ")[0] in ("get", "list", "query")]
    statuses = {name: _send(emulator.base_url, project_id, "member", name) for name in reads}
    # the namespace document is never written: its GET is NOT_FOUND, which is an allowed read
    assert statuses == {name: 404 if name == "get namespace" else 200 for name in reads}, statuses
    assert _send(emulator.base_url, project_id, "member", "update record") == 200


def test_a_broad_allow_appended_to_the_rules_would_open_the_gateway_paths(emulator, project_id, firestore_db):
    # Rules are OR-ed: an `if false` overrides nothing, so the test above, not the rules text, is the guard.
    opened = RULES.rstrip().removesuffix("}").rstrip().removesuffix("}")
    opened += "\n    match /{document=**} {\n      allow read: if request.auth != null;\n    }\n  }\n}\n"
    emulator.load_rules(project_id, opened)
    _seed(firestore_db)
    assert _send(emulator.base_url, project_id, "member", "get record") == 200
    assert _send(emulator.base_url, project_id, "member", "query events") == 200


def test_the_rules_matrix_probes_the_gateways_paths(emulator, project_id):
    targets = [t for t, _ in (*GATEWAY.browser_denied.documents, *GATEWAY.browser_denied.groups)]
    assert [t for t, system in TARGET_SYSTEMS.items() if system == "gateway"] == targets
    # every path and group of firestore.rules' gateway section, as the matrix spells them
    assert dict(GATEWAY.browser_denied.groups) == {"group_gateway_namespaces": "gatewayNamespaces",
                                                   "group_journals": "journals", "group_events": "events"}
    emulator.load_rules(project_id, RULES)
    matrix = rules_matrix(emulator.base_url, project_id)
    probed = {r.target for r in matrix.results}
    assert set(targets) <= probed and matrix.boundary_holds
    for target in targets:
        outcomes = {(r.identity, r.operation): r.outcome for r in matrix.results if r.target == target}
        assert outcomes == {key: "allowed" if key[0] == "owner" else "denied" for key in outcomes}, target
        assert {identity for identity, _ in outcomes} == {*BROWSER_IDENTITIES, "owner"}
