"""Parallel property-based testing of any plug-in's system, as Erlang QuickCheck / PropEr `parallel_commands`
and quickcheck-state-machine do it: a sequential prefix, then 2-4 branches released together, judged by the
linearizability checker against the model.

    spec.py       ParallelSpec: what a plug-in supplies (`SystemPlugin.parallel`): its strategy of contested
                  calls, a commit-failing client, its structural checks of a race
    program.py    ParallelProgram (the system's name, prefix + branches of BranchCall), JSON, contested_keys
    strategy.py   programs(plugin): the plug-in's strategy, kept when a partition is contested (pure)
    execute.py    run_once(db, program): prefix in lockstep, branches on threads, history, verdict
    case.py       run_case(projects, program, repeat=R): R fresh projects, "fails sometimes/always";
                  counterexamples: save_counterexample, replay_parallel(path, db), recheck_parallel(path)
    property.py   run_property(...): the property under Hypothesis, shrinking kept stable; budgets

Replaying a saved counterexample (counterexamples/parallel-<system>-<id>.json):

    from fencecheck.parallel import replay_parallel
    repetition = replay_parallel(path, db)      # db: a client for an empty project
    repetition.passed, repetition.status, repetition.explain()
"""

from fencecheck.parallel.case import (
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
from fencecheck.parallel.execute import Repetition, run_once
from fencecheck.parallel.program import BranchCall, ParallelProgram, ProgramSize, contested_keys
from fencecheck.parallel.property import (
    BUDGETS,
    Budget,
    Outcome,
    ParallelFailure,
    budget_for,
    parallel_settings,
    run_property,
)
from fencecheck.parallel.spec import CommitFailure, ParallelSpec
from fencecheck.parallel.strategy import programs, spec_of

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
    "CommitFailure",
    "Outcome",
    "ParallelFailure",
    "ParallelProgram",
    "ParallelSpec",
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
    "spec_of",
]
