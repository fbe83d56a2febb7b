"""Commit-failing first attempts of races and parallel programs run through a fault proxy of their own
(`fencecheck.wire.lanes`), for any implementation: the Python reference and the Node journal in another
process alike. The calls the proxy hit carry its faults in the history (`Call.wire_faults`), the proxy's log
must show every commit sent there rejected before the emulator, and no proxy outlives the run."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest

from fencecheck.checker.history import WireFault
from fencecheck.parallel import BranchCall, ParallelProgram, run_once
from fencecheck.parallel.execute import OK
from fencecheck.runners.contest import Ids, run_contest
from fencecheck.systems.journal.plugin import JOURNAL
from fencecheck.wire import NO_FAULTS
from fencecheck.wire import proxy as proxy_module
from fencecheck.wire.lanes import WireLanes
from model.journal import Acquire, CommandRef, Register
from tests.systems.journal.races import BY_NAME

pytestmark = pytest.mark.emulator

MAIN = "implementations/node-journal/main.js"
NODE_SPEC = f"journal:exec:node {MAIN}"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
X = CommandRef("test", "firebase_uid", "uid-alice", "00000001-c0de-4000-8000-000000000000",
               "create_checkout_session", 1, '{"quantity":1}')
HOLDERS = ("0000000a-1ea5-4000-a000-000000000000", "0000000b-1ea5-4000-a000-000000000000")


def _node():
    if shutil.which("node") is None or not Path(MAIN).is_file():
        pytest.fail(f"node on PATH and {MAIN} under the working directory are needed: run from the project root "
                    "after ./run setup", pytrace=False)
    return JOURNAL.resolve(NODE_SPEC)


def _four_way_registration():
    """commit_failure_registration at 4-way: callers 0 and 2 make their first attempt with commit_fails."""
    plan = BY_NAME["commit_failure_registration"].plan(Ids(11))
    return attrs.evolve(plan, callers=plan.callers[:4]).contest()


def _program() -> ParallelProgram:
    at = T0 + timedelta(seconds=5)
    branches = ((BranchCall(Acquire(X, HOLDERS[0], at), commit_failure_first=True),),
                (BranchCall(Acquire(X, HOLDERS[1], at)),))
    return ParallelProgram((Register(X, T0),), branches, system="journal")


def _assert_rejected_on_the_wire(history, failing_callers) -> None:
    for call in history.calls:
        first = min(c.id for c in history.calls if c.caller == call.caller)
        if call.caller in failing_callers and call.id == first:
            assert call.op.commit_fails, call
            # the whole event: refused before the emulator, so the call lost no answer (and is not excused)
            assert call.wire_faults and set(call.wire_faults) == {WireFault("reject", "Commit", False, True)}, call
            assert not call.lost_answer_to_wire, call
        else:
            assert call.wire_faults == (), call  # the other racers' calls never met the rejecting proxy


def _no_new_proxy(before: set) -> None:
    assert set(proxy_module._running) <= before  # every lane's proxy stopped with the run


def _check_contest(db, implementation) -> None:
    running = set(proxy_module._running)
    contest = _four_way_registration()
    failing = {racer.name for racer in contest.racers if racer.first_op is not None}
    assert len(failing) == 2
    run = run_contest(db, contest, plugin=JOURNAL, implementation=implementation)
    assert run.verdict.ok, run.verdict.explain()
    assert run.problems == (), run.problems
    _assert_rejected_on_the_wire(run.history, failing)
    assert run.wire_faults.get("reject Commit", 0) >= 2 and set(run.wire_faults) == {"reject Commit"}
    assert run.wire_seed is None  # no fault mix asked
    _no_new_proxy(running)


def test_a_commit_failing_racer_meets_the_proxy_of_its_own_reference(firestore_db):
    _check_contest(firestore_db, None)


def test_a_commit_failing_racer_of_an_implementation_in_another_process(firestore_db):
    """The Node journal: its process for the lane is started against the lane's proxy (`journal_exec` takes
    the host from the client it is handed), so the refusal reaches it; no ExecFaultUnsupported."""
    _check_contest(firestore_db, _node())


@pytest.mark.parametrize("implementation", ["reference", "node"])
def test_a_commit_failing_branch_call_meets_the_proxy(firestore_db, implementation):
    system = _node() if implementation == "node" else None
    running = set(proxy_module._running)
    repetition = run_once(firestore_db, _program(), system=system)
    assert repetition.status == OK, repetition.explain()
    _assert_rejected_on_the_wire(repetition.history, {"b1"})  # b1's call is the commit-failing one
    assert repetition.wire_faults.get("reject Commit", 0) >= 1
    _no_new_proxy(running)


def test_a_commit_that_reached_the_emulator_on_the_rejecting_lane_is_a_problem(firestore_db):
    """The check can fail: a rejecting lane whose plan was lifted forwards a commit, and says so."""
    running = set(proxy_module._running)
    with WireLanes(firestore_db) as lanes:
        lane = lanes.rejecting("r")
        assert lanes.rejection_problems() == []
        lane.proxy.set_plan(NO_FAULTS)
        lane.db.document("strays/x").set({"by": "test"})
        problems = lanes.rejection_problems()
    assert problems == ["r/commit-rejected: 1 commit(s) sent on the commit-rejecting wire, 0 rejected before the "
                        "emulator: a commit that should have been rejected may have been applied"]
    _no_new_proxy(running)



def test_a_read_that_began_a_transaction_is_rolled_back_when_the_proxy_cuts_it(firestore_db, wire_session):
    """The Node client begins its transaction with its first read (`new_transaction`): when the proxy cuts
    that read the client abandons the attempt without a Rollback, and the emulator held the document's lock
    until its timeout. The proxy ends that transaction: a commit in it is refused afterwards."""
    from google.api_core import exceptions as api_exceptions

    from fencecheck.wire import cut_stream, on

    firestore_db.document("docs/a").set({"n": 1})
    through = wire_session.db
    with wire_session.proxy.faults(on("BatchGetDocuments", cut_stream())):
        stream = through._firestore_api.batch_get_documents(request={
            "database": through._database_string, "documents": [through.document("docs/a")._document_path],
            "new_transaction": {"read_write": {}}})
        first = next(iter(stream))
        assert wire_session.proxy.log.wait_for(1, 60)[0].label == "cut-stream BatchGetDocuments"
    assert first.transaction  # the read began a transaction, and the client learned its id
    with pytest.raises(api_exceptions.InvalidArgument):  # rolled back by the proxy: closed
        firestore_db._firestore_api.commit(request={"database": firestore_db._database_string, "writes": [],
                                                    "transaction": first.transaction})
