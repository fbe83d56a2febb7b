"""pytest fixtures for the Firestore emulator: ``emulator``, ``project_id``, ``firestore_db``, and the wire
proxy in front of it: ``wire_proxy`` (one per test process, started the first time a test asks for it,
stopped at session end) and ``wire_session`` (a client of the test's project through it).

When an emulator is started, and who owns it:

* ``FIRESTORE_EMULATOR_HOST`` already set: nothing is started; every process connects to it
  (a dead address fails the tests that need it) and nobody stops it.
* pytest-xdist active (``-n N`` with N > 0, or ``--tx``): the controller process starts ONE emulator
  in ``pytest_configure``, unless ``-m`` rules out every test marked ``emulator`` (e.g.
  ``-m "not emulator"``) or this is ``--collect-only``. It exports ``FIRESTORE_EMULATOR_HOST`` before
  the workers are spawned, so they inherit it and connect; the controller stops it in
  ``pytest_unconfigure``. (The controller collects nothing, so the ``-m`` expression is the only
  signal it has.) If the start fails, the error is passed to the workers and every test that needs
  the emulator fails with it; other tests run normally.
* otherwise: the session fixture starts it the first time a test asks for it and stops it at
  session end, so runs without emulator tests never start a JVM.

Tests that use these fixtures get the ``emulator`` marker automatically, so ``-m "not emulator"``
deselects them. A test module of one system's implementation is marked ``system("<name>")``;
``--only-system NAME`` (what ``fencecheck gate --known-bad`` / ``--system`` passes to the suites that take the
system) deselects the other systems' tests, and ``--without-catalogues`` the known-bad catalogues (marked
``catalogue``); pytest counts them as deselected. The gate's unit and emulator suites run with
``-m "not harness"``: the tests of the harness's own processes are ``./run tests``'. Against one system, each test
left records what it drives as the JUnit property ``fencecheck_drives``: ``implementation`` (a test of that system
on the emulator: it takes the implementation under test), ``reference`` (one marked ``reference_only(reason)``: it
drives only the reference or fixed variants, whatever the gate was asked) or ``nothing`` (any other: a check of the
suite's parts, which never needs the emulator); the gate counts them per suite and the evidence report shows the
counts (fencecheck.report.junit). Missing Java or emulator is an error, never a skip.

The process that owns the emulator writes ``artifacts/emulator/session-<worker>.json`` (host, log
path, lock-timeout count, versions) at the end, as evidence for reports.

A failing test whose exception carries structured problems (``fencecheck.errors.CheckFailed``: the suites'
assertions, ``LockstepMismatch``, an invariant check; on the exception, its causes, or the members of an
exception group) records their kinds as the JUnit property ``fencecheck_problem_kinds`` (``contract``,
``crash,contract``, ...): how ``fencecheck gate --known-bad`` and its replays learn what each failure was
(fencecheck.report.failures), never from the message's text.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fencecheck import errors
from fencecheck.emulator.discovery import ENV_HOST
from fencecheck.emulator.lifecycle import (
    EmulatorHandle,
    close_client,
    connect_existing,
    new_run_token,
    project_id_for,
    set_parent_death_signal,
    start_emulator,
)
from fencecheck.plugin.registry import SYSTEM_NAMES, system_names
from fencecheck.problems import KINDS_PROPERTY as PROBLEM_KINDS_PROPERTY  # the gate reads it back from JUnit
from fencecheck.problems import kinds_of, problems_in
from fencecheck.suites import (
    DRIVES_PROPERTY,
    DROVE_IMPLEMENTATION,
    DROVE_NOTHING,
    DROVE_REFERENCE,
    artifacts_root,
    hypothesis_profiles,
)

if TYPE_CHECKING:
    from google.cloud import firestore

    from fencecheck.wire import WireProxy
    from fencecheck.wire.mix import FaultMix
    from fencecheck.wire.session import WireSession

SYSTEM_MARKER = "system"  # system("lantern"): the test verifies that system's implementation
CATALOGUE_MARKER = "catalogue"  # the test runs a known-bad catalogue: every variant, on purpose
HARNESS_MARKER = "harness"  # the test verifies the harness's own processes: ./run tests runs it, the gate does not
REFERENCE_ONLY_MARKER = "reference_only"  # reference_only("why"): a system's test that never takes the implementation
ONLY_SYSTEM_OPTION = "--only-system"
WITHOUT_CATALOGUES_OPTION = "--without-catalogues"
ENV_LOG = "FENCECHECK_EMULATOR_LOG"  # lets workers count lock timeouts in the controller's log
ENV_ERROR = "FENCECHECK_EMULATOR_ERROR"  # "ClassName: message" of a failed controller start
ENV_RUN_TOKEN = "FENCECHECK_RUN_TOKEN"  # shared by all workers of one run
MARKER = "emulator"
pytest_plugins = ["fencecheck.suites.pytest_progress"]  # tests done of total, and examples, while a suite runs

_owned_key = pytest.StashKey[tuple[EmulatorHandle | None, dict[str, str | None]]]()
_token_key = pytest.StashKey[dict[str, str | None]]()
_project_counter = itertools.count(1)
_local_run_token = new_run_token()


def _worker_id(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return str(workerinput["workerid"])
    return "controller" if _is_xdist_controller(config) else "main"


def _is_xdist_controller(config: pytest.Config) -> bool:
    # Same test xdist itself uses to decide whether to distribute.
    return (
        not hasattr(config, "workerinput")
        and config.pluginmanager.hasplugin("xdist")
        and config.getoption("dist", "no") != "no"
        and bool(config.getoption("tx", None))
    )


def _markexpr_may_select_emulator(markexpr: str) -> bool:
    """Could some test carrying the ``emulator`` marker pass ``-m markexpr``?"""
    if not markexpr:
        return True
    try:  # pytest's -m parser is private API; if it moves, err on the side of starting
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
        others = sorted(expression.idents() - {MARKER})
        if len(others) > 12:
            return True
        for bits in itertools.product((False, True), repeat=len(others)):
            present = {MARKER, *(name for name, bit in zip(others, bits, strict=True) if bit)}
            if expression.evaluate(present.__contains__):
                return True
    except Exception:
        return True
    return False


def _artifacts_dir(config: pytest.Config) -> Path:
    return artifacts_root(config.rootpath) / "emulator"


def _start(config: pytest.Config, *, mid_line: bool) -> EmulatorHandle:
    capture = config.pluginmanager.getplugin("capturemanager")
    # Show the one-line progress message even though pytest captures output.
    quiet_ctx = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    with quiet_ctx:
        if mid_line:
            print(file=sys.stderr)  # the terminal is in the middle of a line of test progress
        return start_emulator(log_dir=_artifacts_dir(config))


def _export(values: dict[str, str]) -> dict[str, str | None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    return saved


def _restore(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _shared_env(handle: EmulatorHandle) -> dict[str, str]:
    return {ENV_HOST: handle.host, ENV_LOG: str(handle.log_path), ENV_RUN_TOKEN: _run_token()}


def count_option(config: pytest.Config, option: str, env: str, default: int) -> int:
    """A suite's repeat count: `--<option>` (dest `option`), else $`env`, else `default`; a value that is not an
    integer of at least 1 is a usage error."""
    value = config.getoption(option, None)
    if value is None:
        raw = os.environ.get(env, str(default))
        try:
            value = int(raw)
        except ValueError:
            raise pytest.UsageError(f"{env}={raw!r} is not an integer") from None
    if value < 1:
        raise pytest.UsageError(f"--{option.replace('_', '-')} must be at least 1, got {value}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    from fencecheck.wire import mix

    parser.getgroup("fencecheck", "fencecheck").addoption(
        mix.OPTION,
        dest="wire_faults",
        default=None,
        metavar="off|on|SEED",
        help=f"run the race and parallel suites' calls through the wire under a seeded fault mix "
        f"(fencecheck/wire/mix.py; default: ${mix.ENV}, else off; on = seed {mix.DEFAULT_SEED})",
    )
    _add_selection_options(parser)


def wire_mix(config: pytest.Config) -> FaultMix | None:
    """The suites' fault mix: `--wire-faults`, else $FENCECHECK_WIRE_FAULTS, else None (off). A malformed
    value is a usage error."""
    from fencecheck.wire import mix

    value = config.getoption("wire_faults", None)
    try:
        return mix.mix_from(os.environ.get(mix.ENV) if value is None else value)
    except errors.UsageError as error:
        raise pytest.UsageError(str(error)) from None


def _run_token() -> str:
    return os.environ.get(ENV_RUN_TOKEN) or _local_run_token


def _write_evidence(config: pytest.Config, handle: EmulatorHandle) -> None:
    evidence = {
        "worker": _worker_id(config),
        "host": handle.host,
        "started_by_us": handle.started_by_us,
        "source": handle.command.source if handle.command else None,
        "emulator_version": handle.emulator_version(),
        "java_version": handle.java_version(),
        "ready_seconds": round(handle.ready_seconds, 3) if handle.ready_seconds else None,
        "log_path": str(handle.log_path),
        "lock_timeout_count": handle.lock_timeout_count(),
    }
    path = _artifacts_dir(config) / f"session-{evidence['worker']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(evidence, indent=2) + "\n")


hypothesis_profiles.register_profiles()  # before Hypothesis's plugin loads --hypothesis-profile


@pytest.hookimpl(tryfirst=True)  # before Hypothesis's own pytest_configure loads the option's profile
def pytest_configure(config: pytest.Config) -> None:
    option = config.getoption("--hypothesis-profile", None)
    try:
        name = hypothesis_profiles.choose(option)
    except hypothesis_profiles.UnknownProfile as error:
        raise pytest.UsageError(str(error)) from None
    hypothesis_profiles.select(name, load=option is None)
    try:  # the registry, read here (not in an option's help): a bad $FENCECHECK_PLUGINS entry is a usage error
        system_names()
    except errors.FencecheckError as error:
        raise pytest.UsageError(str(error)) from None
    _only_system(config)  # a misspelt system name stops the run before anything is collected
    _configure_emulator(config)


def _configure_emulator(config: pytest.Config) -> None:
    # Declared in pyproject.toml too; this keeps the plugin usable from other roots.
    declared = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    if MARKER not in declared:
        config.addinivalue_line("markers", f"{MARKER}: needs the Firestore emulator")
    if SYSTEM_MARKER not in declared:
        config.addinivalue_line("markers", f"{SYSTEM_MARKER}(name): a test of that system's implementation")
    if CATALOGUE_MARKER not in declared:
        config.addinivalue_line("markers", f"{CATALOGUE_MARKER}: runs a known-bad catalogue")
    if HARNESS_MARKER not in declared:
        config.addinivalue_line("markers", f"{HARNESS_MARKER}: tests the harness's own processes")
    if REFERENCE_ONLY_MARKER not in declared:
        config.addinivalue_line("markers", f"{REFERENCE_ONLY_MARKER}(reason): a system's test that drives only its "
                                           "reference (or fixed variants), never the implementation under test")
    if hasattr(config, "workerinput"):
        # An xdist worker outlives a controller killed by SIGTERM/SIGKILL until its current test
        # ends; SIGTERM on the controller's death makes it stop its own emulators at once.
        set_parent_death_signal(signal.SIGTERM)
        return
    # This run's own token for its project ids, handed to its workers. A pytest run started by a test (the
    # gate's suites, under tests/emulator/test_gate_known_bad.py) inherits the outer run's: with the same
    # worker ids and counters its tests would use, and reset, the very projects the outer run's tests use.
    config.stash[_token_key] = _export({ENV_RUN_TOKEN: _local_run_token})
    if not _is_xdist_controller(config) or os.environ.get(ENV_HOST):
        return
    if config.getoption("collectonly", False) or not _markexpr_may_select_emulator(
        config.getoption("markexpr", "") or ""
    ):
        return
    try:
        handle = _start(config, mid_line=False)
    except (errors.FencecheckError, OSError) as exc:
        # Do not abort the run: tests without the emulator should still run and report.
        config.stash[_owned_key] = (None, _export({ENV_ERROR: f"{type(exc).__name__}: {exc}"}))
        return
    config.stash[_owned_key] = (handle, _export(_shared_env(handle)))


def pytest_unconfigure(config: pytest.Config) -> None:
    handle, saved = config.stash.get(_owned_key, (None, {}))
    try:
        if handle is not None:
            _write_evidence(config, handle)
    finally:
        if handle is not None:
            handle.stop()
        _restore(saved)
        _restore(config.stash.get(_token_key, {}))


def _add_selection_options(parser: pytest.Parser) -> None:
    parser.addoption(
        ONLY_SYSTEM_OPTION, metavar="NAME", default=None,
        help=f"deselect the tests marked {SYSTEM_MARKER}(<another system>): a gate against one system's "
        "implementation runs its system's tests only (NAME: a registered system's name)",
    )
    parser.addoption(
        WITHOUT_CATALOGUES_OPTION, action="store_true", default=False,
        help=f"deselect the tests marked {CATALOGUE_MARKER} (known-bad catalogues): a gate against one "
        "implementation asks whether the suites catch it, not whether they catch every variant",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test's structured problem kinds, as a user property of the test (JUnit writes it with the
    teardown's report, which copies the item's properties: so it goes on the item)."""
    report = yield
    if report.failed and call.excinfo is not None:
        found = problems_in(call.excinfo.value)
        if found:
            item.user_properties.append((PROBLEM_KINDS_PROPERTY, ",".join(kinds_of(found))))
    return report


@pytest.hookimpl(tryfirst=True)  # before -m deselection sees the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "emulator" in getattr(item, "fixturenames", ()) and item.get_closest_marker(MARKER) is None:
            item.add_marker(MARKER)
    _deselect_other_systems(config, items)


def _system_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker(SYSTEM_MARKER)
    if marker is None:
        return None
    if len(marker.args) != 1 or marker.args[0] not in SYSTEM_NAMES:
        raise pytest.UsageError(f"{item.nodeid}: the {SYSTEM_MARKER} marker takes one system name, one of "
                                f"{', '.join(SYSTEM_NAMES)}; got {marker.args!r}")
    return marker.args[0]


def _only_system(config: pytest.Config) -> str | None:
    only = config.getoption(ONLY_SYSTEM_OPTION.lstrip("-").replace("-", "_"), None)
    if only is not None and only not in SYSTEM_NAMES:
        raise pytest.UsageError(f"{ONLY_SYSTEM_OPTION} {only!r}: expected one of {', '.join(SYSTEM_NAMES)}")
    return only


def _deselect_other_systems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--only-system NAME: the tests marked for another system are deselected; --without-catalogues: the tests
    marked as known-bad catalogues. pytest counts them as deselected in its summary: never a silent skip.
    Unmarked tests always run."""
    systems = [_system_of(item) for item in items]  # every marker is checked, selected or not
    only = _only_system(config)
    without_catalogues = config.getoption(WITHOUT_CATALOGUES_OPTION.lstrip("-").replace("-", "_"), False)

    def deselected(item: pytest.Item, system: str | None) -> bool:
        other_system = only is not None and system not in (None, only)
        return other_system or (without_catalogues and item.get_closest_marker(CATALOGUE_MARKER) is not None)

    dropped = [item for item, system in zip(items, systems, strict=True) if deselected(item, system)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item, system in zip(items, systems, strict=True) if not deselected(item, system)]
    if only is not None:
        for item in items:
            item.user_properties.append((DRIVES_PROPERTY, _drives(item)))


def _drives(item: pytest.Item) -> str:
    """What a test left by --only-system drives (the JUnit property the gate counts)."""
    marker = item.get_closest_marker(REFERENCE_ONLY_MARKER)
    if marker is not None:
        if len(marker.args) != 1 or not isinstance(marker.args[0], str) or not marker.args[0]:
            raise pytest.UsageError(f"{item.nodeid}: the {REFERENCE_ONLY_MARKER} marker takes one reason, a "
                                    f"non-empty string; got {marker.args!r}")
        return DROVE_REFERENCE
    # An implementation under test runs on the emulator: a test that never asks for it (a check of the suite's
    # parts, of a system's or of none) drove no implementation, whatever its marks.
    on_emulator = item.get_closest_marker(MARKER) is not None
    return DROVE_IMPLEMENTATION if on_emulator and item.get_closest_marker(SYSTEM_MARKER) else DROVE_NOTHING


def _raise_forwarded_error(text: str) -> None:
    name, _, message = text.partition(": ")
    error_class = getattr(errors, name, None)
    if not (isinstance(error_class, type) and issubclass(error_class, errors.FencecheckError)):
        error_class, message = errors.EmulatorStartError, text
    raise error_class(f"(emulator start in the xdist controller failed) {message}")


def _session_emulator(config: pytest.Config) -> EmulatorHandle:
    forwarded_error = os.environ.get(ENV_ERROR)
    if forwarded_error:
        _raise_forwarded_error(forwarded_error)
    if os.environ.get(ENV_HOST):
        log = os.environ.get(ENV_LOG)
        return connect_existing(os.environ[ENV_HOST], log_path=Path(log) if log else None)
    return _start(config, mid_line=True)


@pytest.fixture(scope="session")
def emulator(request: pytest.FixtureRequest) -> Iterator[EmulatorHandle]:
    """The session's emulator: shared, found via FIRESTORE_EMULATOR_HOST, or started here."""
    try:
        handle = _session_emulator(request.config)
    except errors.FencecheckError as exc:
        failure = f"{type(exc).__name__}: {exc}"
    else:
        failure = None
    if failure is not None:
        # A plain message: the traceback would only show plugin internals (and os.environ).
        pytest.fail(failure, pytrace=False)
    if not handle.started_by_us:
        yield handle
        return
    saved = _export(_shared_env(handle))  # code under test may build its own clients
    try:
        yield handle
    finally:
        try:
            _write_evidence(request.config, handle)
        finally:
            handle.stop()
            _restore(saved)


@pytest.fixture
def project_id(emulator: EmulatorHandle, request: pytest.FixtureRequest) -> Iterator[str]:
    """A project id no other test of this run uses; its data is deleted afterwards."""
    project = project_id_for(_run_token(), _worker_id(request.config), next(_project_counter))
    yield project
    emulator.reset(project)  # isolation comes from the unique id; this only frees memory


@pytest.fixture
def firestore_db(emulator: EmulatorHandle, project_id: str) -> Iterator[firestore.Client]:
    """A google.cloud.firestore.Client for ``project_id`` on the session's emulator."""
    client = emulator.client(project_id)
    yield client
    close_client(client)


@pytest.fixture(scope="session")
def wire_proxy(emulator: EmulatorHandle) -> Iterator[WireProxy]:
    """A fault proxy in front of the session's emulator, on a free loopback port; stopped on every exit path
    (its context manager here, else at interpreter exit)."""
    from fencecheck.wire import WireProxy

    with WireProxy(emulator.host) as proxy:
        yield proxy


@pytest.fixture
def wire_session(wire_proxy: WireProxy, project_id: str) -> Iterator[WireSession]:
    """The test's project through the wire proxy (`fencecheck.wire.session.WireSession`), no faults planned."""
    from fencecheck.wire.session import session_on

    wire_proxy.set_plan()
    with session_on(wire_proxy, project_id) as session:
        yield session
    wire_proxy.set_plan()
