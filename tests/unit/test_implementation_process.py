"""The protocol client (fencecheck/protocol/process.py) against small fake implementations written in Python.

No Node and no emulator: each fake is a few lines run with this interpreter, speaking (or breaking) the
protocol of docs/implementation-protocol.md, so the client's reporting is pinned where CI runs.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from fencecheck.problems import ProblemKind
from fencecheck.protocol.process import Answer, ImplementationFailure, ImplementationProcess, ProtocolErrorAnswer

# Reads requests until it holds `n`, then answers them in reverse order (answers in any order are legal).
_PRELUDE = """
import json, os, sys
def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
hello = json.loads(sys.stdin.readline())
answer({"id": hello["id"], "output": {"protocol": "fencecheck-implementation", "version": 1, "system": "journal",
        "implementation": "fake", "projectId": os.environ["FENCECHECK_PROJECT_ID"]}})
"""


def fake(body: str) -> ImplementationProcess:
    script = _PRELUDE + textwrap.dedent(body)
    return ImplementationProcess(
        [sys.executable, "-c", script], emulator_host="127.0.0.1:1", project_id="demo-fake"
    )


def test_answers_in_any_order_reach_their_requests() -> None:
    with fake(
        """
        held = [json.loads(sys.stdin.readline()) for _ in range(3)]
        for request in reversed(held):
            answer({"id": request["id"], "output": {"echo": request["args"]["n"]}})
        answer({"id": json.loads(sys.stdin.readline())["id"], "error": {"code": "lease_busy"}})
        """
    ) as process:
        assert process.hello(system="journal", accepted=(1, 2))["projectId"] == "demo-fake"
        futures = [process.send({"op": "x", "args": {"n": n}, "now": "t"}) for n in range(3)]
        assert [process.result(f, 60).output for f in futures] == [{"echo": 0}, {"echo": 1}, {"echo": 2}]
        assert process.call("x", {}, "t") == Answer(error="lease_busy")


def test_a_protocol_error_is_the_requests_fault_and_the_process_goes_on() -> None:
    with fake(
        """
        for line in sys.stdin:
            request = json.loads(line)
            if request["op"] == "bad":
                answer({"id": request["id"], "protocolError": "unknown op"})
            else:
                answer({"id": request["id"], "output": {}})
        """
    ) as process:
        process.hello(system="journal", accepted=(1, 2))
        with pytest.raises(ProtocolErrorAnswer, match="unknown op"):
            process.call("bad", {}, "t")
        assert process.call("good", {}, "t") == Answer(output={})


def test_a_line_the_implementation_could_not_parse_fails_what_is_in_flight_as_ours_and_it_goes_on() -> None:
    # docs/implementation-protocol.md: a line that is not JSON is answered with `"id": null`.
    with fake(
        """
        for line in sys.stdin:
            try:
                request = json.loads(line)
            except ValueError:
                answer({"id": None, "protocolError": "not JSON"})
                continue
            if request["op"] != "wait":
                answer({"id": request["id"], "output": {}})
        """
    ) as process:
        process.hello(system="journal", accepted=(1, 2))
        waiting = process.send({"op": "wait", "args": {}, "now": "t"})
        process.send_raw(b"{not json\n")
        with pytest.raises(ProtocolErrorAnswer, match="not JSON") as refused:
            process.result(waiting, 60)
        assert refused.value.problem_kind.value == "harness"
        assert process.call("good", {}, "t") == Answer(output={})


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        '{"id": 2}',
        '{"id": 2, "output": {}, "error": {"code": "x"}}',
        '{"id": 2, "error": "lease_busy"}',
        '{"id": 99, "output": {}}',
    ],
)
def test_a_malformed_answer_is_an_implementation_failure_with_the_stderr_tail(line: str) -> None:
    with fake(
        f"""
        sys.stdin.readline()
        sys.stderr.write("fake: about to misbehave\\n"); sys.stderr.flush()
        sys.stdout.write({line!r} + "\\n"); sys.stdout.flush()
        sys.stdin.read()
        """
    ) as process:
        process.hello(system="journal", accepted=(1, 2))
        with pytest.raises(ImplementationFailure) as caught:
            process.call("x", {}, "t")
        assert "fake: about to misbehave" in caught.value.stderr_tail
        assert "malformed answer" in caught.value.what or "not in flight" in caught.value.what


def test_a_crash_with_requests_in_flight_is_reported_with_its_exit_code_and_stderr() -> None:
    with fake(
        """
        sys.stdin.readline()
        sys.stderr.write("fake: Traceback (most recent call last): boom\\n"); sys.stderr.flush()
        sys.exit(3)
        """
    ) as process:
        process.hello(system="journal", accepted=(1, 2))
        with pytest.raises(ImplementationFailure, match=r"exited \(code 3\)") as caught:
            process.call("x", {}, "t")
        assert "boom" in caught.value.stderr_tail
        # later requests fail the same way at once, never hang
        with pytest.raises(ImplementationFailure, match="exited"):
            process.call("x", {}, "t")


def test_an_implementation_error_answer_is_a_failure_not_a_verdict() -> None:
    with fake(
        """
        request = json.loads(sys.stdin.readline())
        answer({"id": request["id"], "implementationError": "TypeError"})
        sys.stdin.read()
        """
    ) as process:
        process.hello(system="journal", accepted=(1, 2))
        with pytest.raises(ImplementationFailure, match="implementationError TypeError"):
            process.call("x", {}, "t")


def _hello_answering(output: dict) -> list[str]:
    script = f"""
import json, sys
request = json.loads(sys.stdin.readline())
sys.stdout.write(json.dumps({{"id": request["id"], "output": {output!r}}}) + "\\n"); sys.stdout.flush()
sys.stdin.read()
"""
    return [sys.executable, "-c", script]


@pytest.mark.parametrize(("system", "output", "refusal"), [
    ("journal", {"version": 3, "system": "journal"}, "not protocol version 1 or 2"),
    ("journal", {"version": True, "system": "journal"}, "not protocol version 1 or 2"),  # True is not 1
    ("lantern", {"version": 1, "system": "lantern"}, "not protocol version 2 .the lantern needs one of those"),
    ("lantern", {"version": 2, "system": "journal"}, "named the system 'journal', not the lantern"),
])
def test_a_hello_of_a_version_or_system_the_harness_did_not_ask_for_is_refused(system, output, refusal) -> None:
    with ImplementationProcess(_hello_answering(output), emulator_host="h", project_id="p") as process:
        with pytest.raises(ImplementationFailure, match=refusal) as raised:
            process.hello(system=system, accepted=(1, 2) if system == "journal" else (2,))
    assert raised.value.problem_kind is ProblemKind.PROTOCOL


def test_the_hello_offers_both_versions_and_names_the_system(tmp_path) -> None:
    seen = tmp_path / "hello.json"
    script = f"""
import json, sys
line = sys.stdin.readline()
open({str(seen)!r}, "w").write(line)
request = json.loads(line)
sys.stdout.write(json.dumps({{"id": request["id"], "output": {{"version": 2, "system": "gateway"}}}}) + "\\n")
sys.stdout.flush()
sys.stdin.read()
"""
    with ImplementationProcess([sys.executable, "-c", script], emulator_host="h", project_id="p") as process:
        assert process.hello(system="gateway", accepted=(2,)) == {"version": 2, "system": "gateway"}
    assert json.loads(seen.read_text()) == {"id": 1, "op": "hello", "protocol": "fencecheck-implementation",
                                            "versions": [1, 2], "system": "gateway"}


def _pool_fake(tmp_path, together: int) -> list[str]:
    """A fake whose hello answers only once `together` fakes have started (each leaves a file in
    `tmp_path`): a pool that started them one at a time would wait for ever (then fail at HELLO_SECONDS)."""
    script = f"""
import json, os, pathlib, sys, time
here = pathlib.Path({str(tmp_path)!r})
(here / f"started-{{os.getpid()}}").touch()
while len(list(here.glob("started-*"))) < {together}:
    time.sleep(0.01)
hello = json.loads(sys.stdin.readline())
sys.stdout.write(json.dumps({{"id": hello["id"], "output": {{"protocol": "fencecheck-implementation", "version": 1,
    "system": "journal", "implementation": "fake", "projectId": os.environ["FENCECHECK_PROJECT_ID"]}}}}) + "\\n")
sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.write(json.dumps({{"id": request["id"], "output": {{"host": os.environ["FIRESTORE_EMULATOR_HOST"]}}}})
                     + "\\n")
    sys.stdout.flush()
"""
    return [sys.executable, "-c", script]


def test_a_pool_starts_the_processes_of_several_hosts_at_once_and_ends_a_hosts_own(tmp_path) -> None:
    """A race's wire lanes are hosts of their own: their processes start together (not one hello after the
    other), each call reaches the process of its client's host, and `close_host` ends only that host's."""
    import threading

    from fencecheck.protocol.process import ImplementationPool

    hosts = ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")
    pool = ImplementationPool(_pool_fake(tmp_path, len(hosts)), system="journal", accepted=(1, 2))
    answers: dict[str, object] = {}
    try:
        threads = [threading.Thread(target=lambda h=h: answers.__setitem__(h, pool.call(h, "demo-p", "x", {}, "t")))
                   for h in hosts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert answers == {host: Answer(output={"host": host}) for host in hosts}
        assert pool.running() == 3
        pool.close_host("127.0.0.1:2")
        assert pool.running() == 2
        assert pool.call("127.0.0.1:1", "demo-p", "x", {}, "t") == Answer(output={"host": "127.0.0.1:1"})
    finally:
        pool.close()
    assert pool.running() == 0
