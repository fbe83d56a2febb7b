"""The registered systems' parts of the shared suites (`fencecheck.plugin.SuiteParts`), as the suites ask for them.

The suites (stateful_tests, race_tests, parallel_tests) run a part for every registered system that declares it
and keep no list of systems of their own; `missing(part)` names the systems without it, which each suite turns
into failing tests (`missing_part_message`), so a system left out is a red test, never a quiet skip.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fencecheck.plugin.records import SystemPlugin, load_part
from fencecheck.plugin.registry import SYSTEM_NAMES, plugin

# The parts whose absence each suite reports (the known-bad parts are optional: a system may have no variant a
# suite can catch, and its catalogue is then run by the suites that can).
REQUIRED = {
    "machine": "lockstep machine (stateful_tests): SuiteParts(machine='stateful_tests.<system>_machine:TestX')",
    # The module's interface (docs/suites.md, "Race scenarios"): SCENARIOS, BY_NAME, INVARIANTS, PROMISE, optional
    # CATCHES; each scenario's name, promise_text and execute(db, *, implementation, repeat, artifacts_dir,
    # counterexamples_dir, emulator, project_id, wire_mix) -> (ContestResult, run).
    "races": "race scenarios (race_tests): SuiteParts(races='race_tests.<system>_scenarios'), a module with "
             "SCENARIOS, BY_NAME, INVARIANTS, PROMISE (optional CATCHES), each scenario with name, promise_text and "
             "execute(db, *, implementation, repeat, artifacts_dir, counterexamples_dir, emulator, project_id, "
             "wire_mix) -> (ContestResult, run) (docs/suites.md)",
    "parallel": "parallel programs (parallel_tests): SystemPlugin(parallel=<() -> fencecheck.parallel.ParallelSpec>)",
}


def has_part(system: SystemPlugin, part: str) -> bool:
    """Whether `system` declares `part`: a `SuiteParts` field, or `parallel` (the plug-in's own field: its
    parallel programs)."""
    if part == "parallel":
        return system.parallel is not None
    if part == "parallel_variants":
        return bool(system.parallel is not None and tuple(system.suites.parallel_variants()))
    if part == "race_variants":
        return bool(system.suites.races and getattr(load_part(system.suites.races), "CATCHES", None))
    return getattr(system.suites, part) is not None


def with_part(part: str) -> tuple[str, ...]:
    """The registered systems that declare `part`, in registry order."""
    return tuple(name for name in SYSTEM_NAMES if has_part(plugin(name), part))


def missing(part: str) -> tuple[str, ...]:
    """The registered systems that do not declare `part`."""
    return tuple(name for name in SYSTEM_NAMES if not has_part(plugin(name), part))


def missing_part_message(name: str, part: str) -> str:
    return (f"the registered system {name!r} declares no {REQUIRED[part]}, so none of its tests in that suite "
            f"runs: declare it in its plug-in's SuiteParts (fencecheck/plugin/records.py), or remove the system from "
            f"fencecheck/plugin/registry.py's REGISTRY")


def module_file(where: str) -> Path | None:
    """The source file of the module a part names (`"module"` or `"module:attribute"`), found without executing
    it (only its parent packages are imported); None when no such module exists."""
    try:
        spec = importlib.util.find_spec(where.partition(":")[0])
    except ModuleNotFoundError:
        return None
    return Path(spec.origin).resolve() if spec is not None and spec.origin else None


def load(system: SystemPlugin, part: str) -> Any:
    """What `system`'s `part` names (`load_part`); the part must be declared."""
    where = getattr(system.suites, part)
    if where is None:
        raise LookupError(f"{system.name} declares no {part}")
    return load_part(where)


def uncalled_functions(system: SystemPlugin, ops: Iterable[Any], where: str) -> list[str]:
    """Why `ops` (what `where`, a system's races or parallel programs, calls) do not put every operation of
    `system` to the test: each function of its table (`Implementations.functions`) that none of them calls, or
    that the system declares no functions. Empty when every one is called."""
    if not system.functions:
        return [f"{system.name} declares no operations (Implementations.functions: every function of its table), so "
                f"nothing can tell whether its {where} call each of them"]
    called = {system.function_of(op) for op in ops}
    return [f"no {where.rstrip('s')} of {system.name} calls {name}: its concurrent behaviour goes untested"
            for name in system.functions if name not in called]
