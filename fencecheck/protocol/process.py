"""The harness side of the implementation process protocol (docs/implementation-protocol.md, versions 1 and 2).

An implementation written in any language runs as a child process: `ImplementationProcess` starts its
command with the emulator host and a project id in its environment, does the hello handshake, sends requests
(any number in flight, each a `Future`) and routes answers back by id, in whatever order they come.
`ImplementationPool` keeps one process per (emulator host, project), as the protocol has one process serve one
project, and ends them all on `close()` and at interpreter exit.

System-neutral: requests carry an operation name and arguments the plug-in chose (the journal's adapter is
`fencecheck.systems.journal.exec`).

What it reports, and how:

- an answer with ``output`` or with ``error.code``: the contract's answer (``Answer``);
- an answer with ``protocolError``: the request was wrong (``ProtocolErrorAnswer``), the harness's mistake;
- a line that is not a well-formed answer, an ``implementationError`` answer, an exit before every answer is
  in, or no answer in time: ``ImplementationFailure``, carrying the tail of the implementation's stderr and its
  structured kind (``problem_kind``: protocol, crash, crash, hang; fencecheck.problems). Never a contract
  verdict.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import shlex
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from fencecheck.errors import FencecheckError, UsageError
from fencecheck.problems import ProblemKind

PROTOCOL = "fencecheck-implementation"
# Version 2 names the system in the hello and carries every system's operations; version 1 carried one system
# alone (the first Node implementation speaks only 1), so its plug-in accepts it and no other does.
VERSIONS = (1, 2)
VERSION = VERSIONS[-1]
STDERR_TAIL_CHARS = 4000
HELLO_SECONDS = 60.0
# More than one contest's or parallel case's hosts at once: each wire lane (fencecheck.wire.lanes) is a host
# of its own, up to 24 racers' lanes plus their commit-rejecting lanes; a lane's processes end with the lane.
MAX_PROCESSES = 64
# Processes started and greeted at once: a race's lanes start together, and 24 Node processes loading their
# SDK at once on a loaded machine took longer than HELLO_SECONDS each; a few at a time greet within it.
MAX_STARTING = 4
CALL_SECONDS = 120.0  # a hang: longer than any journal call's ten attempts under the emulator's lock timeout
DRAIN_SECONDS = 30.0  # after end of stdin: answer what is in flight and exit, or be killed


class ImplementationFailure(FencecheckError, RuntimeError):
    """The implementation crashed, hung, or answered something that is not the protocol: no verdict.
    `what` says which in words, `problem_kind` as the structured kind every runner judges by (crash: it exited
    or answered implementationError; hang: no answer in time; protocol: a malformed answer, an id not in flight,
    a wrong hello); `stderr_tail` is the end of what the implementation wrote to stderr."""

    def __init__(self, what: str, stderr_tail: str, problem_kind: ProblemKind) -> None:
        super().__init__(what, stderr_tail, ProblemKind(problem_kind))

    @property
    def what(self) -> str:
        return self.args[0]

    @property
    def stderr_tail(self) -> str:
        return self.args[1]

    @property
    def problem_kind(self) -> ProblemKind:
        return self.args[2]

    def __str__(self) -> str:
        return f"{self.what}; implementation stderr (tail):\n{self.stderr_tail or '(empty)'}"


class ProtocolErrorAnswer(FencecheckError, RuntimeError):
    """The implementation refused a request as malformed (the request's fault, not the contract's): the harness's
    mistake, so its `problem_kind` is harness."""

    problem_kind = ProblemKind.HARNESS


@dataclass(frozen=True)
class Answer:
    """One contract answer: `output` (the operation's output object) or `error` (the contract's code)."""

    output: dict[str, Any] | None = None
    error: str | None = None

    @property
    def outcome(self) -> dict[str, Any] | str:
        """The output object, or the error code: the shape the reference's tests compare."""
        return self.error if self.error is not None else self.output  # type: ignore[return-value]


def _parse_answer(line: bytes) -> tuple[object, Answer | ProtocolErrorAnswer | str]:
    """(id, what it says); a malformed line raises ValueError. The str case is an implementationError."""
    data = json.loads(line)
    if not isinstance(data, dict) or "id" not in data:
        raise ValueError("an answer must be a JSON object with an id")
    keys = set(data) - {"id"}
    if keys == {"output"} and isinstance(data["output"], dict):
        return data["id"], Answer(output=data["output"])
    if keys == {"error"} and isinstance(data["error"], dict) and set(data["error"]) == {"code"}:
        code = data["error"]["code"]
        if isinstance(code, str) and code:
            return data["id"], Answer(error=code)
    if keys == {"protocolError"} and isinstance(data["protocolError"], str):
        return data["id"], ProtocolErrorAnswer(data["protocolError"])
    if keys == {"implementationError"} and isinstance(data["implementationError"], str):
        return data["id"], data["implementationError"]
    raise ValueError("an answer must carry exactly one of output, error, protocolError, implementationError")


class ImplementationProcess:
    """One running implementation. Use as a context manager; `close()` ends it and reaps it."""

    def __init__(self, command: Sequence[str], *, emulator_host: str, project_id: str, cwd: str | None = None):
        env = {**os.environ, "FIRESTORE_EMULATOR_HOST": emulator_host, "FENCECHECK_PROJECT_ID": project_id}
        try:
            self._process = subprocess.Popen(
                list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                cwd=cwd,
            )
        except OSError as error:  # not on PATH, not executable: the user's fix, before any request
            raise UsageError(
                f"cannot start the implementation command {shlex.join(command)!r}: {error.strerror or error}. "
                "Expected an executable that speaks docs/implementation-protocol.md; install it or fix the "
                "command after exec:."
            ) from None
        self._lock = threading.Lock()
        self._waiting: dict[object, Future] = {}
        self._next_id = 0
        self._dead: ImplementationFailure | None = None
        self._stderr: collections.deque[str] = collections.deque()
        self._stderr_chars = 0
        self._stderr_done = threading.Event()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    @property
    def pid(self) -> int:
        return self._process.pid

    def stderr_tail(self) -> str:
        with self._lock:
            return "".join(self._stderr)[-STDERR_TAIL_CHARS:]

    def _read_stderr(self) -> None:
        assert self._process.stderr is not None
        for raw in self._process.stderr:
            text = raw.decode("utf-8", "replace")
            with self._lock:
                self._stderr.append(text)
                self._stderr_chars += len(text)
                while self._stderr_chars - len(self._stderr[0]) >= STDERR_TAIL_CHARS and len(self._stderr) > 1:
                    self._stderr_chars -= len(self._stderr.popleft())
        self._stderr_done.set()

    def _fail_all(self, what: str, kind: ProblemKind) -> None:
        self._stderr_done.wait(timeout=5)  # the tail is what explains a crash: let it arrive first
        failure = ImplementationFailure(what, self.stderr_tail(), kind)
        with self._lock:
            self._dead = self._dead or failure
        self._fail_waiting(failure)

    def _fail_waiting(self, error: Exception) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            future.set_exception(error)

    def _read_stdout(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if not line.strip():
                continue
            try:
                answer_id, said = _parse_answer(line)
            except ValueError:
                self._process.kill()  # nothing it says afterwards can be trusted
                self._fail_all(f"malformed answer line: {line[:200]!r}", ProblemKind.PROTOCOL)
                return
            if answer_id is None and isinstance(said, ProtocolErrorAnswer):
                self._fail_waiting(said)  # a line it could not parse: ours, and which request is unknown
                continue
            with self._lock:
                future = self._waiting.pop(answer_id, None) if isinstance(answer_id, int | str) else None
            if future is None:
                self._process.kill()  # nothing it says afterwards can be trusted
                self._fail_all(f"answer for an id that is not in flight: {answer_id!r}", ProblemKind.PROTOCOL)
                return
            if isinstance(said, str):
                future.set_exception(ImplementationFailure(f"implementationError {said}", self.stderr_tail(),
                                                           ProblemKind.CRASH))
            elif isinstance(said, ProtocolErrorAnswer):
                future.set_exception(said)
            else:
                future.set_result(said)
        code = self._process.wait()
        self._fail_all(f"the implementation exited (code {code}) with requests unanswered", ProblemKind.CRASH)

    def send(self, request: Mapping[str, Any]) -> Future:
        """Send one request (an id is added); its answer arrives on the returned Future."""
        future: Future = Future()
        with self._lock:
            if self._dead is not None:
                future.set_exception(self._dead)
                return future
            self._next_id += 1
            request_id = self._next_id
            self._waiting[request_id] = future
        line = json.dumps({"id": request_id, **request}, ensure_ascii=False, allow_nan=False) + "\n"
        self.send_raw(line.encode("utf-8"))
        return future

    def send_raw(self, line: bytes) -> None:
        """Write bytes as they are (for malformed-request tests); a closed pipe shows up as the exit."""
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(line)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the stdout reader reports the exit, with the stderr tail

    def result(self, future: Future, timeout: float) -> Answer:
        """The answer, or ImplementationFailure (crash, malformed answer, or none within `timeout`: a hang)."""
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            raise ImplementationFailure(f"no answer within {timeout} s (hang)", self.stderr_tail(),
                                        ProblemKind.HANG) from None

    def hello(self, timeout: float = HELLO_SECONDS, *, system: str,
              accepted: Sequence[int] = (VERSION,)) -> dict[str, Any]:
        """The handshake for `system` (a plug-in's name): the implementation's description, or
        ImplementationFailure when it chose a version not in `accepted` (the plug-in's), or serves another system."""
        request = {"op": "hello", "protocol": PROTOCOL, "versions": list(VERSIONS), "system": system}
        answer = self.result(self.send(request), timeout)
        described = answer.output
        spoken = tuple(accepted)
        version = described.get("version") if isinstance(described, dict) else None
        if answer.error is not None or type(version) is not int or version not in spoken:
            what = (f"hello answered {answer!r}, not protocol version {' or '.join(map(str, spoken))} (the {system} "
                    f"needs one of those)")
            raise ImplementationFailure(what, self.stderr_tail(), ProblemKind.PROTOCOL)
        if described.get("system") != system:
            what = f"hello named the system {described.get('system')!r}, not the {system} the harness asked for"
            raise ImplementationFailure(what, self.stderr_tail(), ProblemKind.PROTOCOL)
        return described

    def call(self, op: str, args: Mapping[str, Any], now: str | None, timeout: float = CALL_SECONDS) -> Answer:
        """One operation; `now` None for one that reads no clock (version 2 sends no `now` then)."""
        request: dict[str, Any] = {"op": op, "args": dict(args)}
        if now is not None:
            request["now"] = now
        return self.result(self.send(request), timeout)

    def close(self, timeout: float = DRAIN_SECONDS) -> int:
        """End of input: the implementation answers what is in flight and exits. Killed if it does not."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            try:
                self._process.stdin.close()
            except OSError:
                pass
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return self._process.wait()

    def __enter__(self) -> ImplementationProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


EXEC_MARK = "exec:"
HELLO_PROJECT = "demo-fencecheck-hello"  # the project a gate's hello probe names; nothing is written there


def exec_command_of(spec: str | None) -> str | None:
    """The command line of an `exec:` system spec (`<system>:exec:<command line>` or `exec:<command line>`),
    None for any other spec."""
    spec = (spec or "").strip()
    if spec.startswith(EXEC_MARK):
        return spec[len(EXEC_MARK):]
    system, mark, rest = spec.partition(":" + EXEC_MARK)
    return rest if mark and system and ":" not in system else None


def describe_exec(command_line: str, emulator_host: str, system: str, accepted: Sequence[int] = (VERSION,)) -> str:
    """What the implementation says it is, from a hello of its own, for the evidence: its name, system and
    protocol version, and the command that started it. Failures to start or greet raise as they would in a
    suite, so a gate stops before any suite runs against an implementation that cannot answer."""
    pool = ImplementationPool(parse_command(command_line), system=system, accepted=accepted)
    try:
        pool.process_for(emulator_host, HELLO_PROJECT)
        described = pool.described or {}
    finally:
        pool.close()
    return (f"{described.get('implementation')} ({described.get('system')}, protocol version "
            f"{described.get('version')}), started as {command_line}")


def parse_command(command_line: str) -> tuple[str, ...]:
    """An `exec:` command line as argv (shell words, no shell): a UsageError for an empty one."""
    try:
        argv = tuple(shlex.split(command_line))
    except ValueError as error:
        raise UsageError(f"exec: command line {command_line!r} cannot be split into words: {error}") from None
    if not argv:
        raise UsageError("exec: needs a command line after it, e.g. exec:node implementations/node-journal/main.js")
    return argv


class ImplementationPool:
    """One `ImplementationProcess` per (emulator host, project), started and greeted on first use. The protocol
    has one process serve one project, and a suite makes a fresh project per race or repetition.

    `close()` ends every process (each answers what is in flight, then exits, or is killed); pools still open
    at interpreter exit are closed then, so no implementation outlives the harness."""

    def __init__(self, command: Sequence[str], *, system: str, accepted: Sequence[int] = (VERSION,),
                 cwd: str | None = None) -> None:
        self.command = tuple(command)
        self.system = system
        self.accepted = tuple(accepted)  # the protocol versions the system's plug-in accepts in a hello
        self.cwd = cwd
        self._lock = threading.Lock()
        # Most recently used last; beyond MAX_PROCESSES the least recently used one is ended (a suite makes a
        # fresh project per race and repetition, and never goes back to an old one for long).
        self._processes: collections.OrderedDict[tuple[str, str], ImplementationProcess] = collections.OrderedDict()
        self._starting: dict[tuple[str, str], Future] = {}  # keys being started and greeted, outside the lock
        self._start_slots = threading.BoundedSemaphore(MAX_STARTING)
        self._described: dict[str, Any] | None = None
        _OPEN_POOLS.add(self)

    @property
    def described(self) -> dict[str, Any] | None:
        """The first hello answer: what the implementation says it is (system, implementation, version)."""
        return self._described

    def process_for(self, emulator_host: str, project_id: str) -> ImplementationProcess:
        """The process of (host, project), started and greeted on first use. Two callers of one key share one
        start; starts of different keys run at once (a race's wire lanes start many at its beginning)."""
        key = (emulator_host, project_id)
        with self._lock:
            process = self._processes.get(key)
            if process is not None:
                self._processes.move_to_end(key)
                return process
            pending = self._starting.get(key)
            mine = pending is None
            if mine:
                pending = self._starting[key] = Future()
        if not mine:
            return pending.result()  # the starter's process, or its failure
        try:
            with self._start_slots:
                process, described = self._start(emulator_host, project_id)
        except BaseException as error:
            with self._lock:
                self._starting.pop(key, None)
            pending.set_exception(error)
            raise
        evicted: list[ImplementationProcess] = []
        with self._lock:
            self._starting.pop(key, None)
            self._described = self._described or described
            self._processes[key] = process
            while len(self._processes) > MAX_PROCESSES:
                evicted.append(self._processes.popitem(last=False)[1])
        pending.set_result(process)
        for old in evicted:
            old.close()  # answers what is in flight first
        return process

    def _start(self, emulator_host: str, project_id: str) -> tuple[ImplementationProcess, dict[str, Any]]:
        process = ImplementationProcess(self.command, emulator_host=emulator_host, project_id=project_id, cwd=self.cwd)
        try:
            described = process.hello(HELLO_SECONDS, system=self.system, accepted=self.accepted)
        except BaseException:
            process.close(timeout=5)
            raise
        if described.get("projectId") != project_id:
            process.close(timeout=5)
            raise ImplementationFailure("hello named another project than the one it was started with",
                                        process.stderr_tail(), ProblemKind.PROTOCOL)
        return process, described

    def call(self, emulator_host: str, project_id: str, op: str, args: Mapping[str, Any], now: str | None) -> Answer:
        return self.process_for(emulator_host, project_id).call(op, args, now, CALL_SECONDS)

    def close_project(self, emulator_host: str, project_id: str) -> None:
        with self._lock:
            process = self._processes.pop((emulator_host, project_id), None)
        if process is not None:
            process.close()

    def close_host(self, emulator_host: str) -> None:
        """End the processes pointed at `emulator_host` (a wire lane's proxy that has stopped)."""
        with self._lock:
            keys = [key for key in self._processes if key[0] == emulator_host]
            processes = [self._processes.pop(key) for key in keys]
        for process in processes:
            process.close()

    def close(self) -> None:
        with self._lock:
            processes, self._processes = list(self._processes.values()), collections.OrderedDict()
        for process in processes:
            process.close()
        _OPEN_POOLS.discard(self)

    def running(self) -> int:
        with self._lock:
            return len(self._processes)


_OPEN_POOLS: weakref.WeakSet[ImplementationPool] = weakref.WeakSet()


def close_host_everywhere(emulator_host: str) -> None:
    """End every pool's processes pointed at `emulator_host`: a wire lane's proxy stopped, they are useless."""
    for pool in list(_OPEN_POOLS):
        pool.close_host(emulator_host)


@atexit.register
def _close_open_pools() -> None:
    for pool in list(_OPEN_POOLS):
        pool.close()
