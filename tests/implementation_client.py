"""A minimal client of the implementation process protocol (docs/implementation-protocol.md, version 1).

The seed of the harness side that a later step puts behind ``FENCECHECK_SYSTEM=exec:...``; it lives under
``tests/`` until then. It starts the implementation's command with the emulator host and a project id in its
environment, does the hello handshake, sends requests (any number in flight, each a ``Future``) and routes
answers back by id, in whatever order they come.

What it reports, and how:

- an answer with ``output`` or with ``error.code``: the contract's answer (``Answer``);
- an answer with ``protocolError``: the request was wrong (``ProtocolErrorAnswer``), the harness's mistake;
- a line that is not a well-formed answer, an ``implementationError`` answer, an exit before every answer is
  in, or no answer in time: ``ImplementationFailure``, carrying the tail of the implementation's stderr. Never
  a contract verdict.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

PROTOCOL = "fencecheck-implementation"
VERSION = 1
STDERR_TAIL_CHARS = 4000


class ImplementationFailure(RuntimeError):
    """The implementation crashed, hung, or answered something that is not the protocol: no verdict."""

    def __init__(self, what: str, stderr_tail: str) -> None:
        super().__init__(f"{what}; implementation stderr (tail):\n{stderr_tail or '(empty)'}")
        self.what = what
        self.stderr_tail = stderr_tail


class ProtocolErrorAnswer(RuntimeError):
    """The implementation refused a request as malformed (the request's fault, not the contract's)."""


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
        self._process = subprocess.Popen(
            list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
        )
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

    def _fail_all(self, what: str) -> None:
        self._stderr_done.wait(timeout=5)  # the tail is what explains a crash: let it arrive first
        failure = ImplementationFailure(what, self.stderr_tail())
        with self._lock:
            self._dead = self._dead or failure
            waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            future.set_exception(failure)

    def _read_stdout(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if not line.strip():
                continue
            try:
                answer_id, said = _parse_answer(line)
            except ValueError:
                self._process.kill()  # nothing it says afterwards can be trusted
                self._fail_all(f"malformed answer line: {line[:200]!r}")
                return
            with self._lock:
                future = self._waiting.pop(answer_id, None) if isinstance(answer_id, int | str) else None
            if future is None:
                self._process.kill()  # nothing it says afterwards can be trusted
                self._fail_all(f"answer for an id that is not in flight: {answer_id!r}")
                return
            if isinstance(said, str):
                future.set_exception(ImplementationFailure(f"implementationError {said}", self.stderr_tail()))
            elif isinstance(said, ProtocolErrorAnswer):
                future.set_exception(said)
            else:
                future.set_result(said)
        code = self._process.wait()
        self._fail_all(f"the implementation exited (code {code}) with requests unanswered")

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
            raise ImplementationFailure(f"no answer within {timeout} s (hang)", self.stderr_tail()) from None

    def hello(self, timeout: float = 60.0) -> dict[str, Any]:
        """The handshake: the implementation's description, or ImplementationFailure if it is not version 1."""
        answer = self.result(self.send({"op": "hello", "protocol": PROTOCOL, "versions": [VERSION]}), timeout)
        described = answer.output
        if answer.error is not None or not isinstance(described, dict) or described.get("version") != VERSION:
            what = f"hello answered {answer!r}, not protocol version {VERSION}"
            raise ImplementationFailure(what, self.stderr_tail())
        return described

    def call(self, op: str, args: Mapping[str, Any], now: str, timeout: float = 120.0) -> Answer:
        return self.result(self.send({"op": op, "args": dict(args), "now": now}), timeout)

    def close(self, timeout: float = 30.0) -> int:
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
