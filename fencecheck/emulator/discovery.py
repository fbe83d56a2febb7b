"""Find a Firestore emulator and Java, parse emulator hosts, and make project ids.

Nothing here starts a process (except `java -version`, on request): every lookup takes the
environment as a mapping and the filesystem roots as arguments, so it can be tested against a
fake tree under tmp_path.

Discovery order (first hit wins):
1. ``FENCECHECK_EMULATOR_JAR``: a jar, run with Java.
2. ``FENCECHECK_EMULATOR_COMMAND``: a command line (shlex-split) to which ``--host H --port P`` is appended.
3. The gcloud SDK: ``<sdk>/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar`` with sdk
   taken from ``$CLOUDSDK_ROOT_DIR``, the install that ``gcloud`` on PATH belongs to, then
   ``/usr/lib/google-cloud-sdk`` and ``/usr/share/google-cloud-sdk`` (explicit before implicit).
4. The firebase-tools cache ``~/.cache/firebase/emulators/cloud-firestore-emulator-v*.jar`` (newest).
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fencecheck.errors import EmulatorNotFoundError, EmulatorTargetError, JavaNotFoundError, UsageError

ENV_JAR = "FENCECHECK_EMULATOR_JAR"
ENV_COMMAND = "FENCECHECK_EMULATOR_COMMAND"
ENV_HOST = "FIRESTORE_EMULATOR_HOST"
DEBIAN_PACKAGE = "google-cloud-cli-firestore-emulator"
MAIN_CLASS = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"
JAR_IN_SDK = Path("platform/cloud-firestore-emulator/cloud-firestore-emulator.jar")
DEFAULT_SDK_ROOTS = (Path("/usr/lib/google-cloud-sdk"), Path("/usr/share/google-cloud-sdk"))
FIREBASE_CACHE = Path(".cache/firebase/emulators")
JAVA_INSTALL_HINT = (
    "Install it: apt-get install openjdk-17-jre-headless, or set JAVA=/path/to/java"
)

_FIREBASE_JAR_RE = re.compile(r"^cloud-firestore-emulator-v(\d+(?:\.\d+)*)\.jar$")
_PROJECT_ID_MAX = 30  # Google Cloud's limit; the emulator does not enforce it, real ids do


@dataclass(frozen=True)
class EmulatorCommand:
    """How to launch an emulator: ``argv_prefix + --host H --port P [--rules F]``."""

    argv_prefix: tuple[str, ...]
    description: str
    source: str  # "env-jar" | "env-command" | "gcloud-sdk" | "firebase-cache"
    jar: Path | None = None
    java: str | None = None

    def argv(self, host: str, port: int, rules_path: Path | None = None) -> list[str]:
        argv = [*self.argv_prefix, "--host", host, "--port", str(port)]
        if rules_path is not None:
            argv += ["--rules", str(rules_path)]
        return argv


def find_java(env: Mapping[str, str]) -> str:
    """Return the java executable from ``$JAVA`` (a path or a name on PATH), else ``java`` on PATH."""
    search_path = env.get("PATH", os.defpath)
    requested = env.get("JAVA")
    if requested:
        found = shutil.which(requested, path=search_path)
        if found is None:
            raise JavaNotFoundError(
                f"JAVA={requested!r} is not an executable file. "
                "Point JAVA at a Java 17 binary (e.g. /usr/bin/java) or unset it to use java on PATH."
            )
        return found
    found = shutil.which("java", path=search_path)
    if found is None:
        raise JavaNotFoundError(f"Java 17 was not found on PATH. {JAVA_INSTALL_HINT}")
    return found


def _jar_command(jar: Path, description: str, source: str, env: Mapping[str, str]) -> EmulatorCommand:
    java = find_java(env)
    # -Duser.language=en: the emulator only supports English messages (as its own launcher does),
    # and the lock-timeout counter matches English log text.
    prefix = (java, "-Duser.language=en", "-cp", str(jar), MAIN_CLASS, "start")
    return EmulatorCommand(prefix, description, source, jar=jar, java=java)


def _sdk_roots(env: Mapping[str, str], defaults: tuple[Path, ...]) -> list[Path]:
    roots: list[Path] = []
    if env.get("CLOUDSDK_ROOT_DIR"):
        roots.append(Path(env["CLOUDSDK_ROOT_DIR"]))
    gcloud = shutil.which("gcloud", path=env.get("PATH", os.defpath))
    if gcloud is not None:
        # /usr/bin/gcloud is usually a symlink into <sdk>/bin/gcloud.
        bin_dir = Path(gcloud).resolve().parent
        roots.append(bin_dir.parent if bin_dir.name == "bin" else bin_dir)
    roots.extend(defaults)
    return roots


def _newest_firebase_jar(home: Path) -> Path | None:
    cache = home / FIREBASE_CACHE
    if not cache.is_dir():
        return None
    versioned = []
    for jar in cache.iterdir():
        match = _FIREBASE_JAR_RE.match(jar.name)
        if match and jar.is_file():
            versioned.append((tuple(int(part) for part in match.group(1).split(".")), jar))
    return max(versioned)[1] if versioned else None


def discover_emulator(
    env: Mapping[str, str] | None = None,
    *,
    sdk_roots: tuple[Path, ...] = DEFAULT_SDK_ROOTS,
    home: Path | None = None,
) -> EmulatorCommand:
    """Find an emulator in the order described in the module docstring."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME", "~")).expanduser() if home is None else home

    if env.get(ENV_JAR):
        jar = Path(env[ENV_JAR]).expanduser()
        if not jar.is_file():
            raise EmulatorNotFoundError(
                f"{ENV_JAR}={env[ENV_JAR]!r} does not name an existing jar file. "
                f"Fix the path or unset {ENV_JAR}."
            )
        return _jar_command(jar, f"{ENV_JAR}={jar}", "env-jar", env)

    if env.get(ENV_COMMAND):
        try:
            argv = shlex.split(env[ENV_COMMAND])
        except ValueError as exc:
            raise UsageError(f"{ENV_COMMAND} is not a valid shell command line: {exc}") from None
        if not argv:
            raise UsageError(f"{ENV_COMMAND} is set but empty; give a command or unset it.")
        if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
            raise EmulatorNotFoundError(
                f"{ENV_COMMAND}: {argv[0]!r} is not an executable (not found on PATH). "
                f"Fix the command or unset {ENV_COMMAND}."
            )
        return EmulatorCommand(tuple(argv), f"{ENV_COMMAND}={env[ENV_COMMAND]}", "env-command")

    for root in _sdk_roots(env, sdk_roots):
        jar = root / JAR_IN_SDK
        if jar.is_file():
            return _jar_command(jar, f"gcloud SDK at {root}", "gcloud-sdk", env)

    firebase_jar = _newest_firebase_jar(home)
    if firebase_jar is not None:
        return _jar_command(firebase_jar, f"firebase-tools cache {firebase_jar.name}", "firebase-cache", env)

    raise EmulatorNotFoundError(
        "The Firestore emulator was not found (looked at $CLOUDSDK_ROOT_DIR, gcloud on PATH, "
        f"{', '.join(map(str, sdk_roots))} and {home / FIREBASE_CACHE}). "
        f"Install it: apt-get install {DEBIAN_PACKAGE} (or `gcloud components install "
        f"cloud-firestore-emulator`), or set {ENV_JAR}=/path/to/cloud-firestore-emulator.jar, "
        f"or {ENV_COMMAND}='<command>' (run with --host H --port P appended), "
        f"or point {ENV_HOST} at a running emulator."
    )


def emulator_version(command: EmulatorCommand) -> str | None:
    """The emulator version from the SDK's install metadata or the firebase jar name; else None."""
    if command.jar is None:
        return None
    match = _FIREBASE_JAR_RE.match(command.jar.name)
    if match:
        return match.group(1)
    # <sdk>/platform/cloud-firestore-emulator/x.jar -> <sdk>/.install/cloud-firestore-emulator.snapshot.json
    snapshot = command.jar.parent.parent.parent / ".install" / "cloud-firestore-emulator.snapshot.json"
    try:
        components = json.loads(snapshot.read_text())["components"]
        for component in components:
            if component.get("id") == "cloud-firestore-emulator":
                return str(component["version"]["version_string"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


@functools.lru_cache(maxsize=8)
def java_version(java: str) -> str | None:
    """The version ``java -version`` reports (e.g. "17.0.15"), or None if it cannot be run."""
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    first_line = (result.stderr or result.stdout).strip().splitlines()[:1]
    if not first_line:
        return None
    quoted = re.search(r'"([^"]+)"', first_line[0])
    return quoted.group(1) if quoted else first_line[0]


_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9.-]+)):(?P<port>[0-9]{1,5})$")
LOOPBACK_RANGE = "127.0.0.0/8, localhost or [::1]"
DEMO_PREFIX = "demo-"


def parse_emulator_host(value: str, env_var: str = ENV_HOST) -> tuple[str, int]:
    """Split ``host:port`` (or ``[v6]:port``) as the Firestore client expects it: the port is required (without
    one the client would dial its default, 443), an IPv6 address must be in brackets, nothing else (no scheme,
    path, user info or scope id). The value is not echoed in the message."""
    hint = (f"{env_var} is not a host:port pair (expected e.g. 127.0.0.1:8080, localhost:8080 or [::1]:8080); "
            "fix or unset it.")
    match = _HOST_PORT.match(value.strip())
    if match is None or not 0 < int(match["port"]) < 65536:
        raise UsageError(hint)
    if match["v6"] is not None:
        try:
            ipaddress.IPv6Address(match["v6"])
        except ValueError:
            raise UsageError(hint) from None
        return match["v6"], int(match["port"])
    return match["name"], int(match["port"])


def is_loopback_host(host: str) -> bool:
    """``localhost``, an IPv4 address in 127.0.0.0/8 (dotted quad) or the IPv6 loopback ``::1``; nothing else
    (not 0.0.0.0, not an IPv4-mapped IPv6 address, not another name that may resolve anywhere)."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.IPv4Network("127.0.0.0/8")
    return address == ipaddress.IPv6Address("::1")


def loopback_emulator_host(value: str, env_var: str = ENV_HOST) -> tuple[str, int]:
    """`parse_emulator_host`, refusing any host outside the loopback range (`is_loopback_host`): fencecheck
    writes, resets and deletes whole projects, so it only ever talks to an emulator on this machine."""
    host, port = parse_emulator_host(value, env_var)
    if not is_loopback_host(host):
        raise EmulatorTargetError(
            f"{env_var} names a host outside the loopback range ({LOOPBACK_RANGE}). fencecheck only talks to "
            f"a Firestore emulator on this machine; point {env_var} at one (e.g. 127.0.0.1:8080) or unset it "
            "to let fencecheck start its own."
        )
    return host, port


def demo_project_id(project_id: object, source: str = "the project id") -> str:
    """`project_id` if it starts with ``demo-`` (a project that exists on no real Firestore, and for which the
    client looks for no credentials), else EmulatorTargetError naming `source`; the id is not echoed."""
    if not isinstance(project_id, str) or not project_id.startswith(DEMO_PREFIX) or project_id == DEMO_PREFIX:
        raise EmulatorTargetError(
            f"{source} does not start with {DEMO_PREFIX!r}: fencecheck only uses demo projects, which exist on "
            "no real Firestore. Use a demo-<name> id (project_id_for() makes one)."
        )
    return project_id


def guard_emulator_target(host: str, project_id: object, *, host_source: str = ENV_HOST,
                          project_source: str = "the project id") -> None:
    """The one check before any Firestore client (or emulator request) is made: a loopback host and a demo
    project (`loopback_emulator_host`, `demo_project_id`)."""
    loopback_emulator_host(host, host_source)
    demo_project_id(project_id, project_source)


def new_run_token() -> str:
    """A short random token that keeps project ids of different runs apart on a shared emulator."""
    return secrets.token_hex(3)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def project_id_for(run_token: str, worker_id: str, counter: int) -> str:
    """``demo-fc-<run>-<worker>-<n>``: lowercase ``[a-z0-9-]``, at most 30 characters.

    The emulator rejects upper case and underscores (HTTP 500 "Invalid app id"); the ``demo-``
    prefix keeps the client from looking for credentials. The counter is never shortened (it is what
    makes ids unique within a worker); the run token, then the worker id, are cut to fit.
    """
    if counter < 0:
        raise UsageError(f"project id counter must be >= 0, got {counter}")
    prefix, number = "demo-fc", str(counter)
    worker = _slug(worker_id) or "w"
    token = _slug(run_token) or "x"
    room = _PROJECT_ID_MAX - len(prefix) - len(number) - 3  # three joining dashes
    if room < 2:
        raise UsageError(f"project id counter {counter} is too large to fit in {_PROJECT_ID_MAX} characters")
    token = token[: max(1, room - len(worker))].strip("-") or "x"
    worker = worker[: room - len(token)].strip("-") or "w"
    return f"{prefix}-{token}-{worker}-{number}"
