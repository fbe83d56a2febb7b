"""The gate's suites: each one's pytest arguments, and which of them take the implementation under test. Shared by
the gate (fencecheck.cli.main) and `fencecheck mutate` (fencecheck.cli.mutate), which runs those suites against each
mutant."""

from __future__ import annotations

from dataclasses import dataclass

from fencecheck.plugin.specs import system_of_spec


@dataclass(frozen=True)
class Suite:
    name: str
    args: tuple[str, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        """The test paths it collects (its arguments that are neither options nor an option's value)."""
        return tuple(arg for before, arg in zip(("", *self.args), self.args, strict=False)
                     if not arg.startswith("-") and before != "-m")


# The gate verifies the systems: the tests of the harness's own processes (marked harness: a gate inside the
# gate, replay, signals, progress; about 200 s of test time) are `./run tests`' to run. pytest counts them as
# deselected, and the gate says so before its first suite.
NOT_HARNESS = "not harness"  # fencecheck.suites.pytest_plugin.HARNESS_MARKER
# Each built-in system's own tests (tests/systems/<system>/): those that need no emulator are the unit suite's, the
# others (marked emulator, by their fixtures) the emulator suite's; its machine and races are the stateful and race
# suites' parts (SuiteParts), which those suites collect from the plug-in.
SYSTEMS_TESTS = "tests/systems"
# xdist's default (load) hands each worker a queue of tests up front: at a suite's end one worker could sit
# idle while the other still had a module of slow tests queued. An idle worker steals them instead (the unit
# suite: 125 s to 95 s on two workers). `./run tests` passes the same.
WORK_STEALING = ("--dist", "worksteal")
SUITES = (
    Suite("unit", ("tests/unit", SYSTEMS_TESTS, "-m", f"{NOT_HARNESS} and not emulator")),
    Suite("rules", ("tests/emulator/test_rules.py",)),
    Suite("emulator", ("tests/emulator", SYSTEMS_TESTS, "--ignore=tests/emulator/test_rules.py", "-m",
                       f"{NOT_HARNESS} and emulator")),
    Suite("stateful", ("stateful_tests",)),
    Suite("races", ("race_tests",)),
    Suite("parallel", ("parallel_tests",)),
)
# Against one implementation (--known-bad, --system) these suites run its system's tests only, without the
# known-bad catalogues (they run every variant on purpose, which is not what is asked): the tests are marked
# system(<name>) and catalogue, and the suites' pytest deselects by those marks (fencecheck.suites.pytest_plugin).
TAKES_THE_SYSTEM = ("stateful", "races", "parallel")  # the other suites test the reference (and the harness) directly


def suite_args(suite: Suite, system: str | None) -> tuple[str, ...]:
    if system is not None and suite.name in TAKES_THE_SYSTEM:
        return (*suite.args, "--only-system", str(system_of_spec(system)), "--without-catalogues")
    return suite.args
