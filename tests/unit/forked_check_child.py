"""Parallel checks, each run from a fresh process of one thread (`python -m tests.unit.forked_check_child NAME`).

`check(processes=N)` forks only from a process that runs no other thread (`fork_is_safe`), and a pytest worker
may run gRPC's: so the tests of the forked search (tests/unit/test_linearizability.py) run it here, where it
forks, and fail on a non-zero exit or on a hang (the subprocess's timeout). Each scenario asserts that the
search did run in more than one process.
"""

from __future__ import annotations

import os
import signal
import sys

from fencecheck.checker.fork import SearchProcessDied
from fencecheck.checker.history import History
from fencecheck.checker.linearizability import check, fork_is_safe
from tests.register_plugin import REGISTER, break_reads, register_history


def parallel_processes_give_the_sequential_verdict() -> None:
    from tests.unit.test_linearizability import _hard_then_easy  # that module names these scenarios

    for history in (break_reads(register_history(3, calls=600), 2, seed=3), _hard_then_easy()):
        for full in (False, True):
            one = check(history, plugin=REGISTER, full=full)
            two = check(history, plugin=REGISTER, full=full, processes=2)
            assert two.processes == 2, f"searched in {two.processes} process(es), not 2"
            assert one.status == two.status == "illegal"
            assert [(p.key_hash, p.status, p.steps) for p in one.partitions] == [
                (p.key_hash, p.status, p.steps) for p in two.partitions
            ]
            assert one.order == two.order and one.explain() == two.explain()
            assert bool(one.not_checked) == (not full)
    ok = register_history(3, calls=600)
    assert check(ok, plugin=REGISTER, processes=2).final_state == check(ok, plugin=REGISTER).final_state


def budget_exhaustion_is_unknown_in_parallel_too() -> None:
    """The hard register beside an easy ok one: two partitions, so two processes search."""
    from tests.unit.test_linearizability import MS, _hard_illegal, _register_calls

    history = History([*_hard_illegal().calls, *_register_calls("a", 1000, 5 * MS, bad=False)], system="register")
    runs = [check(history, plugin=REGISTER, budget=500, full=True, processes=p) for p in (1, 1, 2)]
    assert [v.processes for v in runs] == [1, 1, 2]
    assert [[p.status for p in v.partitions] for v in runs] == [["unknown", "ok"]] * 3
    assert {v.partitions[0].steps for v in runs} == {500}
    assert len({tuple(c.id for c in v.partitions[0].order) for v in runs}) == 1


def a_parallel_check_ends_under_a_sigterm_handler_that_only_records() -> None:
    """The pool's workers are forked: they inherit this process's handlers, and one that only records SIGTERM
    (as the gate's guard does once it holds) survived the pool's terminate(), so the check waited for them
    forever. Each worker starts with SIGTERM's default action."""
    history = break_reads(register_history(3, calls=600), 2, seed=3)
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    verdicts = [check(history, plugin=REGISTER, processes=2) for _ in range(3)]
    assert [(v.status, v.processes) for v in verdicts] == [("illegal", 2)] * 3


def a_search_process_that_dies_is_an_error_not_a_hang() -> None:
    """A worker of `multiprocessing.Pool` that dies mid-task leaves the pool waiting for ever."""
    parent = os.getpid()

    def dies_in_a_child(state, op):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return REGISTER.step(state, op)

    try:
        check(break_reads(register_history(3, calls=600), 2, seed=3), plugin=REGISTER, step=dies_in_a_child,
              processes=2)
    except SearchProcessDied as died:
        assert "killed by signal 9" in str(died), died
    else:
        raise AssertionError("a check whose search processes died gave a verdict")


def a_step_that_raises_in_a_search_process_raises_in_the_check() -> None:
    def raises(state, op):
        raise ValueError("the model refuses")

    try:
        check(break_reads(register_history(3, calls=600), 2, seed=3), plugin=REGISTER, step=raises, processes=2)
    except ValueError as error:
        assert str(error) == "the model refuses"
    else:
        raise AssertionError("a step function's error was lost in its search process")


SCENARIOS = {
    "a_search_process_that_dies_is_an_error_not_a_hang": a_search_process_that_dies_is_an_error_not_a_hang,
    "a_step_that_raises_in_a_search_process_raises_in_the_check": (
        a_step_that_raises_in_a_search_process_raises_in_the_check
    ),
    "parallel_processes_give_the_sequential_verdict": parallel_processes_give_the_sequential_verdict,
    "budget_exhaustion_is_unknown_in_parallel_too": budget_exhaustion_is_unknown_in_parallel_too,
    "a_parallel_check_ends_under_a_sigterm_handler_that_only_records": (
        a_parallel_check_ends_under_a_sigterm_handler_that_only_records
    ),
}

if __name__ == "__main__":
    assert fork_is_safe(), "this process runs more than one thread before any check: nothing here forks"
    SCENARIOS[sys.argv[1]]()
    print(f"passed: {sys.argv[1]}")
