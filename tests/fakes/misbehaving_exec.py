"""An `exec:` journal implementation that misbehaves at its first call, for the runners' tests of errors.

Run as a script (`python misbehaving_exec.py HOW`) it speaks the process protocol (docs/implementation-protocol.md):
it greets, then at its first call `crash` writes a traceback to stderr and exits (the harness's message then spans
lines: the stderr tail), `hang` never answers, `malformed` answers with an extra key (not the protocol), `garbage`
with a line that is not JSON. It never touches Firestore. `MISBEHAVIOURS` says which kind of problem each is
(fencecheck.problems) and `VERDICTS` what the one judge must make of it; `misbehaving_journal(how)` is the journal
implementation that starts it, with the harness's answer timeout cut to `HANG_SECONDS` while it is in use.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Iterator
from typing import Any

from fencecheck.checker.known_bad_verdict import ERROR, TIMEOUT
from fencecheck.problems import ProblemKind

MISBEHAVIOURS = {"crash": ProblemKind.CRASH, "hang": ProblemKind.HANG, "malformed": ProblemKind.PROTOCOL,
                 "garbage": ProblemKind.PROTOCOL}
VERDICTS = {ProblemKind.CRASH: ERROR, ProblemKind.HANG: TIMEOUT, ProblemKind.PROTOCOL: ERROR}
HANG_SECONDS = 1.0  # how long the harness waits for an answer in these tests (CALL_SECONDS is 120 s in the suites)


def spec_of(how: str) -> str:
    return f"journal:exec:{shlex.join([sys.executable, os.path.abspath(__file__), how])}"


@contextlib.contextmanager
def misbehaving_journal(how: str) -> Iterator[Any]:
    """The journal implementation that starts this script misbehaving as `how` says; its processes are ended and
    the answer timeout restored at the end."""
    from unittest import mock

    from fencecheck.protocol import process as implementation_process
    from fencecheck.systems.journal.exec import exec_journal, pool_of

    exec_journal.cache_clear()
    pool_of.cache_clear()
    try:
        with mock.patch.object(implementation_process, "CALL_SECONDS", HANG_SECONDS):
            yield exec_journal(spec_of(how))
    finally:
        pool_of(spec_of(how)).close()
        exec_journal.cache_clear()
        pool_of.cache_clear()


def _answer(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def main(how: str) -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "hello":
            _answer({"id": request["id"], "output": {"protocol": "fencecheck-implementation", "version": 1,
                                                     "system": "journal", "implementation": f"misbehaving-{how}",
                                                     "projectId": os.environ["FENCECHECK_PROJECT_ID"]}})
        elif how == "crash":
            sys.stderr.write("Traceback (most recent call last):\n  File 'journal.py', line 1\nTypeError: boom\n")
            sys.stderr.flush()
            sys.exit(1)
        elif how == "malformed":
            _answer({"id": request["id"], "output": {"outcome": "registered"}, "extra": True})
        elif how == "garbage":
            sys.stdout.write("registered, I think\n")
            sys.stdout.flush()
        # hang: the request is never answered


if __name__ == "__main__":
    main(sys.argv[1])
