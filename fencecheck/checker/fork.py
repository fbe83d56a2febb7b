"""A check's partitions searched in forked processes (`check(processes=N)`), with no helper thread.

Each child is forked once, inherits its share of the partitions (every N-th one: step functions and plug-ins
need not be picklable) and keeps their paused searches (`stepwise`) from round to round. Per round the
parent writes the round's cap to every child; each child resumes its undecided searches up to that cap and
answers with the ones decided. So every partition makes the attempts, in the order, of the search in one
process: the same results.

Why not `multiprocessing.Pool`: its three helper threads outlive `terminate()` by an instant, so the next
check found threads beside it (`fork_is_safe`) and searched alone; and a worker that dies mid-task leaves
`imap` waiting for ever, where here the parent reads end-of-file and raises.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, BinaryIO

from fencecheck.checker.search import Found, resume
from fencecheck.errors import FencecheckError

Search = Generator[int, int, Found]
_CAP = struct.Struct(">q")
_SIZE = struct.Struct(">Q")


class SearchProcessDied(FencecheckError, RuntimeError):
    """A forked search process ended without its answer (killed, or crashed in native code)."""


def advance(running: dict[int, Search], cap: int) -> dict[int, Found]:
    """Resume every search in `running` up to `cap` attempts; the ones decided, removed from `running`."""
    decided = {}
    for k in list(running):
        found = resume(running[k], cap)
        if found is not None:
            del running[k]
            decided[k] = found
    return decided


class _Child:
    def __init__(self, pid: int, caps: BinaryIO, answers: BinaryIO) -> None:
        self.pid, self.caps, self.answers = pid, caps, answers

    def ask(self, cap: int) -> None:
        self.caps.write(_CAP.pack(cap))
        self.caps.flush()

    def answer(self) -> dict[int, Found]:
        header = self.answers.read(_SIZE.size)
        body = self.answers.read(_SIZE.unpack(header)[0]) if len(header) == _SIZE.size else b""
        if len(header) < _SIZE.size or len(body) < _SIZE.unpack(header)[0]:
            raise SearchProcessDied(
                f"search process {self.pid} ended without its answer ({_status(self.pid)}): the check has no "
                "verdict; run it again with processes=1 to search in this process"
            )
        outcome, value = pickle.loads(body)
        if outcome == "raised":
            raise value
        return value


def _status(pid: int) -> str:
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def _serve(running: dict[int, Search], caps: BinaryIO, answers: BinaryIO) -> None:
    while len(request := caps.read(_CAP.size)) == _CAP.size:
        try:
            body = pickle.dumps(("decided", advance(running, _CAP.unpack(request)[0])))
        except Exception as error:  # a step function's own error, raised in the parent as in one process
            try:
                body = pickle.dumps(("raised", error))
            except Exception:
                body = pickle.dumps(("raised", RuntimeError(f"in a search process: {error!r}")))
        answers.write(_SIZE.pack(len(body)) + body)
        answers.flush()


def _fork(running: dict[int, Search], inherited: Sequence[_Child]) -> _Child:
    caps_read, caps_write = os.pipe()
    answers_read, answers_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        code = 1
        try:
            # Default actions: a handler the parent set to only record a signal (as the gate's guard does)
            # would keep this process alive through a SIGTERM or Ctrl-C meant to end it.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            for sibling in inherited:  # so each sibling sees end-of-file when the parent closes its end
                sibling.caps.close()
                sibling.answers.close()
            os.close(caps_write)
            os.close(answers_read)
            with os.fdopen(caps_read, "rb") as caps, os.fdopen(answers_write, "wb") as answers:
                _serve(running, caps, answers)
            code = 0
        finally:
            os._exit(code)
    os.close(caps_read)
    os.close(answers_write)
    return _Child(pid, os.fdopen(caps_write, "wb"), os.fdopen(answers_read, "rb"))


@contextmanager
def forked(searches: Sequence[Search], processes: int) -> Iterator[Any]:
    """`processes` children, child i holding searches i, i + processes, ...; yields `round(cap)`, which
    returns the searches decided by `cap` attempts (index -> Found). Every child is reaped on the way out:
    closed down when the rounds ended, killed when they were cut short."""
    children: list[_Child] = []
    completed = False
    try:
        for i in range(processes):
            children.append(_fork({k: searches[k] for k in range(i, len(searches), processes)}, children))

        def round_(cap: int) -> dict[int, Found]:
            for child in children:
                child.ask(cap)
            decided: dict[int, Found] = {}
            for child in children:
                decided.update(child.answer())
            return decided

        yield round_
        completed = True
    finally:
        for child in children:
            if not completed:
                _kill(child.pid)
            child.caps.close()
            child.answers.close()
        for child in children:
            _reap(child.pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped already, by SearchProcessDied's message
        pass


@contextmanager
def in_process(searches: Sequence[Search]) -> Iterator[Any]:
    """The same rounds as `forked`, searched here."""
    running = dict(enumerate(searches))
    yield lambda cap: advance(running, cap)
