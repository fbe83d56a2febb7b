"""How many callers of a race must get a definite answer before its verdict means anything.

The checker lets an indefinite call (`journal_unavailable`, a transport error, no answer) have applied or not,
so a history whose callers are all indefinite is linearizable whatever the implementation did: such a run
shows nothing about the contract. Every race run (the journal's race runner, the contest runner) and every
parallel program run therefore needs at least `RUN_SHARE_PERCENT` of its racing callers definite, and a race
scenario `SCENARIO_SHARE_PERCENT` over all its repeats of one session (race_tests/conftest.py; the evidence
report recomputes both from the saved results). Below that the run fails for contention: the emulator's
lock contention left callers unanswered, which is not a contract verdict, never a pass and never a catch.

Integer arithmetic only (`definite * 100 >= percent * callers`): 899 of 1000 fails 90 %, 900 of 1000 passes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

RUN_SHARE_PERCENT = 90  # of one race run's (or parallel program run's) racing callers
SCENARIO_SHARE_PERCENT = 99  # of a race scenario's racing callers over every repeat of one session


def share_holds(definite: int, callers: int, percent: int) -> bool:
    """At least `percent` % of `callers` are definite (no callers: nothing to judge, holds)."""
    return definite * 100 >= percent * callers


def _percent_text(definite: int, callers: int) -> str:
    """The share rounded down to a tenth (so 89.96 % never reads as 90 %), without a trailing `.0`."""
    tenths = definite * 1000 // callers
    return f"{tenths // 10}%" if tenths % 10 == 0 else f"{tenths // 10}.{tenths % 10}%"


def contention_problem(definite: int, callers: int, percent: int = RUN_SHARE_PERCENT, *, what: str = "") -> str | None:
    """None when the share holds, else the message that fails the run (or scenario) for contention.
    `what`: where the callers are counted, e.g. " over 10 repeats"."""
    if share_holds(definite, callers, percent):
        return None
    return (
        f"contention: only {definite} of {callers} callers{what} had a definite answer "
        f"({_percent_text(definite, callers)}, needs {percent}%): the emulator's contention left the others "
        f"unavailable; this is not a contract verdict"
    )


def scenario_contention(runs: Iterable[tuple[str, int, int]]) -> dict[str, str]:
    """Scenario -> its contention message, for every scenario whose runs (`(scenario, definite callers,
    callers)`, one per repeat) fall below `SCENARIO_SHARE_PERCENT` together."""
    totals: dict[str, list[int]] = {}
    repeats: Counter[str] = Counter()
    for scenario, definite, callers in runs:
        total = totals.setdefault(scenario, [0, 0])
        total[0] += definite
        total[1] += callers
        repeats[scenario] += 1
    found = {}
    for scenario, (definite, callers) in sorted(totals.items()):
        what = f" over {repeats[scenario]} repeat{'s' if repeats[scenario] != 1 else ''}"
        problem = contention_problem(definite, callers, SCENARIO_SHARE_PERCENT, what=what)
        if problem is not None:
            found[scenario] = problem
    return found


__all__ = [
    "RUN_SHARE_PERCENT",
    "SCENARIO_SHARE_PERCENT",
    "contention_problem",
    "scenario_contention",
    "share_holds",
]
