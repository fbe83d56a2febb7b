"""How many callers of a race must get a definite answer before its verdict means anything.

The checker lets an indefinite call (`journal_unavailable`, a transport error, no answer) have applied or not,
so a history whose callers are all indefinite is linearizable whatever the implementation did: such a run
shows nothing about the contract. Every race run (the journal's race runner, the contest runner) and every
parallel program run therefore needs at least `RUN_SHARE_PERCENT` of its racing callers definite, and a race
scenario repeated in one session `SCENARIO_SHARE_PERCENT` over all its repeats (race_tests/conftest.py; the evidence
report recomputes both from the saved results). Below that the run fails for contention: the emulator's
lock contention left callers unanswered, which is not a contract verdict, never a pass and never a catch.

Not every unavailable answer is contention: the contract itself answers `journal_unavailable` to some calls
(a clock reading earlier than the stored one, or than the registration), and a commit the harness has the
server reject is unavailable by design. `contract_unavailable` names the indefinite calls whose answer is
the model's own wherever the checker's linearization could have placed them; they count with the definite
ones. Where that fails only because a racing write could come before or after the call, `explained_unavailable`
asks the checker for one order that explains the unavailable answers with every definite one (used only when
the share would otherwise fail: it costs a check). Both need the model, never the implementation's word, so an
implementation that answers unavailable to everything is not excused. Nor is a call whose answer the wire
fault proxy may have lost contention (`wire_faulted`: one of its `Call.wire_faults` reached the emulator and
lost or cut the answer, `WireFault.lost_answer`): under the fault mix a caller's every attempt may meet a
fault of its own (a lost read, then a lost commit answer), and its indefinite answer is the fault's, by
design. A fault that loses no answer excuses nothing: a delayed call, or one refused before the emulator
(a rejected BeginTransaction, which the client retries), still learns the true outcome, so its unavailable
answer is the implementation's or the emulator's. Nor does a fault that an older history file names by its
label alone: what it did is unknown there, and the share does not assume the excuse.

Integer arithmetic only (`definite * 100 >= percent * callers`): 899 of 1000 fails 90 %, 900 of 1000 passes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import attrs

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


def undecided_problem(undecided: Iterable[str]) -> str | None:
    """None when nothing is undecided, else the contention message for expectations a run did not meet while
    some caller went unanswered (its answers do not imply them: the unanswered call may not have applied)."""
    found = list(undecided)
    if not found:
        return None
    return (f"contention: {len(found)} expectation(s) not met, which the definite answers do not imply (a "
            f"caller went unanswered): {'; '.join(found)}; this is not a contract verdict")


def degree_judged(width: int, judged_width: int | None, judged_verdict: str | None,
                  judged_problems: Iterable[str] = ()) -> str:
    """How a contended run that was raced again at lower degrees reads: "contended at 24, judged at 8: ok",
    or "contended at 24, judged at no lower degree". Neither is a pass: the contract was judged, if at all,
    below the degree the scenario promises."""
    if judged_width is None:
        return f"contended at {width}, judged at no lower degree"
    found = "; ".join(judged_problems)
    return f"contended at {width}, judged at {judged_width}: {judged_verdict}" + (f" ({found})" if found else "")


def contract_unavailable(verdict: Any, initial_state: Any) -> frozenset[int]:
    """Ids of the indefinite calls of an ok `verdict` (a `fencecheck.checker.linearizability.Verdict`) whose answer is
    the model's: in every state of the found linearization where the call could sit (after each call that
    completed before it was invoked, before each call invoked after it completed), the model answers the
    plug-in's unavailable code and writes nothing. Empty for any other verdict."""
    if not verdict.ok:
        return frozenset()
    plugin = verdict.plugin
    excused = set()
    for partition in verdict.partitions:
        order = partition.order
        states = [plugin.restrict(initial_state, partition.key_hash)]
        for call in order:
            states.append(plugin.step(states[-1], call.op)[0])
        for call in partition.omitted:
            after = [i + 1 for i, placed in enumerate(order)
                     if placed.completed_at is not None and placed.completed_at < call.invoked_at]
            before = [i for i, placed in enumerate(order)
                      if call.completed_at is not None and placed.invoked_at > call.completed_at]
            places = range(max(after, default=0), min(before, default=len(order)) + 1)
            results = [plugin.step(states[place], call.op)[1] for place in places]
            if results and all(r.code == plugin.unavailable_code and not r.wrote for r in results):
                excused.add(call.id)
    return frozenset(excused)


def scenario_contention(runs: Iterable[tuple[str, int, int]]) -> dict[str, str]:
    """Scenario -> its contention message, for every scenario repeated at least twice whose runs (`(scenario,
    definite callers, callers)`, one per repeat) fall below `SCENARIO_SHARE_PERCENT` together. A scenario run
    once is judged by the run's own rule: over one run of 24 callers, 99 % would leave no caller to the 90 %."""
    totals: dict[str, list[int]] = {}
    repeats: Counter[str] = Counter()
    for scenario, definite, callers in runs:
        total = totals.setdefault(scenario, [0, 0])
        total[0] += definite
        total[1] += callers
        repeats[scenario] += 1
    found = {}
    for scenario, (definite, callers) in sorted(totals.items()):
        if repeats[scenario] < 2:
            continue  # one run is judged by RUN_SHARE_PERCENT alone: 99 % of 24 callers would be all of them
        what = f" over {repeats[scenario]} repeat{'s' if repeats[scenario] != 1 else ''}"
        problem = contention_problem(definite, callers, SCENARIO_SHARE_PERCENT, what=what)
        if problem is not None:
            found[scenario] = problem
    return found


def explained_unavailable(history: Any, verdict: Any, initial_state: Any, *, excused: frozenset[int],
                          budget: int, answered: Callable[[frozenset[int]], int] | None = None,
                          callers: int = 0) -> frozenset[int]:
    """Ids of the indefinite calls of an ok `verdict`, beyond `excused`, that answered the plug-in's unavailable
    code and that the contract explains at a consistent point: `history` with them made definite ("unavailable,
    nothing written") is still linearizable against the model (one `check` for them all; when that fails, the
    largest set the calls taken one at a time keep linearizable).

    `contract_unavailable` asks more, the model's unavailable wherever the found linearization could place the
    call, and a call whose clock is behind a racing write fails that whenever the write could come after it:
    the implementation answered what its order of the two made the contract answer, yet it counted as
    contention (one caller of 6 in a parallel program, every repetition). Here the checker must find one
    order that explains every definite answer and these together. An implementation answering unavailable to
    everything is still not excused: where no order makes the model answer unavailable, the check fails.

    `answered(ids)` and `callers` (as `excused_calls` has them): only calls that would answer a caller are
    tried, and the search stops once even every call still untried could not lift the share to
    RUN_SHARE_PERCENT. Each check of a history whose calls are mostly indefinite may spend the whole budget, so
    without this a never-available implementation cost one budget per call (minutes per race)."""
    from fencecheck.checker.history import Definite  # the checker imports the history; keep this module light
    from fencecheck.checker.linearizability import check

    if not verdict.ok:
        return frozenset()
    plugin = verdict.plugin
    candidates = [call for call in history.calls if call.id not in excused and not call.outcome.definite
                  and call.completed_at is not None and call.outcome.reason == plugin.unavailable_code]

    def explained(ids: set[int]) -> bool:
        calls = [attrs.evolve(call, outcome=Definite(plugin.unavailable_code)) if call.id in ids else call
                 for call in history.calls]
        return check(attrs.evolve(history, calls=calls), plugin=plugin, initial_state=initial_state,
                     budget=budget).ok

    if answered is not None:  # a retried caller's earlier call answers nobody: its last call decides
        base = answered(excused)
        candidates = [call for call in candidates if answered(excused | {call.id}) > base]

    def could_hold(ids: Iterable[int]) -> bool:
        return answered is None or share_holds(answered(excused | frozenset(ids)), callers, RUN_SHARE_PERCENT)

    every = {call.id for call in candidates}
    if not every or not could_hold(every):
        return frozenset()
    if explained(every):
        return frozenset(every)
    kept: set[int] = set()
    for index, call in enumerate(candidates):
        if not could_hold(kept | {c.id for c in candidates[index:]}):
            break
        if explained(kept | {call.id}):
            kept.add(call.id)
    return frozenset(kept)


def excused_calls(history: Any, verdict: Any, initial_state: Any, *, answered: Callable[[frozenset[int]], int],
                  callers: int, budget: int) -> frozenset[int]:
    """Ids of the indefinite calls that count with the definite ones: the model's own unavailable answers
    (`contract_unavailable`), the calls whose answer a wire fault lost (`wire_faulted`) and, only where the
    run's share would fail without them (it costs a check), those `explained_unavailable` finds. `answered(ids)`
    counts the callers answered when `ids` are excused, as the runner counts its callers (their retries inside)."""
    excused = contract_unavailable(verdict, initial_state) | wire_faulted(history)
    if share_holds(answered(excused), callers, RUN_SHARE_PERCENT):
        return excused
    return excused | explained_unavailable(history, verdict, initial_state, excused=excused, budget=budget,
                                           answered=answered, callers=callers)


def wire_faulted(history: Any) -> frozenset[int]:
    """Ids of the calls of `history` (a `fencecheck.checker.history.History`) whose answer a wire fault may have lost
    (`Call.lost_answer_to_wire`: a fail-response, drop-response or cut-stream of a forwarded request): excused
    from the definite share like the contract's own unavailable answers. A call only delayed or refused
    before the emulator is not: it lost no answer."""
    return frozenset(call.id for call in history.calls if call.lost_answer_to_wire)


__all__ = [
    "RUN_SHARE_PERCENT",
    "SCENARIO_SHARE_PERCENT",
    "contention_problem",
    "contract_unavailable",
    "degree_judged",
    "undecided_problem",
    "excused_calls",
    "explained_unavailable",
    "scenario_contention",
    "share_holds",
    "wire_faulted",
]

