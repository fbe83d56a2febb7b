"""Probe the Firestore Rules browser boundary on the emulator, one request per case.

The Python Firestore client always authenticates to the emulator as ``owner`` and so bypasses security
rules. Browser clients are therefore imitated with the emulator's REST API and unsigned ID tokens:
``base64url({"alg":"none","typ":"JWT"}) + "." + base64url(claims) + "."`` (the trailing dot, an empty
signature, is required: without it the emulator answers 400 ``invalid jwt``). The emulator does not
check ``exp``, ``aud``, ``iss`` or a signature; it reads ``sub`` as ``request.auth.uid`` and every other
claim into ``request.auth.token``. The tokens below still carry realistic values for all of them.

Identities:
    unauthenticated  no Authorization header (a browser before any sign-in)
    anonymous        Firebase anonymous sign-in
    member           signed in with email/password
    admin_claim      a member whose token carries the custom claim ``"admin": true``
    owner            ``Authorization: Bearer owner``: the emulator's stand-in for the Admin SDK / IAM
                     path, which rules do not govern (the "server code still works" control)

Targets: what every plug-in says a browser client must be denied (`SystemPlugin.browser_denied`), documents
of one synthetic id (a 64-hex hash, never a real record) and collection groups, in registry order. The
journal's:
    root             checkoutRequests/{hash}
    lifecycle        checkoutRequests/{hash}/lifecycle/current
    audit            auditEvents/commerce_command_{hash}_0000000001
    group_lifecycle  collection-group query over ``lifecycle``
    group_audit      collection-group query over ``auditEvents``
    group_root       collection-group query over ``checkoutRequests``
the gateway's (docs/gateway-contract.md, G34):
    gateway_namespace         gatewayNamespaces/{hash}
    gateway_record            gatewayNamespaces/{hash}/journals/{hash}
    gateway_event             gatewayNamespaces/{hash}/journals/{hash}/events/0000000001
    group_gateway_namespaces  collection-group query over ``gatewayNamespaces``
    group_journals            collection-group query over ``journals``
    group_events              collection-group query over ``events``

Operations on a document target: get, list (its parent collection), create (POST with documentId),
update (PATCH with an update mask and an exists precondition), delete (with an exists precondition).
Operation on a group target: query (``:runQuery`` with ``allDescendants: true``). get/list/update/delete
act on the seeded documents of ``command_hash``; create acts on the same paths under ``create_hash``,
which are kept absent, so that an allowed create is a clean 200 rather than ``ALREADY_EXISTS``.

Results keep the HTTP status, the canonical error status name (``PERMISSION_DENIED``, ...) and, for a
successful read, how many documents came back. They never keep a response body, an error message (the
emulator's messages quote document paths and rule evaluation details), a document id or field values.
Bad arguments raise ``fencecheck.errors.UsageError``; a request that cannot be carried out (emulator
unreachable, owner-side seeding failed) raises ``RulesProbeError``. Both carry fixed messages only. Apart
from those two exception classes and the plug-in registry (for the targets), only the standard library is
used.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fencecheck.emulator.discovery import demo_project_id, is_loopback_host
from fencecheck.errors import FencecheckError, UsageError

__all__ = [
    "BROWSER_IDENTITIES",
    "DOCUMENT_OPERATIONS",
    "DOCUMENT_PATHS",
    "DOCUMENT_TARGETS",
    "GROUP_COLLECTIONS",
    "GROUP_OPERATIONS",
    "GROUP_TARGETS",
    "IDENTITIES",
    "PROBE_COMMAND_HASH",
    "PROBE_CREATE_HASH",
    "ProbeResult",
    "RulesMatrix",
    "RulesProbe",
    "RulesProbeError",
    "TARGET_SYSTEMS",
    "boundary_targets",
    "emulator_token",
    "identity_claims",
    "probe_cases",
    "rules_matrix",
]

BROWSER_IDENTITIES: tuple[str, ...] = ("unauthenticated", "anonymous", "member", "admin_claim")
IDENTITIES: tuple[str, ...] = (*BROWSER_IDENTITIES, "owner")



def boundary_targets() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(document target -> path template, group target -> collection id, target -> system) over every
    plug-in's `browser_denied`, in registry order; a target name two plug-ins use is an error."""
    from fencecheck.plugin.registry import SYSTEM_NAMES, plugin  # the plug-ins name the paths; the probe only asks

    documents: dict[str, str] = {}
    groups: dict[str, str] = {}
    systems: dict[str, str] = {}
    for name in SYSTEM_NAMES:
        boundary = plugin(name).browser_denied
        for target, value, into in (*((t, p, documents) for t, p in boundary.documents),
                                    *((t, g, groups) for t, g in boundary.groups)):
            if target in systems:
                raise ValueError(f"rules probe target {target!r} is named by both {systems[target]} and {name}: "
                                 "give each plug-in's targets names of their own")
            into[target], systems[target] = value, name
    return documents, groups, systems


DOCUMENT_PATHS, GROUP_COLLECTIONS, TARGET_SYSTEMS = boundary_targets()
DOCUMENT_TARGETS: tuple[str, ...] = tuple(DOCUMENT_PATHS)
GROUP_TARGETS: tuple[str, ...] = tuple(GROUP_COLLECTIONS)
TARGETS: tuple[str, ...] = (*DOCUMENT_TARGETS, *GROUP_TARGETS)

DOCUMENT_OPERATIONS: tuple[str, ...] = ("get", "list", "create", "update", "delete")
GROUP_OPERATIONS: tuple[str, ...] = ("query",)
MUTATING_OPERATIONS: frozenset[str] = frozenset({"create", "update", "delete"})

# Synthetic, fixed command key hashes: not derived from any real command.
PROBE_COMMAND_HASH = hashlib.sha256(b"fencecheck rules probe: seeded command").hexdigest()
PROBE_CREATE_HASH = hashlib.sha256(b"fencecheck rules probe: absent command").hexdigest()

PROBE_FIELD = "rulesProbe"
OWNER_TOKEN = "owner"

_HASH_RE = re.compile(r"^[0-9a-f]{64}$")
_PROJECT_RE = re.compile(r"^[a-z][a-z0-9-]{0,99}$")
_STATUS_NAME_RE = re.compile(r"^[A-Z][A-Z_]{0,39}$")
_DOC_PATH_SEGMENT_RE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")

_UIDS: Mapping[str, str] = {
    "anonymous": "rules-probe-anonymous",
    "member": "rules-probe-member",
    "admin_claim": "rules-probe-admin-claim",
}
_EMAILS: Mapping[str, str] = {
    "member": "rules-probe-member@example.test",
    "admin_claim": "rules-probe-admin-claim@example.test",
}


class RulesProbeError(FencecheckError, RuntimeError):
    """A probe request could not be carried out. The message is fixed text: no URL, path, id or body."""


# --------------------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------------------


def _b64url_json(value: Mapping[str, Any]) -> str:
    raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def emulator_token(claims: Mapping[str, Any]) -> str:
    """An unsigned emulator ID token: header.claims. with an empty signature after the last dot."""
    return _b64url_json({"alg": "none", "typ": "JWT"}) + "." + _b64url_json(claims) + "."


def identity_claims(identity: str, project_id: str, *, now: int) -> dict[str, Any]:
    """The ID-token claims of a browser identity (not defined for unauthenticated or owner)."""
    if identity not in _UIDS:
        raise UsageError("identity has no token claims")
    _check_project(project_id)
    uid = _UIDS[identity]
    claims: dict[str, Any] = {
        "iss": f"https://securetoken.google.com/{project_id}",
        "aud": project_id,
        "auth_time": now,
        "iat": now,
        "exp": now + 3600,
        "sub": uid,
        "user_id": uid,
    }
    if identity == "anonymous":
        claims["provider_id"] = "anonymous"
        claims["firebase"] = {"sign_in_provider": "anonymous", "identities": {}}
    else:
        email = _EMAILS[identity]
        claims["email"] = email
        claims["email_verified"] = True
        claims["firebase"] = {"sign_in_provider": "password", "identities": {"email": [email]}}
        if identity == "admin_claim":
            claims["admin"] = True
    return claims


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one request as one identity got back. No body, message, path or id is kept."""

    identity: str
    operation: str
    target: str
    http_status: int
    error_status: str | None
    document_count: int | None

    @property
    def permission_denied(self) -> bool:
        return self.http_status == 403 and self.error_status == "PERMISSION_DENIED"

    @property
    def allowed(self) -> bool:
        return 200 <= self.http_status < 300

    @property
    def outcome(self) -> str:
        """``allowed``, ``denied`` (403 PERMISSION_DENIED) or ``error`` (anything else)."""
        if self.allowed:
            return "allowed"
        if self.permission_denied:
            return "denied"
        return "error"

    @property
    def case_id(self) -> str:
        return f"{self.identity}-{self.operation}-{self.target}"

    def to_json(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "operation": self.operation,
            "target": self.target,
            "outcome": self.outcome,
            "httpStatus": self.http_status,
            "errorStatus": self.error_status,
            "documentCount": self.document_count,
        }


@dataclass(frozen=True, slots=True)
class RulesMatrix:
    """Every probed (identity, operation, target) case, in the order it ran.

    ``documents_unchanged`` is True when the owner's view of the seeded documents and the absent create
    paths (fields and update times) was the same before and after the browser identities ran; None when
    no browser identity ran.
    """

    results: tuple[ProbeResult, ...]
    documents_unchanged: bool | None

    def result(self, identity: str, operation: str, target: str) -> ProbeResult:
        for item in self.results:
            if (item.identity, item.operation, item.target) == (identity, operation, target):
                return item
        raise KeyError(f"{identity}-{operation}-{target}")

    def outcome(self, identity: str, operation: str, target: str) -> str:
        return self.result(identity, operation, target).outcome

    def expected_outcome(self, identity: str) -> str:
        """The boundary's expectation: browser identities denied, the owner (Admin path) allowed."""
        return "allowed" if identity == "owner" else "denied"

    def deviations(self) -> tuple[ProbeResult, ...]:
        """Cases whose outcome is not the boundary's expectation."""
        return tuple(r for r in self.results if r.outcome != self.expected_outcome(r.identity))

    @property
    def boundary_holds(self) -> bool:
        return not self.deviations() and self.documents_unchanged is not False

    def table(self) -> dict[str, dict[str, dict[str, str]]]:
        """identity -> target -> operation -> outcome."""
        out: dict[str, dict[str, dict[str, str]]] = {}
        for r in self.results:
            out.setdefault(r.identity, {}).setdefault(r.target, {})[r.operation] = r.outcome
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "identities": list(dict.fromkeys(r.identity for r in self.results)),
            "targets": list(dict.fromkeys(r.target for r in self.results)),
            "boundaryHolds": self.boundary_holds,
            "documentsUnchanged": self.documents_unchanged,
            "results": [r.to_json() for r in self.results],
        }


def probe_cases(identities: Iterable[str] = IDENTITIES) -> Iterator[tuple[str, str, str]]:
    """(identity, operation, target) for every valid case: group queries first, then documents."""
    for identity in identities:
        _check_identity(identity)
        for target in GROUP_TARGETS:
            for operation in GROUP_OPERATIONS:
                yield identity, operation, target
        for target in DOCUMENT_TARGETS:
            for operation in DOCUMENT_OPERATIONS:
                yield identity, operation, target


# --------------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------------


class RulesProbe:
    """A REST client for one emulator project that sends each request as a chosen identity."""

    def __init__(
        self,
        base_url: str,
        project_id: str,
        *,
        command_hash: str = PROBE_COMMAND_HASH,
        create_hash: str = PROBE_CREATE_HASH,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._base_url = _check_base_url(base_url)
        self._project_id = _check_project(project_id)
        if not (_HASH_RE.match(command_hash) and _HASH_RE.match(create_hash)) or command_hash == create_hash:
            raise UsageError("command hashes must be two different lowercase sha256 hex digests")
        self._command_hash = command_hash
        self._create_hash = create_hash
        self._timeout = float(timeout)
        self._clock = clock
        # Never route loopback emulator traffic through an environment proxy.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    @property
    def project_id(self) -> str:
        return self._project_id

    # ---- paths -----------------------------------------------------------------------------------

    def document_path(self, target: str, *, for_create: bool = False) -> str:
        """The document path of a document target, relative to ``.../documents``."""
        h = self._create_hash if for_create else self._command_hash
        if target not in DOCUMENT_PATHS:
            raise UsageError("not a document target")
        return DOCUMENT_PATHS[target].format(id=h)

    def seeded_paths(self) -> tuple[str, ...]:
        return tuple(self.document_path(t) for t in DOCUMENT_TARGETS)

    def create_paths(self) -> tuple[str, ...]:
        return tuple(self.document_path(t, for_create=True) for t in DOCUMENT_TARGETS)

    # ---- probing ---------------------------------------------------------------------------------

    def check(self, identity: str, operation: str, target: str) -> ProbeResult:
        """Send one request for (identity, operation, target) and classify the answer."""
        _check_identity(identity)
        if target in GROUP_TARGETS:
            if operation not in GROUP_OPERATIONS:
                raise UsageError("operation does not apply to a collection-group target")
            body = {"structuredQuery": {"from": [{"collectionId": GROUP_COLLECTIONS[target], "allDescendants": True}]}}
            status, payload = self._request(identity, "POST", self._documents_url() + ":runQuery", body)
            return self._result(identity, operation, target, status, payload)
        if target not in DOCUMENT_TARGETS:
            raise UsageError("unknown target")
        if operation not in DOCUMENT_OPERATIONS:
            raise UsageError("operation does not apply to a document target")

        if operation == "get":
            url = self._doc_url(self.document_path(target))
            status, payload = self._request(identity, "GET", url, None)
        elif operation == "list":
            parent, _, _ = self.document_path(target).rpartition("/")
            status, payload = self._request(identity, "GET", self._doc_url(parent), None)
        elif operation == "create":
            parent, _, doc_id = self.document_path(target, for_create=True).rpartition("/")
            url = self._doc_url(parent) + "?" + urllib.parse.urlencode({"documentId": doc_id})
            status, payload = self._request(identity, "POST", url, _probe_fields("create"))
        elif operation == "update":
            query = urllib.parse.urlencode({"updateMask.fieldPaths": PROBE_FIELD, "currentDocument.exists": "true"})
            url = self._doc_url(self.document_path(target)) + "?" + query
            status, payload = self._request(identity, "PATCH", url, _probe_fields("update"))
        else:  # delete
            url = self._doc_url(self.document_path(target)) + "?currentDocument.exists=true"
            status, payload = self._request(identity, "DELETE", url, None)
        return self._result(identity, operation, target, status, payload)

    def get_document(self, identity: str, document_path: str) -> ProbeResult:
        """GET an arbitrary document path as ``identity`` (target reported as ``custom``)."""
        _check_identity(identity)
        segments = document_path.split("/")
        if len(segments) % 2 or not all(_DOC_PATH_SEGMENT_RE.match(s) for s in segments):
            raise UsageError("not a plain document path")
        status, payload = self._request(identity, "GET", self._doc_url(document_path), None)
        return self._result(identity, "get", "custom", status, payload)

    # ---- owner-side helpers ----------------------------------------------------------------------

    def seed(self) -> None:
        """As owner: write the probe documents of ``command_hash``; remove those of ``create_hash``."""
        for path in self.seeded_paths():
            status, _ = self._request("owner", "PATCH", self._doc_url(path), _probe_fields("seeded"))
            if status != 200:
                raise RulesProbeError("seeding a probe document failed")
        for path in self.create_paths():
            status, _ = self._request("owner", "DELETE", self._doc_url(path), None)
            if status != 200:
                raise RulesProbeError("clearing a probe create path failed")

    def owner_fingerprint(self) -> str:
        """A digest of the owner's view (fields, update time, or absence) of every probe document."""
        digest = hashlib.sha256()
        for path in (*self.seeded_paths(), *self.create_paths()):
            status, payload = self._request("owner", "GET", self._doc_url(path), None)
            if status == 200 and isinstance(payload, dict):
                view: Any = [payload.get("fields", {}), payload.get("updateTime")]
            elif status == 404:
                view = None
            else:
                raise RulesProbeError("reading a probe document as owner failed")
            digest.update(json.dumps(view, sort_keys=True, separators=(",", ":")).encode("utf-8"))
            digest.update(b"\x00")
        return digest.hexdigest()

    def matrix(self, identities: Iterable[str] = IDENTITIES, *, seed: bool = True) -> RulesMatrix:
        """Probe every case for ``identities``. Browser identities run before the owner.

        Each case starts from the seeded state: after any mutation that was allowed, the probe documents
        are re-seeded (so a permissive rule set yields a clean "allowed" for every case rather than
        knock-on NOT_FOUND / ALREADY_EXISTS errors). The rules to test must already be loaded.
        """
        wanted = tuple(identities)
        for identity in wanted:
            _check_identity(identity)
        ordered = tuple(i for i in IDENTITIES if i in wanted and i != "owner")
        if "owner" in wanted:
            ordered += ("owner",)
        if seed:
            self.seed()

        results: list[ProbeResult] = []
        documents_unchanged: bool | None = None
        browser = tuple(i for i in ordered if i != "owner")
        before = self.owner_fingerprint() if browser else None
        for identity in ordered:
            if identity == "owner" and before is not None:
                documents_unchanged = self.owner_fingerprint() == before
                before = None
            for _, operation, target in probe_cases((identity,)):
                result = self.check(identity, operation, target)
                results.append(result)
                if result.allowed and operation in MUTATING_OPERATIONS:
                    self.seed()
        if before is not None:
            documents_unchanged = self.owner_fingerprint() == before
        return RulesMatrix(results=tuple(results), documents_unchanged=documents_unchanged)

    # ---- transport -------------------------------------------------------------------------------

    def _documents_url(self) -> str:
        return f"{self._base_url}/v1/projects/{self._project_id}/databases/(default)/documents"

    def _doc_url(self, path: str) -> str:
        return self._documents_url() + "/" + path

    def _authorization(self, identity: str) -> str | None:
        if identity == "unauthenticated":
            return None
        if identity == "owner":
            return f"Bearer {OWNER_TOKEN}"
        claims = identity_claims(identity, self._project_id, now=int(self._clock()))
        return "Bearer " + emulator_token(claims)

    def _request(self, identity: str, method: str, url: str, body: Mapping[str, Any] | None) -> tuple[int, Any]:
        headers = {"Accept": "application/json"}
        auth = self._authorization(identity)
        if auth is not None:
            headers["Authorization"] = auth
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                return response.status, _parse_json(response.read())
        except urllib.error.HTTPError as exc:
            try:
                raw = exc.read()
            except OSError:
                raw = b""
            finally:
                exc.close()
            return exc.code, _parse_json(raw)
        except (urllib.error.URLError, OSError, ValueError):
            raise RulesProbeError("emulator request failed") from None

    @staticmethod
    def _result(identity: str, operation: str, target: str, status: int, payload: Any) -> ProbeResult:
        error_status: str | None = None
        count: int | None = None
        if 200 <= status < 300:
            if operation == "get":
                count = 1
            elif operation == "list":
                docs = payload.get("documents", []) if isinstance(payload, dict) else []
                count = len(docs) if isinstance(docs, list) else 0
            elif operation == "query":
                rows = payload if isinstance(payload, list) else []
                count = sum(1 for row in rows if isinstance(row, dict) and "document" in row)
        else:
            error_status = "UNKNOWN"
            if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
                name = payload["error"].get("status")
                if isinstance(name, str) and _STATUS_NAME_RE.match(name):
                    error_status = name
        return ProbeResult(
            identity=identity,
            operation=operation,
            target=target,
            http_status=status,
            error_status=error_status,
            document_count=count,
        )


def rules_matrix(
    base_url: str,
    project_id: str,
    *,
    identities: Iterable[str] = IDENTITIES,
    command_hash: str = PROBE_COMMAND_HASH,
    create_hash: str = PROBE_CREATE_HASH,
    timeout: float = 10.0,
) -> RulesMatrix:
    """Seed the probe documents into ``project_id`` and probe every case (rules must already be loaded).

    Writes only the probe's own synthetic documents; use a dedicated project.
    """
    probe = RulesProbe(base_url, project_id, command_hash=command_hash, create_hash=create_hash, timeout=timeout)
    return probe.matrix(identities, seed=True)


# --------------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------------


def _probe_fields(value: str) -> dict[str, Any]:
    return {"fields": {PROBE_FIELD: {"stringValue": value}}}


def _parse_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _check_identity(identity: str) -> None:
    if identity not in IDENTITIES:
        raise UsageError("unknown identity")


def _check_project(project_id: str) -> str:
    if not isinstance(project_id, str) or not _PROJECT_RE.match(project_id):
        raise UsageError("project id must be lowercase letters, digits and hyphens")
    return demo_project_id(project_id, "the rules probe's project id")


def _check_base_url(base_url: str) -> str:
    """Accept ``http://HOST:PORT`` or ``HOST:PORT`` for a loopback host only (fail closed otherwise)."""
    if not isinstance(base_url, str):
        raise UsageError("emulator address must be a string")
    candidate = base_url if "://" in base_url else "http://" + base_url
    parts = urllib.parse.urlsplit(candidate.rstrip("/"))
    try:
        port = parts.port
    except ValueError:
        port = None
    if (
        parts.scheme != "http"
        or not is_loopback_host(parts.hostname or "")
        or port is None
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise UsageError("emulator address must be http://<loopback host>:<port>")
    return f"{parts.scheme}://{parts.netloc}"
