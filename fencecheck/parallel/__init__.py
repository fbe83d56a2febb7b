"""Parallel property-based testing of the journal, as Erlang QuickCheck / PropEr `parallel_commands` and
quickcheck-state-machine do it: a sequential prefix, then 2-4 branches released together, judged by the
linearizability checker against the model.

    program.py    ParallelProgram (prefix + branches of BranchCall), JSON, contested_keys (pure)
    strategy.py   programs(): the Hypothesis strategy, drawn so that contests actually happen (pure)
    execute.py    run_once(db, program): prefix in lockstep, branches on threads, history, verdict
    case.py       run_case(projects, program, repeat=R): R fresh projects, "fails sometimes/always";
                  counterexamples: save_counterexample, replay_parallel(path, db), recheck_parallel(path)
    property.py   run_property(...): the property under Hypothesis, shrinking kept stable; budgets

Replaying a saved counterexample (counterexamples/parallel-<system>-<id>.json):

    from fencecheck.parallel import replay_parallel
    repetition = replay_parallel(path, db)      # db: a client for an empty project
    repetition.passed, repetition.status, repetition.explain()
"""

from .case import (
    CLASSIFICATIONS,
    CONTENDED,
    COUNTEREXAMPLE_FORMAT,
    DEFAULT_REPEAT,
    FAILS_ALWAYS,
    FAILS_IN_PREFIX,
    FAILS_SOMETIMES,
    PASSES,
    CaseResult,
    ProjectSource,
    load_counterexample,
    recheck_parallel,
    replay_parallel,
    replay_parallel_case,
    run_case,
    save_counterexample,
)
from .execute import Repetition, run_once
from .program import BranchCall, ParallelProgram, ProgramSize, contested_keys
from .property import BUDGETS, Budget, Outcome, ParallelFailure, budget_for, parallel_settings, run_property
from .strategy import programs

__all__ = [
    "BUDGETS",
    "CLASSIFICATIONS",
    "CONTENDED",
    "COUNTEREXAMPLE_FORMAT",
    "DEFAULT_REPEAT",
    "FAILS_ALWAYS",
    "FAILS_IN_PREFIX",
    "FAILS_SOMETIMES",
    "PASSES",
    "BranchCall",
    "Budget",
    "CaseResult",
    "Outcome",
    "ParallelFailure",
    "ParallelProgram",
    "ProgramSize",
    "ProjectSource",
    "Repetition",
    "budget_for",
    "contested_keys",
    "load_counterexample",
    "parallel_settings",
    "programs",
    "recheck_parallel",
    "replay_parallel",
    "replay_parallel_case",
    "run_case",
    "run_once",
    "run_property",
    "save_counterexample",
]
